"""The charts of speculative decoding, prefix caching and energy, drawn from the grid alone.

``speedup_chart``: the speedup of speculation over plain decode against batch, one line per
acceptance, one panel per ``k`` and draft, the break-even batch marked. ``verify_roofline_chart``:
the verify steps of each ``k`` on the device's roofline beside plain decode.
``prefix_ttft_chart``: TTFT against hit rate, one line per KV tier, the recompute line and the
break-even tier bandwidth in the caption. ``energy_chart``: output tokens per joule against
tokens/s per user, the serving points of each device (beside the cost figure).

Each shows one model at the first device, tp, KV setting, weight dtype and context (or
prompt) of the grid, named in its caption, with a sentence computed from the data. Nothing
here recomputes a time; every figure is read from the tables' variables.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from sweeps.outputs import Kind, register

from .failures import built
from .layout import pick_layout
from .lines import LOG_LABELS
from .report import Figure
from .serving import SCENARIO_DIMS, panel_width
from .spec import chart_spec
from .theme import (
    device_scale,
    device_shapes,
    heading,
    number,
    series_scale,
    series_shapes,
    size_of,
)
from .ticks import log_ticks, thinned

TECHNIQUE_DIMS = frozenset({"spec_tokens", "prefix_hit_rate"})
"""Dimensions only the speculative and prefix analyses' variables have."""

ALSO = ("step_time_s", "arithmetic_intensity", "ridge_point", "peak_flops", "bandwidth", "ttft_s")
"""Variables of the decode and prefill analyses the charts read beside them."""
LAYOUT = ("max_batch", "parallel", "replica_devices")
"""What picks the parallel layout a chart shows (``charts.layout``), where the grid has it."""


def has_speculative(ds: xr.Dataset) -> bool:
    """Whether ``ds`` holds the speculative analysis."""
    return "speedup" in ds


def has_prefix(ds: xr.Dataset) -> bool:
    """Whether ``ds`` holds the prefix analysis."""
    return "prefix_ttft_s" in ds


SPECULATIVE_KIND = register(Kind(
    name="speculative",
    title="Speculative decoding: speedup and break-even batch",
    order=80,
    doc="per model, where the sweep has axes.spec_tokens: speedup against batch, the verify "
    "step on the roofline",
    applies=has_speculative,
))  # fmt: skip
PREFIX_KIND = register(Kind(
    name="prefix",
    title="Prefix caching: TTFT against hit rate and KV tier",
    order=90,
    doc="per model, where the sweep has axes.prefix_hit_rate: TTFT against hit rate per tier",
    applies=has_prefix,
))  # fmt: skip
SPECULATIVE, PREFIX = SPECULATIVE_KIND.name, PREFIX_KIND.name
TECHNIQUES = frozenset({SPECULATIVE, PREFIX})
"""The chart kinds of this module."""


def technique_part(one: xr.Dataset) -> xr.Dataset:
    """A copy of what the technique charts read of one slice, so the rest is not held."""
    names = [str(n) for n, v in one.data_vars.items() if TECHNIQUE_DIMS.intersection(v.dims)]
    names += [n for n in (*ALSO, *LAYOUT) if n in one]
    return one[names].copy(deep=True)


def _at(ds: xr.Dataset, model: str, length: str) -> dict[str, Any]:
    """The first device, tp, KV setting, weight dtype and ``length`` (context or prompt)."""
    return {
        "model": model,
        "hardware": ds["hardware"].values[0],
        "tp": ds["tp"].values[0],
        "kv_heads": ds["kv_heads"].values[0],
        "kv_dtype": ds["kv_dtype"].values[0],
        "weight_dtype": ds["weight_dtype"].values[0],
        length: ds[length].values[0],
    }


SLICE_DIMS = ("hardware", "tp", "kv_heads", "kv_dtype", "weight_dtype")
"""What ``_at`` picks beside the model and the length (context or prompt)."""
NEGLIGIBLE = 0.01
"""An effect below this share [1] is called negligible in the caption, with its size."""


