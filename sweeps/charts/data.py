"""From the grid to what a chart draws: facets, one model and device, thinned, flattened.

No physics here: every number is a variable of the Dataset; this module only chooses,
selects, thins (above ``max_cells``) and flattens into a tidy Polars frame.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from sweeps.charts.layout import pick_layout
from sweeps.errors import ConfigError
from sweeps.grid.variables import BOTTLENECK_FLAGS

from .theme import DOES_NOT_FIT, SCREEN, Size, size_of

DEFAULT_MAX_CELLS = 4500
KV_FACETS = ("kv_heads", "kv_dtype")
"""Facet dimensions of the decode charts: columns, rows."""
PICKS = ("smallest-fit", "first")
"""How a chart chooses its tp and weight dtype (``[outputs.figures] pick``)."""


# --- the one rule of "reached" ------------------------------------------------------------------


def percent_digits(threshold: float) -> int:
    """Decimals of a percentage that write ``threshold`` exactly: 0.9 → 0, 0.905 → 1 [-]."""
    return next((d for d in range(4) if abs(round(threshold * 100, d) - threshold * 100) < 1e-9), 4)


def shown_percent(fraction: Any, threshold: float) -> Any:
    """``fraction`` [1] as the percentage a chart writes [%]: rounded *down* to the decimals of
    ``threshold``, so that a cell reads "90%" exactly when it reaches 90 %."""
    scale = 10 ** percent_digits(threshold)
    return np.floor(fraction * (100 * scale) + 1e-6) / scale


def reached(fraction: Any, feasible: Any, threshold: float) -> Any:
    """The one rule of "reached": the cell fits and its written percentage is at least
    ``threshold``'s. Numpy or xarray, elementwise; cell label, outline, legend, caption and the
    report's summary all use it."""
    return feasible & (shown_percent(fraction, threshold) >= round(threshold * 100, 4))


def percent_labels(fraction: np.ndarray, threshold: float) -> list[str | None]:
    """Cell labels: ``shown_percent`` with a % sign, ``None`` where NaN [-]."""
    digits = percent_digits(threshold)
    shown = shown_percent(np.asarray(fraction, dtype=float), threshold)
    return [None if np.isnan(v) else f"{v:.{digits}f}%" for v in shown]


def first_reached_batch(ds: xr.Dataset, threshold: float) -> xr.DataArray:
    """The smallest batch of the grid whose cell is ``reached``, NaN where none is [sequence].

    On the variables (named dims, no coordinates): a DataArray's alignment and coordinate
    merging cost more than the arithmetic on a model-and-device slice, of which a report has
    hundreds. The result carries the index coordinates of its dims.
    """
    hit = reached(ds["fraction_of_ceiling"].variable, ds["feasible"].variable, threshold)
    batch = ds["batch"].variable.astype(float)
    first = batch.where(hit).min("batch")  # NaN where no batch reaches: skipna
    return xr.DataArray(first, coords={d: ds[d].variable for d in first.dims})


