"""The sentences of the decode charts' captions, each computed from the selection it describes.

A selection (``data.Selection``) is one model, device, tp and weight dtype; its *settings* are
its contexts times its KV-head and KV-dtype settings, and a caption is drawn per selection. No
sentence claims "every context" or "every setting" unless it holds for every one: where
settings differ, the sentence counts them ("in 26 of 45 settings"). Every number is a variable
of the grid (``wall_fraction_of_ceiling``, ``ridge_batch``, ``ceiling``, ``ridge_point``,
``max_batch``), so a mixture of experts gets the MoE forms the grid computed
(``sweeps.physics.moe``) and the report's table says what the charts say.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .data import Selection, reached
from .theme import number, percent, unit

SETTING_DIMS = ("context", "kv_heads", "kv_dtype")
"""The dims whose every combination is one setting of a selection."""


def _settings(da: xr.DataArray) -> xr.DataArray:
    """``da`` over the settings of its selection (other dims, if any, reduced by max)."""
    extra = [d for d in da.dims if d not in SETTING_DIMS]
    return da.max(extra) if extra else da


def _kv_settings(sel: Selection) -> int:
    """KV-head times KV-dtype settings of ``sel`` [1]."""
    return int(sel.ds.sizes.get("kv_heads", 1) * sel.ds.sizes.get("kv_dtype", 1))


def _span(values: np.ndarray, fmt: object = number) -> str:
    lo, hi = fmt(float(values.min())), fmt(float(values.max()))  # type: ignore[operator]
    return lo if lo == hi else f"{lo} to {hi}"


def _contexts(contexts: list[int]) -> str:
    return ", ".join(f"{c:,}" for c in contexts)


def wall_text(sel: Selection) -> str:
    """The share of the ceiling at the memory wall (``wall_fraction_of_ceiling``), over the
    settings that fit: one value or a span, how many settings reach the threshold, and why
    (the weights' share of memory; a mixture of experts reads only the experts the wall's
    batch touches) [-]."""
    ds = sel.ds
    wall = _settings(ds["wall_fraction_of_ceiling"]).values.reshape(-1)
    fits = wall[np.isfinite(wall)]
    if fits.size == 0:
        return ""
    span = _span(fits, percent)
    counted = f" ({fits.size} of {wall.size} settings fit)" if fits.size < wall.size else ""
    hits = int(np.count_nonzero(reached(fits, True, sel.threshold)))
    goal = percent(sel.threshold)
    if hits == 0:
        reach = f", never {goal}"
    elif hits == fits.size:
        reach = f", {goal} or more in every setting that fits" if fits.size > 1 else ""
    else:
        reach = f"; {hits} of {fits.size} settings reach {goal}"
    cells = bool(reached(ds["fraction_of_ceiling"], ds["feasible"], sel.threshold).any())
    if hits and not cells:
        reach += " (between the sweep's batches, so no cell shows it)"
    moe = bool(np.any(np.atleast_1d(ds["experts"].values) > 1))
    if moe:
        why = "a mixture of experts reads only the experts the wall's batch touches"
    else:
        same = span.count(" to ") == 0 and ds.sizes.get("context", 1) > 1
        why = "the weights' share of memory sets it" + (", whatever the context" if same else "")
    return f"At the memory wall decode reaches {span} of the ceiling{counted}{reach}: {why}."


def crossing_text(sel: Selection) -> str:
    """Where the ceiling is below the device's ridge point, setting by setting: above in all,
    below in all, from which context on (one KV setting), or in how many settings [-]."""
    ds = sel.ds
    ceiling = _settings(ds["ceiling"])
    point = _settings(ds["ridge_point"])
    below = (ceiling < point).transpose("context", ...)
    contexts = [int(c) for c in ds["context"].values]
    order = np.argsort(contexts)
    by_context = below.values.reshape(len(contexts), -1)[order]
    contexts = [contexts[i] for i in order]
    shown = float(np.max(point.values))
    ridge = f"the ridge point ({number(shown)} {unit('ceiling')})"
    kv = _kv_settings(sel)
    every = "every context" + (" and KV setting" if kv > 1 else "")
    values = ceiling.transpose("context", ...).values.reshape(len(contexts), -1)[order]
    listed = ", ".join(f"{number(v)} at {c:,}" for v, c in zip(values[:, 0], contexts, strict=True))
    ceilings = f"The ceiling ({listed} tokens)" if kv == 1 and len(contexts) <= 4 else "The ceiling"
    n, m = int(by_context.sum()), by_context.size
    if n == 0:
        return f"{ceilings} stays above {ridge} at {every}."
    # where attention runs at another peak than the weights' GEMMs (mixed formats), decode can
    # turn compute-bound (a finite ``ridge_batch``) with its ceiling below the ridge point
    turns = int((below & _settings(ds["ridge_batch"]).notnull()).sum())
    but = (
        f" (attention timed at its own peak, {turns} of these {n} settings turn compute-bound "
        "all the same)"
        if turns
        else ""
    )
    if n == m:
        return f"{ceilings} is below {ridge} at {every}: decode never turns compute-bound{but}."
    all_below: np.ndarray = np.asarray(by_context.all(axis=1))
    suffix = bool(all_below.any()) and bool(all_below[int(np.argmax(all_below)) :].all())
    first = contexts[int(np.argmax(all_below))] if suffix else None
    if kv == 1:
        if suffix and int(all_below.sum()) == n:
            return (
                f"{ceilings} drops below {ridge} from {first:,} tokens on: decode stays "
                f"memory-bound there at any batch{but}."
            )
        at = _contexts([c for c, b in zip(contexts, all_below, strict=True) if b])
        return f"{ceilings} is below {ridge} at {at} tokens: decode stays memory-bound there{but}."
    tail = f"; in every KV setting from {first:,} tokens on" if suffix else ""
    return (
        f"{ceilings} is below {ridge} in {n} of {m} settings (context x KV heads x KV dtype): "
        f"decode stays memory-bound there at any batch{tail}{but}."
    )


def ridge_text(sel: Selection) -> str:
    """Where decode turns compute-bound (``ridge_batch``): its span, the settings where it
    never does (a null ``ridge_batch``; ``crossing_text`` counts the ceiling below the ridge point,
    and those of its settings that turn compute-bound all the same) and
    those where it does only beyond the memory wall, so no bar is drawn; '' where it never
    does anywhere [-]."""
    ridge = _settings(sel.ds["ridge_batch"]).values.reshape(-1)
    wall = _settings(sel.ds["max_batch"]).values.reshape(-1).astype(float)
    found = np.isfinite(ridge)
    if not found.any():
        return ""
    never = int(ridge.size - found.sum())
    beyond = int(np.count_nonzero(found & (ridge > wall)))
    tail = f"; never for {never} of {ridge.size} settings" if never else ""
    if beyond:
        tail += f"; beyond the memory wall for {beyond} of {ridge.size}, so no bar there"
    return (
        f"Black bar: the first compute-bound batch that fits (ridge batch "
        f"{_span(ridge[found])}{tail})."
    )