def _largest(ds: xr.Dataset, model: str, length: str, effect: xr.DataArray) -> dict[str, Any]:
    """``_at``, but at the device, tp, KV setting, weight dtype and ``length`` where
    ``effect`` (over those dims, a share [1]) is largest: the slice that shows it best."""
    at = _at(ds, model, length)
    known = effect.fillna(-np.inf)
    if not np.isfinite(known.values).any():
        return at
    where = known.argmax(...)
    return {**at, **{str(dim): effect[dim].values[int(i)] for dim, i in where.items()}}


def _over_slices(values: xr.DataArray, length: str) -> xr.DataArray:
    """``values`` reduced (max) to the dims ``_largest`` picks: the slice dims and ``length``."""
    keep = (*SLICE_DIMS, length)
    rest = [d for d in values.dims if d not in keep]
    return values.max(rest) if rest else values


def prefix_effect(ds: xr.Dataset, model: str) -> xr.DataArray:
    """The share of TTFT caching the prefix saves at the grid's first batch [1]: recompute
    over the best hit rate and tier, per device, tp, KV setting, weight dtype and prompt."""
    sel = ds.sel(model=model).isel(batch=0)
    best = sel["prefix_ttft_s"].min(["prefix_hit_rate", "kv_tier"])
    return _over_slices(1 - best / sel["ttft_s"], "prompt")


def speculative_effect(ds: xr.Dataset, model: str) -> xr.DataArray:
    """The best speedup of speculation at the grid's first batch, less 1 [1], per device,
    tp, KV setting, weight dtype and context."""
    sel = ds.sel(model=model).isel(batch=0)
    best = sel["speedup"].where(sel["spec_tokens"] > 0)
    return _over_slices(best.max(["spec_tokens", "spec_acceptance", "spec_draft"]) - 1, "context")


def _prefix_at(ds: xr.Dataset, model: str) -> dict[str, Any]:
    return _largest(ds, model, "prompt", prefix_effect(ds, model))


def _speculative_at(ds: xr.Dataset, model: str) -> dict[str, Any]:
    return _largest(ds, model, "context", speculative_effect(ds, model))


def effect_sentence(effect: xr.DataArray, what: str, why: str) -> str:
    """Where the figure is drawn: at the slice of the largest ``effect``, with its size, or,
    where that is below ``NEGLIGIBLE``, that ``what`` is negligible on this grid and ``why``
    [-]."""
    values = effect.values[np.isfinite(effect.values)]
    if values.size == 0:
        return ""
    most = float(values.max())
    if most <= 0:
        return f"{what[0].upper()}{what[1:]} is nil on this grid, on every slice ({why})."
    if most < NEGLIGIBLE:
        return (
            f"{what[0].upper()}{what[1:]} is negligible on this grid: at most {most:.2%} "
            f"on any slice ({why})."
        )
    return f"Drawn at the slice where {what} is largest ({most:.1%})."


def _prefix_why(ds: xr.Dataset, model: str, at: dict[str, Any]) -> str:
    """Why caching the prefix saves little at ``at``: the prefill step bound by reading the
    weights (fewer new tokens take as long), else no tier reloading faster than recomputing
    [-]."""
    shown, _ = _view(ds, at)
    sel = shown.isel(batch=0)
    hit = sel["prefix_hit_rate"] > 0
    shortest = float(sel["hit_compute_time_s"].where(hit).min())
    if shortest >= (1 - NEGLIGIBLE) * float(sel["ttft_s"]):
        return "the prefill is bound by reading the weights, which fewer new tokens do not shorten"
    return "no tier reloads the cached prefix much faster than recomputing it"