# --- which tp and weight dtype a chart shows ----------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """The tp and weight dtype a chart of one model and device shows, and why.

    ``caption``: the line saying so ('' when the grid has one tp and one weight dtype);
    ``reason``: why nothing is drawn ('' when the model fits there).
    """

    tp: int
    weight_dtype: str
    caption: str
    reason: str

    @property
    def fits(self) -> bool:
        """Whether any cell of the chart fits in memory."""
        return not self.reason


def _labels(ds: xr.Dataset, dim: str) -> list[Any]:
    return [v.item() if hasattr(v, "item") else v for v in ds[dim].values]


def _check(ds: xr.Dataset, dim: str, value: object) -> None:
    allowed = _labels(ds, dim)
    if value not in allowed:
        msg = f"charts: {dim} {value!r} is not in the grid; allowed: {allowed}"
        raise ConfigError(msg)


def join(values: Sequence[object]) -> str:
    """``values`` written as a comma-separated list [-]."""
    return ", ".join(str(v) for v in values)


def choose(
    ds: xr.Dataset,
    model: str,
    hardware: str,
    *,
    tp: int | None = None,
    weight_dtype: str | None = None,
    pick: str = "smallest-fit",
) -> Choice:
    """The tp and weight dtype to draw ``model`` on ``hardware`` at.

    ``tp`` / ``weight_dtype`` fix one; the other is picked by ``pick``: ``"smallest-fit"``
    (the smallest tp, then the first weight dtype, at which the model fits: max batch >= 1 at
    some context and KV setting) or ``"first"`` (the grid's first).
    """
    if pick not in PICKS:
        msg = f"charts: pick {pick!r} is unknown; allowed: {list(PICKS)}"
        raise ConfigError(msg)
    for dim, value in (("tp", tp), ("weight_dtype", weight_dtype)):
        if value is not None:
            _check(ds, dim, value)
    all_tp, all_dtypes = sorted(_labels(ds, "tp")), _labels(ds, "weight_dtype")
    tps = [tp] if tp is not None else all_tp
    dtypes = [weight_dtype] if weight_dtype is not None else all_dtypes
    if pick == "first":
        tps = [tp] if tp is not None else _labels(ds, "tp")[:1]
        dtypes = dtypes[:1]
    one = ds["max_batch"].sel(model=model, hardware=hardware)
    fits = (one >= 1).any([d for d in one.dims if d not in ("tp", "weight_dtype")])
    device = str(ds["hardware_name"].sel(hardware=hardware).item())
    tried = [(t, d) for t in tps for d in dtypes]
    found = next(((t, d) for t, d in tried if bool(fits.sel(tp=t, weight_dtype=d))), None)
    if found is None:
        where = (
            f"tp {join(tps)} with {join(dtypes)} weights"
            if len(tried) == 1
            else f"any tp ({join(tps)}) and weight dtype ({join(dtypes)}) drawn"
        )
        return Choice(tps[0], str(dtypes[0]), "", f"{model} does not fit on {device} at {where}")
    chosen_tp, chosen_dtype = int(found[0]), str(found[1])
    many = len(all_tp) > 1 or len(all_dtypes) > 1
    if not many:
        return Choice(chosen_tp, chosen_dtype, "", "")
    if pick == "first" or len(tried) == 1:
        how = "as set in [outputs.figures]"
    else:
        how = f"the smallest tp, then weight dtype, at which {model} fits on {device}"
        empty = [t for t in tps if t < chosen_tp and not bool(fits.sel(tp=t).any())]
        before = dtypes[: dtypes.index(found[1])]
        misses = [f"nothing fits at tp {join(empty)}"] if empty else []
        misses += [f"{join(before)} weights do not at tp {chosen_tp}"] if before else []
        how += f" ({'; '.join(misses)})" if misses else ""
    return Choice(
        chosen_tp,
        chosen_dtype,
        f"Drawn at tp {chosen_tp} with {chosen_dtype} weights: {how}; the Parquet files have "
        f"tp {join(all_tp)} and weights {join(all_dtypes)}.",
        "",
    )


@dataclass(frozen=True)
class Selection:
    """The part of the grid one chart shows: one model, one device, one tp and weight dtype.

    ``ds`` keeps the other dimensions (batch, context, prompt, kv_heads, kv_dtype); ``notes``
    are caption lines saying what was chosen or left out.
    """

    ds: xr.Dataset
    model: str
    hardware: str
    choice: Choice
    max_cells: int
    size: Size = SCREEN
    notes: list[str] = field(default_factory=list)
    layout: str = ""
    """The replica's layout shown (``tp1 ep8+dp``) where the grid has the parallel axes."""

    @property
    def tp(self) -> int:
        """Tensor-parallel degree shown [device]."""
        return self.choice.tp

    @property
    def weight_dtype(self) -> str:
        """Weight dtype shown [-]."""
        return self.choice.weight_dtype

    @property
    def device_name(self) -> str:
        """Display name of the device [-]."""
        return str(np.atleast_1d(self.ds["hardware_name"].values)[0])

    @property
    def threshold(self) -> float:
        """``ceiling_fraction`` of the sweep: what "reached" means [1]."""
        return float(self.ds.attrs.get("ceiling_fraction", 0.9))

    def headline(self, what: str) -> str:
        """Chart title naming model, device, dtypes and tp [-]."""
        kv = "/".join(str(v) for v in self.ds["kv_dtype"].values)
        return (
            f"{self.model} on {self.device_name}: {what} "
            f"(weights {self.weight_dtype}, KV {kv}, {self.layout or f'tp {self.tp}'})"
        )


def _first(ds: xr.Dataset, dim: str, value: str | None, notes: list[str]) -> str:
    labels = [str(v) for v in _labels(ds, dim)]
    if value is None:
        if len(labels) > 1:
            notes.append(f"{dim} {labels[0]} shown (the grid has {dim} {join(labels)})")
        return labels[0]
    _check(ds, dim, value)
    return value


def altair_row_limit() -> int:
    """Altair's current ``max_rows`` (5000 unless the user changed it) [row]."""
    limit = alt.data_transformers.options.get("max_rows", 5000)
    return int(limit) if limit else 5000


def select(
    ds: xr.Dataset,
    model: str | None = None,
    hardware: str | None = None,
    *,
    tp: int | None = None,
    weight_dtype: str | None = None,
    pick: str = "smallest-fit",
    max_cells: int | None = None,
    width: str | Size | None = None,
) -> Selection:
    """Select one model and device (``None``: the first, said in the notes when there were
    several) and the tp and weight dtype ``choose`` gives.

    ``max_cells`` [cell] defaults to ``ds.attrs['max_chart_cells']`` or 4500 and is capped by
    Altair's own row limit, which is never disabled. ``width``: a ``theme.SIZES`` name.
    """
    notes: list[str] = []
    chosen_model = _first(ds, "model", model, notes)
    device = _first(ds, "hardware", hardware, notes)
    choice = choose(ds, chosen_model, device, tp=tp, weight_dtype=weight_dtype, pick=pick)
    notes += [choice.caption] if choice.caption else []
    limit = int(max_cells or ds.attrs.get("max_chart_cells", DEFAULT_MAX_CELLS))
    shown = ds.sel(
        model=chosen_model, hardware=device, tp=choice.tp, weight_dtype=choice.weight_dtype
    )
    shown, layout = pick_layout(shown, notes)
    return Selection(
        ds=shown,
        layout=layout,
        model=chosen_model,
        hardware=device,
        choice=choice,
        max_cells=min(limit, altair_row_limit()),
        size=size_of(width),
        notes=notes,
    )


# --- thinning and flattening --------------------------------------------------------------------


def spaced(values: np.ndarray, keep: int) -> np.ndarray:
    """Indices of about ``keep`` of the sorted ``values``, evenly spaced in log(value) where all
    are positive (so a log axis keeps its knee region), else linearly; ends always kept."""
    v = np.asarray(values, dtype=float)
    if keep >= v.size:
        return np.arange(v.size)
    scale = np.log(v) if v.min() > 0 else v
    targets = np.linspace(scale[0], scale[-1], max(keep, 2))
    right = np.clip(np.searchsorted(scale, targets), 1, v.size - 1)
    nearer_left = targets - scale[right - 1] < scale[right] - targets
    return np.unique(np.where(nearer_left, right - 1, right))


def thin(
    ds: xr.Dataset, dims: Sequence[str], thinnable: Sequence[str], limit: int
) -> tuple[xr.Dataset, str]:
    """Keep log-spaced values of ``thinnable`` dims (``spaced``) until the product of ``dims``
    sizes is at most ``limit`` [cell]; returns the note to show, or ''."""
    sizes = {d: ds.sizes[d] for d in dims}
    total = math.prod(sizes.values())
    index = {d: np.arange(sizes[d]) for d in thinnable}

    def count() -> int:
        return math.prod(len(index[d]) if d in index else sizes[d] for d in dims)

    while count() > limit and any(len(index[d]) > 2 for d in thinnable):
        widest = max(thinnable, key=lambda d: len(index[d]))
        keep = max(2, min(len(index[widest]) - 1, int(len(index[widest]) * 0.9)))
        index[widest] = spaced(ds[widest].values, keep)
    if count() == total:
        return ds, ""
    kept = ds.isel({d: index[d] for d in thinnable})
    steps = ", ".join(
        f"{len(index[d])} of {sizes[d]} {d} values" for d in thinnable if len(index[d]) < sizes[d]
    )
    note = (
        f"Thinned to {count():,} of {total:,} cells ({steps}, log-spaced); "
        "the Parquet files have all."
    )
    return kept, note


def kv_heads_labels(ds: xr.Dataset) -> list[str]:
    """Facet labels of the KV-head settings of one model: ``native (8)``, ``4``, ... [-]."""
    counts = np.atleast_1d(ds["kv_heads_count"].values)
    return [
        f"{label} ({count})" if label == "native" else str(label)
        for label, count in zip(ds["kv_heads"].values, counts, strict=True)
    ]


def kv_facets(
    chart: Any, sel: Selection, rows: str = "", spacing: int = 12, columns: int = 0
) -> Any:
    """``chart`` once per KV setting: a column per KV-head setting, a row per KV dtype; a
    setting the grid has one value of is no facet (the title names it). ``columns`` fewer than
    the KV-head settings (not fitting side by side): one facet over every setting, wrapped [-]."""
    from .theme import title

    dims = [d for d in KV_FACETS if sel.ds.sizes.get(d, 1) > 1]
    if 0 < columns < sel.ds.sizes.get("kv_heads", 1):
        kv = {"kv_heads": kv_heads_labels(sel.ds)}
        order = itertools.product(*[kv.get(d) or [str(v) for v in sel.ds[d].values] for d in dims])
        setting = alt.Facet(
            "kv:N", title=", ".join(title(d) for d in dims), sort=[", ".join(o) for o in order]
        )
        return (
            chart.facet(facet=setting, columns=columns, spacing=spacing)
            .transform_calculate(kv=" + ', ' + ".join(f"datum.{d}" for d in dims))
            .resolve_scale(x="shared", y="shared")
        )
    facets: dict[str, Any] = {}
    if sel.ds.sizes.get("kv_heads", 1) > 1:
        facets["column"] = alt.Column(
            "kv_heads:N", title=title("kv_heads"), sort=kv_heads_labels(sel.ds)
        )
    if sel.ds.sizes.get("kv_dtype", 1) > 1:
        facets["row"] = alt.Row(
            "kv_dtype:N",
            title=rows or title("kv_dtype"),
            header=alt.Header(labelAngle=0, labelAlign="left"),
            sort=[str(v) for v in sel.ds["kv_dtype"].values],
        )
    if not facets:
        return chart
    return chart.facet(**facets, spacing=spacing).resolve_scale(x="shared", y="shared")


def tidy(ds: xr.Dataset, names: Sequence[str], dims: Sequence[str]) -> pl.DataFrame:
    """One row per point of ``dims``: axis columns then ``names``, broadcast from ``ds``.

    ``kv_heads`` holds its facet label; ``bottleneck`` variables their flag meaning.
    """
    table = xr.Dataset({n: ds[n] for n in names}).drop_vars(
        [c for c in ds.coords if c not in dims], errors="ignore"
    )
    arrays = xr.broadcast(*[table[n] for n in names])
    shape = tuple(ds.sizes[d] for d in dims)
    columns: dict[str, object] = {}
    for axis, dim in enumerate(dims):
        labels = kv_heads_labels(ds) if dim == "kv_heads" else list(ds[dim].values)
        codes = np.broadcast_to(
            np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(dims))]),
            shape,
        ).reshape(-1)
        values = np.asarray(labels)[codes]
        columns[dim] = values.astype(str).tolist() if values.dtype.kind in "OU" else values
    for name, da in zip(names, arrays, strict=True):
        values = da.transpose(*dims).values.reshape(-1)
        if name.endswith("bottleneck"):
            values = np.asarray(BOTTLENECK_FLAGS, dtype=object)[values.astype(np.intp)]
        columns[name] = values
    return pl.DataFrame(columns).with_columns(pl.col(pl.Float64).fill_nan(None))


def status(frame: pl.DataFrame, feasible: str, category: str) -> pl.DataFrame:
    """Add ``status``: ``category``'s value where ``feasible``, else "does not fit"."""
    return frame.with_columns(
        status=pl.when(pl.col(feasible))
        .then(pl.col(category).cast(pl.String))
        .otherwise(pl.lit(DOES_NOT_FIT))
    )