def _view(ds: xr.Dataset, at: dict[str, Any]) -> tuple[xr.Dataset, str]:
    """``ds`` at ``at`` and, where the grid has the parallel axes, at one layout: the
    smallest replica where the model fits (``charts.layout.pick_layout``), and its label."""
    sel = ds.sel(at)
    return pick_layout(sel, []) if "ep" in sel.dims else (sel, "")


def _caption(at: dict[str, Any], length: str, layout: str = "") -> str:
    shown = layout or f"tp {at['tp']}"
    return (
        f"{at['model']} on {at['hardware']}, {shown}, {at['weight_dtype']} weights, "
        f"{at['kv_dtype']} cache, {length} {at[length]}."
    )


def speedup_sentence(ds: xr.Dataset, model: str) -> str:
    """Where speculation pays most at batch 1 and up to which batch, from the data [-]."""
    at = _speculative_at(ds, model)
    sel, _ = _view(ds, at)
    best = sel["speedup"].isel(batch=0).where(sel["spec_tokens"] > 0)
    if not np.isfinite(best.values).any():
        return "No speculative setting with k > 0 on this grid."
    where = best.argmax(...)
    pick = {dim: int(index) for dim, index in where.items()}
    point = best.isel(pick)
    even = sel["break_even_batch"].isel(pick).item()
    tail = (
        f"it stops paying at batch {int(even)}"
        if np.isfinite(even)
        else f"it still pays at batch {int(ds['batch'].values[-1])}, the largest on the axis"
    )
    return (
        f"Best at batch {int(ds['batch'].values[0])}: {point['spec_draft'].item()} with "
        f"k = {int(point['spec_tokens'])} at alpha = {float(point['spec_acceptance']):g}, "
        f"{number(float(point))}x faster than plain decode; {tail}."
    )


def speedup_chart(ds: xr.Dataset, model: str, width: str = "screen", **_: Any) -> Any:
    """Speedup against batch, a line per acceptance, a panel per ``k`` and draft; the rule at
    1 and each line's break-even batch marked."""
    at = _speculative_at(ds, model)
    drafted = [int(k) for k in ds["spec_tokens"].values if k > 0]
    shown, layout = _view(ds, at)
    sel = shown[["speedup", "break_even_batch"]].sel(spec_tokens=drafted)
    frame = sel.to_dataframe().reset_index()
    frame["panel"] = [
        f"k = {k}, {d}" for k, d in zip(frame.spec_tokens, frame.spec_draft, strict=True)
    ]
    size = size_of(width)
    batches = [int(b) for b in ds["batch"].values]
    x = alt.X(
        "batch:Q",
        scale=alt.Scale(type="log", domain=[batches[0], batches[-1]], nice=False),
        title="batch [sequence]",
    )
    columns = min(3, len(set(frame["panel"])))
    color = alt.Color("spec_acceptance:O", title="alpha")
    base = alt.Chart()
    lines = base.mark_line(point=True).encode(
        x=x,
        y=alt.Y("speedup:Q", title="speedup over plain decode [1]"),
        color=color,
        tooltip=["batch", "spec_acceptance", "speedup", "break_even_batch"],
    )
    one = base.mark_rule(strokeDash=[4, 4], color="#555").encode(y=alt.datum(1.0))
    marks = base.mark_rule(opacity=0.6).encode(x="break_even_batch:Q", color=color)
    why = "the drafts' verify step costs about what the tokens it accepts save"
    caption = [
        _caption(at, "context", layout),
        speedup_sentence(ds, model),
        effect_sentence(speculative_effect(ds, model), "the gain over plain decode", why),
    ]
    return (
        alt.layer(lines, one, marks, data=frame)  # one frame: the facet splits every layer
        .properties(width=panel_width(size, columns, 80), height=size.panel_height)
        .facet(facet=alt.Facet("panel:N", title=None), columns=3)
        .properties(title=heading("Speedup of speculative decoding against batch", caption, size))
    )


def verify_sentence(ds: xr.Dataset, model: str) -> str:
    """How far the verify step moves decode up the roofline, from the data [-]."""
    at = _speculative_at(ds, model)
    sel, _ = _view(ds, at)
    k = int(sel["spec_tokens"].max())
    batch = int(ds["batch"].values[0])
    plain = float(sel["arithmetic_intensity"].isel(batch=0))
    verify = sel["verify_arithmetic_intensity"].sel(spec_tokens=k).isel(batch=0)
    ridge = float(sel["ridge_point"])
    return (
        f"At batch {batch}, verifying k = {k} drafts raises the intensity from {number(plain)} "
        f"to {number(float(verify.max()))} FLOP/byte (the ridge is {number(ridge)})."
    )


def verify_roofline_chart(ds: xr.Dataset, model: str, width: str = "screen", **_: Any) -> Any:
    """The verify steps of each ``k`` (every batch) on the device's roofline, at the slice
    of the speedup figure."""
    at = _speculative_at(ds, model)
    shown, layout = _view(ds, at)
    sel = shown.isel(spec_acceptance=0, spec_draft=0)
    frame = sel[["verify_arithmetic_intensity", "verify_flops", "verify_time_s"]].to_dataframe()
    frame = frame.reset_index()
    frame["attained"] = frame.verify_flops / frame.verify_time_s
    peak, ridge = float(sel["peak_flops"]), float(sel["ridge_point"])
    lo = float(frame.verify_arithmetic_intensity.min()) / 2
    hi = max(float(frame.verify_arithmetic_intensity.max()) * 2, ridge * 4)
    roof = pd.DataFrame({"ai": [lo, ridge, hi], "roof": [peak * lo / ridge, peak, peak]})
    size = size_of(width)
    plot, tall = panel_width(size, 1, 120), int(size.panel_height * 1.5)
    spans = (lo, hi), (min(peak * lo / ridge, float(frame.attained.min())) / 1.5, peak * 1.5)
    x = alt.X(
        "ai:Q",
        title="arithmetic intensity [FLOP/byte]",
        scale=alt.Scale(type="log", domain=list(spans[0]), nice=False),
        axis=alt.Axis(
            labelExpr=LOG_LABELS,
            values=thinned(log_ticks(spans[0]), spans[0], plot, size.font, True),
        ),
    )
    y = alt.Y(
        "roof:Q",
        title="attainable [FLOP/s]",
        scale=alt.Scale(type="log", domain=list(spans[1]), nice=False),
        axis=alt.Axis(
            format="~s", values=thinned(log_ticks(spans[1]), spans[1], tall, size.font, False)
        ),
    )
    roofs = alt.Chart(roof).mark_line(color="#555").encode(x=x, y=y)
    batches = [int(frame.batch.min()), int(frame.batch.max())]  # two sizes: a short legend
    points = alt.Chart(frame).mark_point(filled=True).encode(
        x=alt.X("verify_arithmetic_intensity:Q"), y=alt.Y("attained:Q"),
        color=alt.Color("spec_tokens:O", title="k"),
        size=alt.Size("batch:Q", title="batch", legend=alt.Legend(values=batches)),
        tooltip=["spec_tokens", "batch", "verify_arithmetic_intensity", "attained"],
    )  # fmt: skip
    caption = [_caption(at, "context", layout), verify_sentence(ds, model)]
    return alt.layer(roofs, points).properties(
        title=heading("The verify step on the roofline", caption, size),
        width=plot,
        height=tall,
    )


def prefix_sentence(ds: xr.Dataset, model: str) -> str:
    """Which tiers beat recomputing the prompt, from the data [-]."""
    at = _prefix_at(ds, model)
    sel = _view(ds, at)[0].isel(batch=0)
    hit = sel["prefix_hit_rate"].where(sel["prefix_hit_rate"] > 0, drop=True)
    if hit.size == 0:
        return "No hit rate above 0 on this grid."
    h = float(hit.values[-1])
    even = float(sel["break_even_bandwidth"].sel(prefix_hit_rate=h))
    pays = sel["reload_pays"].sel(prefix_hit_rate=h)
    winners = [str(t) for t, p in zip(pays["kv_tier"].values, pays.values, strict=True) if p]
    named = ", ".join(winners) if winners else "none of the tiers"
    return (
        f"At a {h:.0%} hit rate a tier faster than {number(even / 1e9)} GB/s per device beats "
        f"recomputing the prompt: {named}."
    )


def prefix_ttft_chart(ds: xr.Dataset, model: str, width: str = "screen", **_: Any) -> Any:
    """TTFT against hit rate, a line per tier, the recompute time dashed; at the slice where
    caching saves the most (or saying that it saves next to nothing anywhere, and why)."""
    at = _prefix_at(ds, model)
    shown, layout = _view(ds, at)
    sel = shown.isel(batch=0)
    frame = sel[["prefix_ttft_s"]].to_dataframe().reset_index()
    tiers = [str(t) for t in ds["kv_tier"].values]  # lines cross: a hue and a marker each
    recompute = pd.DataFrame({"ttft_s": [float(sel["ttft_s"])]})
    x = alt.X("prefix_hit_rate:Q", title="prefix hit rate [%]", axis=alt.Axis(format="%"))
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=x, y=alt.Y("prefix_ttft_s:Q", title="TTFT bound [s]"),
        color=alt.Color("kv_tier:N", title="tier", scale=series_scale(tiers)),
        shape=alt.Shape("kv_tier:N", title="tier", scale=series_shapes(tiers)),
        tooltip=["kv_tier", "prefix_hit_rate", "prefix_ttft_s"],
    )  # fmt: skip
    rule = alt.Chart(recompute).mark_rule(strokeDash=[4, 4]).encode(y="ttft_s:Q")
    caption = [
        _caption(at, "prompt", layout) + " Dashed: recomputing the whole prompt.",
        prefix_sentence(ds, model),
        effect_sentence(
            prefix_effect(ds, model),
            "the share of TTFT that caching saves",
            _prefix_why(ds, model, at),
        ),
    ]
    size = size_of(width)
    return alt.layer(lines, rule).properties(
        title=heading("Time to first token against prefix hit rate", caption, size),
        width=panel_width(size, 1, 120),
        height=size.panel_height,
    )


BUILDERS: dict[str, tuple[str, Any, Any]] = {
    "speedup": (SPECULATIVE, has_speculative, speedup_chart),
    "verify-roofline": (SPECULATIVE, has_speculative, verify_roofline_chart),
    "prefix-ttft": (PREFIX, has_prefix, prefix_ttft_chart),
}
"""The technique figures by stem (``<kind>-<name>-<model>``): their kind, whether a grid has
what they need, and their builder ``(ds, model, width=...)``."""


def _joined(parts: list[xr.Dataset], model: str) -> xr.Dataset:
    """One model's parts (one per device) joined along the device dim."""
    mine = [part.sel(model=[model]) for part in parts if model in part["model"].values]
    if len(mine) == 1:
        return mine[0]
    local = [str(n) for n, v in mine[0].data_vars.items() if "hardware" in v.dims]
    joined = xr.concat([m[local] for m in mine], dim="hardware")
    rest = mine[0].drop_dims("hardware")
    return xr.merge([joined, rest], join="exact", compat="override", combine_attrs="override")


def technique_figures(parts: list[xr.Dataset], charts: Any, width: str) -> list[Figure]:
    """The technique figures ``charts`` asks for, per model of ``parts`` (slices of
    ``technique_part``, or whole grids), each with its spec."""
    wanted = [(n, b) for n, b in BUILDERS.items() if b[0] in set(charts)]
    models = list(dict.fromkeys(str(m) for part in parts for m in part["model"].values))
    figures = []
    for model in models if wanted else ():
        grid = _joined(parts, model)
        for name, (kind, has, builder) in wanted:
            if has(grid):
                stem = f"{kind}-{name}-{model}"
                figures.append(
                    built(
                        stem,
                        kind,
                        model,
                        None,
                        chart_spec,
                        builder,
                        width,
                        grid,
                        model,
                        width=width,
                    )
                )
    return figures


def on_front(frame: pd.DataFrame, x: str, y: str, by: str) -> pd.Series:
    """Whether each row of ``frame`` is on its ``by`` group's front: no row of the group has
    both a higher ``x`` and a higher ``y`` (nor one equal and the other higher) [bool]."""
    order = frame.sort_values([by, x, y], ascending=[True, False, False], kind="stable")
    best = order.groupby(by, observed=True)[y].cummax()
    before = best.groupby(order[by], observed=True).shift(1)
    kept = before.isna() | (order[y] > before)
    return kept.reindex(frame.index)


def energy_chart(
    ds: xr.Dataset, model: str, weight_dtype: Any = None, width: str = "screen"
) -> Any:
    """Output tokens per joule against tokens/s per user: continuous batching on each device
    at the first workload (a serving figure, beside the cost one). A device's line is its
    front (``on_front``: the tp and batch that no other of its points beats on both); its
    other points are drawn faint, unjoined."""
    at = {
        "model": model,
        "kv_heads": ds["kv_heads"].values[0],
        "kv_dtype": ds["kv_dtype"].values[0],
        "weight_dtype": weight_dtype or ds["weight_dtype"].values[0],
        "prompt_tokens": ds["prompt_tokens"].values[0],
        "output_tokens": ds["output_tokens"].values[0],
        "mode": "serial-prefill" if "serial-prefill" in ds["mode"].values else ds["mode"].values[0],
        **{d: ds[d].values[0] for d in SCENARIO_DIMS if d in ds.dims},
    }
    names = ["serving_output_tokens_per_joule", "tokens_per_s_per_user", "serving_feasible"]
    frame = ds[names].sel(at).to_dataframe().reset_index()
    frame = frame[frame.serving_feasible & np.isfinite(frame.serving_output_tokens_per_joule)]
    devices = [str(h) for h in ds["hardware"].values]
    best = frame.serving_output_tokens_per_joule.max() if len(frame) else float("nan")
    sentence = (
        f"At most {number(float(best))} output tokens per joule (serial-prefill, devices at "
        "board power: an estimate)."
        if np.isfinite(best)
        else "No device of the grid has a known board power: no energy figure."
    )
    frame = frame.assign(
        front=on_front(
            frame, "tokens_per_s_per_user", "serving_output_tokens_per_joule", "hardware"
        )
    )
    base = alt.Chart(frame).encode(
        x=alt.X("tokens_per_s_per_user:Q", scale=alt.Scale(type="log"),
                title="tokens/s per user [token/s]"),
        y=alt.Y("serving_output_tokens_per_joule:Q", title="output tokens per joule [token/J]"),
        color=alt.Color("hardware:N", title="device", scale=device_scale(devices)),
        shape=alt.Shape("hardware:N", title="device", scale=device_shapes(devices)),
        tooltip=["hardware", "tp", "batch", "serving_output_tokens_per_joule"],
    )  # fmt: skip
    rest = base.transform_filter("!datum.front").mark_point(opacity=0.3)
    front = base.transform_filter("datum.front").mark_line(point=True)
    caption = [
        f"{model}, {at['weight_dtype']} weights, {at['prompt_tokens']} prompt and "
        f"{at['output_tokens']} output tokens per request. Lines: each device's front over "
        "tp and batch (no other point of it both faster per user and more tokens per joule); "
        "faint: the rest.",
        sentence,
    ]
    size = size_of(width)
    return alt.layer(rest, front).properties(
        title=heading("Tokens per joule against speed per user", caption, size),
        width=panel_width(size, 1, 120),
        height=size.panel_height,
    )
