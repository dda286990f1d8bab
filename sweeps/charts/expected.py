"""Expected against the bound (``axes.engine``): how far the measured kernels are from the roof.

``share_chart``: the share of the roofline the measured kernels reach (``roofline_share``, the
bound over the expected step) over batch and context, a panel per engine, a row per KV dtype;
cells beyond the memory wall grey, cells without data pale, cells whose expected step is
below its bound outlined. ``kernels_chart``: where one step goes, each operation's expected
time stacked beside its bound, at batch 1, at the grid's batch nearest the knee and at the
last batch that fits (the memory wall), a panel per engine and context.

Both are drawn per model and device, and only where the grid has an engine (``has_engine``):
a run without one draws neither. No physics here: every number is a variable of the grid
(expected.parquet, kernels.parquet).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from sweeps.outputs import Kind, register

from .data import Selection, join, percent_labels, select, spaced, status, thin, tidy
from .heatmaps import LABEL_MIN_CELL, MOST_ROWS, symbol_orient
from .theme import (
    DOES_NOT_FIT,
    HALO,
    INK,
    SEQUENTIAL,
    fit_title,
    heading,
    percent,
    themed,
    title,
    tooltip,
)

NO_DATA = "no data"
"""The cells and bars the database has nothing for (the reason is in the caption)."""
NO_DATA_FILL = "#f2f2f2"
BELOW = "below its bound"
"""The outline of a cell whose expected step beats its bound (flagged, never clamped)."""
SHARE_DIMS = ("batch", "context", "engine", "kv_dtype")
SHARE_VARIABLES = (
    "roofline_share",
    "step_time_s",
    "expected_step_time_s",
    "expected_basis",
    "below_bound",
    "feasible",
)
SHARE_TITLE = "share of the roofline reached [%]"
"""The colour's title: ``roofline_share`` [1] written as a percentage."""
MOST_CONTEXTS = 3
"""Contexts the breakdown draws at most (log-spaced, ends kept): a row of panels each."""
TIMES = ("expected", "bound")
OPERATION_COLOURS = (
    "#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b",
    "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac",
    "#17becf", "#79706e",
)  # fmt: skip
"""Vega's tableau10 and two more (the dispatch's and the hand-off's), one an operation in the
order of kernels.parquet's ``operation`` axis: each its own colour."""
TIME_TITLE = "time in the step [ms]"
GEMMS = ("qkv", "o_proj", "ffn_up", "ffn_down", "router", "experts", "lm_head")
"""The operations read as GEMMs (``sweeps.studies.expected.step``)."""


def _fits(text: str, room: float, font: float) -> str | list[str] | None:
    """``text``, an axis title, broken before its unit where one line is too long for ``room``
    [px] (``theme.fit_title``); ``None`` where even its longest part is: the facet's header says
    it once instead of each narrow panel overprinting the next."""
    fitted = fit_title(text, room, font)
    longest = max([fitted] if isinstance(fitted, str) else fitted, key=len)
    return fitted if len(longest) * 0.62 * font <= room else None


def has_engine(ds: xr.Dataset) -> bool:
    """Whether ``ds`` holds the expected pass (``axes.engine`` set)."""
    return "roofline_share" in ds and "kernel_expected_s" in ds


def _first_kv(sel: Selection, dims: Sequence[str]) -> tuple[xr.Dataset, list[str]]:
    """``sel.ds`` at the first value of each of ``dims`` it has several of, and the notes."""
    ds, notes = sel.ds, []
    for dim in dims:
        if ds.sizes.get(dim, 1) > 1:
            values = [str(v) for v in ds[dim].values]
            notes.append(f"{title(dim)} {values[0]} shown (the grid has {join(values)})")
        ds = ds.isel({dim: 0}) if dim in ds.dims else ds
    return ds, notes


def _reasons(ds: xr.Dataset) -> list[str]:
    """Why cells have no expectation, one line per reason the grid gives [-]."""
    found = sorted({str(r) for r in np.unique(ds["expected_reason"].values) if str(r)})
    return [f"No measured data: {r}." for r in found]


# --- the share of the roofline ------------------------------------------------------------------


def _share_axes(ds: xr.Dataset, sel: Selection) -> tuple[xr.Dataset, str]:
    """``ds`` with at most the batches a panel row has room for and ``MOST_ROWS`` contexts,
    log-spaced, ends kept; the caption's note, or ''."""
    engines = ds.sizes["engine"]
    room = sel.size.width - sel.size.left - 12 * (engines - 1)
    most = {"batch": max(2, int(room // (engines * sel.size.cell[0]))), "context": MOST_ROWS}
    keep = {d: spaced(ds[d].values, n) for d, n in most.items() if ds.sizes[d] > n}
    if not keep:
        return ds, ""
    said = ", ".join(f"{len(i)} of {ds.sizes[d]:,} {d} values" for d, i in keep.items())
    return ds.isel(keep), f"Axes thinned to fit the figure ({said}, log-spaced)."


def share_cells(sel: Selection) -> tuple[pl.DataFrame, list[str]]:
    """Tidy cells of the share heatmap (thinned to ``sel.max_cells`` and the figure's width),
    ``status`` the share's cell, "does not fit" or ``NO_DATA``; the caption's notes."""
    ds, notes = _first_kv(sel, ("kv_heads",))
    ds, thinned = thin(ds, SHARE_DIMS, ("batch", "context"), sel.max_cells)
    ds, fitted = _share_axes(ds, sel)
    frame = tidy(ds, SHARE_VARIABLES, SHARE_DIMS)
    frame = frame.with_columns(pl.col("below_bound").cast(pl.Boolean))  # 1, 0, null as kept
    share = frame["roofline_share"].fill_null(np.nan).to_numpy()
    labels = percent_labels(share, 1.0)
    frame = frame.with_columns(
        label=pl.Series(labels, dtype=pl.String),
        shown=pl.Series(np.nan_to_num(share * 100), dtype=pl.Float64),
        data=pl.col("roofline_share").is_not_null(),
        category=pl.when(pl.col("roofline_share").is_null())
        .then(pl.lit(NO_DATA))
        .otherwise(pl.lit("share")),
    )
    notes += [line for line in (thinned, fitted) if line]
    return status(frame, "feasible", "category"), notes


def _share_sentence(frame: pl.DataFrame) -> list[str]:
    """The span and median of each engine's share over the cells that fit, and how many
    expected steps beat their bound [-]."""
    fits = frame.filter(pl.col("feasible") & pl.col("data"))
    said = []
    for engine in frame["engine"].unique(maintain_order=True):
        part = fits.filter(pl.col("engine") == engine)["roofline_share"].to_numpy()
        if part.size:
            lo, hi, mid = float(part.min()), float(part.max()), float(np.median(part))
            said.append(f"{engine} {percent(lo)} to {percent(hi)} (median {percent(mid)})")
    lines = [f"Where the model fits, the measured kernels reach {'; '.join(said)}."] if said else []
    below = int(fits["below_bound"].sum())
    if below:
        lines.append(f"{below} cells outlined: the expected step is below its bound.")
    return lines


def _share_layers(base: alt.Chart, sel: Selection, step: int) -> list[alt.Chart]:
    heat = (
        base.mark_rect(stroke="white", strokeWidth=0.5)
        .encode(
            color=alt.Color(
                "roofline_share:Q",
                title=SHARE_TITLE,
                scale=alt.Scale(scheme=SEQUENTIAL, domain=[0, 1], clamp=True),
                legend=alt.Legend(format=".0%", gradientLength=12 * sel.size.font),
            ),
        )
        .transform_filter("datum.feasible && datum.data")
    )
    grey = (
        base.mark_rect()
        .encode(
            fill=alt.Fill(
                "status:N",
                scale=alt.Scale(domain=[DOES_NOT_FIT, NO_DATA], range=["#c9c9c9", NO_DATA_FILL]),
                legend=alt.Legend(
                    title=None,
                    symbolType="square",
                    orient=symbol_orient(sel),
                    columns=1 if sel.size.width < 400 else 2,
                ),
            )
        )
        .transform_filter(f"datum.status == '{DOES_NOT_FIT}' || datum.status == '{NO_DATA}'")
    )
    outline = (
        base.mark_rect(fill=None, fillOpacity=0, strokeWidth=2)
        .encode(
            stroke=alt.Stroke(
                "outline:N",
                scale=alt.Scale(domain=[BELOW], range=[INK]),
                legend=alt.Legend(
                    title=None,
                    orient=symbol_orient(sel),
                    symbolType="square",
                    symbolFillColor=HALO,
                    symbolStrokeColor=INK,
                ),
            )
        )
        .transform_filter("datum.feasible && datum.below_bound")
        .transform_calculate(outline=repr(BELOW))
    )
    layers = [heat, grey, outline]
    if step >= LABEL_MIN_CELL:
        layers.append(
            base.mark_text()
            .encode(
                text=alt.Text("label:N"),
                color=alt.condition(alt.datum.shown > 55, alt.value(INK), alt.value("white")),
            )
            .transform_filter("datum.feasible && datum.data")
        )
    return layers


def _share_tooltips() -> list[alt.Tooltip]:
    return [
        tooltip("engine"),
        tooltip("batch"),
        tooltip("context"),
        tooltip("kv_dtype"),
        alt.Tooltip("roofline_share:Q", title=SHARE_TITLE, format=".1%"),
        tooltip("step_time_s", ".3~s"),
        tooltip("expected_step_time_s", ".3~s"),
        tooltip("expected_basis"),
        alt.Tooltip("status:N", title="status"),
    ]


def _cell_size(frame: pl.DataFrame, sel: Selection) -> tuple[int, int]:
    """Cell width and height [px] that fit a row of engine panels in the figure's width."""
    engines = max(1, frame["engine"].n_unique())
    batches = max(1, frame["batch"].n_unique())
    low, high = sel.size.cell
    legend = 150 if sel.size.legend == "right" else 0
    room = sel.size.width - sel.size.left - 12 * (engines - 1) - legend
    step = int(np.clip(room / (engines * batches), low, high))
    return step, max(step, low + 8)


@themed
def share_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> Any:
    """Heatmap of the share of the roofline the measured kernels reach [%] (``roofline_share``:
    the bound over the expected step), batch across, context down, a panel per engine (columns)
    and KV dtype (rows), at the first KV-head setting. Grey: beyond the memory wall; pale: no
    measured data (the reason in the caption); outlined: expected below its bound.
    ``options`` as ``heatmaps.ceiling_chart``.
    """
    sel = select(ds, model, hardware, **options)
    frame, notes = share_cells(sel)
    step, height = _cell_size(frame, sel)
    batches = [int(b) for b in frame["batch"].unique(maintain_order=True)]
    contexts = [int(c) for c in frame["context"].unique(maintain_order=True)]
    rows = sel.ds.sizes.get("kv_dtype", 1) > 1
    x_title = _fits(title("batch"), step * len(batches), sel.size.font + 1)
    base = (
        alt.Chart()
        .encode(
            x=alt.X(
                "batch:O",
                title=x_title,
                sort=batches,
                axis=alt.Axis(labelAngle=-45 if step < LABEL_MIN_CELL else 0, labelOverlap=True),
            ),
            y=alt.Y(
                "context:O",
                title=None if rows else title("context"),
                sort=contexts,
                axis=alt.Axis(format=",", labelOverlap=True),
            ),
            tooltip=_share_tooltips(),
        )
        .properties(width=alt.Step(step), height=alt.Step(height))
    )
    engines = [str(e) for e in sel.ds["engine"].values]
    across = "engine" if x_title else f"{title('batch')} by engine"
    facets: dict[str, Any] = {"column": alt.Column("engine:N", title=across, sort=engines)}
    if rows:  # the context's title in the row header: a short row would overprint it
        facets["row"] = alt.Row(
            "kv_dtype:N",
            title=f"{title('context')} by {title('kv_dtype')}",
            header=alt.Header(labelAngle=0, labelAlign="left"),
            sort=[str(v) for v in sel.ds["kv_dtype"].values],
        )
    chart = alt.layer(*_share_layers(base, sel, step), data=frame).facet(**facets, spacing=12)
    key = "Colour: the bound over the expected step (roofline_share) as a percentage."
    lines = [*_share_sentence(frame), key, *_reasons(sel.ds), *sel.notes, *notes]
    what = "share of the roofline the measured kernels reach"
    return chart.properties(title=heading(sel.headline(what), lines, sel.size))


# --- where the step goes ------------------------------------------------------------------------


def regime_batches(ds: xr.Dataset) -> np.ndarray:
    """Per context of ``ds`` (one KV setting): the index of the batch at batch 1 (the grid's
    first), at the knee (the fitting batch nearest ``knee_batch`` in log) and at the memory wall
    (the last that fits), shape (context, 3); -1 where nothing fits [-]."""
    batch = ds["batch"].values.astype(float)
    fits: np.ndarray = np.asarray(ds["feasible"].transpose("batch", "context").values)
    knee = np.broadcast_to(ds["knee_batch"].values, (ds.sizes["context"],)).astype(float)
    distance = np.abs(np.log(batch)[:, None] - np.log(np.maximum(knee, 1.0))[None, :])
    nearest = np.argmin(np.where(fits, distance, np.inf), axis=0)
    last = fits.shape[0] - 1 - np.argmax(fits[::-1], axis=0)
    out = np.stack([np.zeros_like(last), nearest, last], axis=1)
    some: np.ndarray = np.asarray(fits.any(axis=0))
    return np.where(some[:, None], out, -1)


def regimes(ds: xr.Dataset) -> tuple[str, str, str]:
    """The breakdown's batches in words: the grid's first ("batch 1"), the one nearest the knee
    (half the ceiling), the last that fits (the wall) [-]."""
    return f"batch {int(ds['batch'].values[0]):,}", "knee", "wall"


def kernel_rows(sel: Selection) -> tuple[pl.DataFrame, list[str]]:
    """One row per engine, context, regime, time (expected, bound) and operation [ms]: the
    breakdown's bars, at the first KV setting and at most ``MOST_CONTEXTS`` contexts; the
    notes of what was left out. Operations zero everywhere (a dense model's experts) are
    left out."""
    ds, notes = _first_kv(sel, ("kv_heads", "kv_dtype"))
    if ds.sizes["context"] > MOST_CONTEXTS:
        kept = spaced(ds["context"].values, MOST_CONTEXTS)
        shown = join([f"{int(c):,}" for c in ds["context"].values[kept]])
        notes.append(f"Contexts {shown} shown (of {ds.sizes['context']}, log-spaced).")
        ds = ds.isel(context=kept)
    index = regime_batches(ds)
    rows: list[dict[str, Any]] = []
    for c, context in enumerate(ds["context"].values):
        for r, regime in enumerate(regimes(ds)):
            if index[c, r] < 0:
                continue
            at = ds.isel(context=c, batch=int(index[c, r]))
            for which, name in zip(TIMES, ("kernel_expected_s", "kernel_bound_s"), strict=True):
                values = at[name].transpose("engine", "operation").values * 1e3
                for e, engine in enumerate(ds["engine"].values):
                    for o, operation in enumerate(ds["operation"].values):
                        rows.append(
                            {
                                "engine": str(engine),
                                "context": int(context),
                                "regime": regime,
                                "batch": int(at["batch"]),
                                "time": which,
                                "operation": str(operation),
                                "ms": float(values[e, o]),
                            }
                        )
    frame = pl.DataFrame(rows, schema=_ROWS).with_columns(pl.col("ms").fill_nan(None))
    used = frame.group_by("operation").agg(pl.col("ms").fill_null(0).abs().max() > 0)
    return frame.filter(pl.col("operation").is_in(used.filter("ms")["operation"].to_list())), notes


_ROWS = {
    "engine": pl.String,
    "context": pl.Int64,
    "regime": pl.String,
    "batch": pl.Int64,
    "time": pl.String,
    "operation": pl.String,
    "ms": pl.Float64,
}


def _kernel_sentence(frame: pl.DataFrame) -> list[str]:
    """Batches of each regime per context, and how close the GEMMs and attention get to
    their roof at batch 1 and at the wall, for the first engine and context [-]."""
    if frame.is_empty():
        return []
    batches = frame.group_by("context", "regime", maintain_order=True).agg(pl.col("batch").first())
    said = "; ".join(
        f"{int(c):,} tokens knee {_at(batches, c, 'knee')}, wall {_at(batches, c, 'wall')}"
        for c in batches["context"].unique(maintain_order=True)
    )
    lines = [f"Batches drawn at {said}."]
    engine, context = frame["engine"][0], int(frame["context"][0])
    first = frame.filter((pl.col("engine") == engine) & (pl.col("context") == context))
    start = str(first["regime"][0])  # the grid's first batch
    g0, g1, a0, a1 = (
        _group_share(first, regime, names)
        for names in (GEMMS, ("attention",))
        for regime in (start, "wall")
    )
    if g0 is not None and g1 is not None and a0 is not None and a1 is not None:
        lines.append(
            f"{engine} at {context:,} tokens: the GEMMs reach {percent(g0)} of their roof at "
            f"{start} and {percent(g1)} at the wall, attention {percent(a0)} and {percent(a1)}."
        )
    return lines


def _at(batches: pl.DataFrame, context: int, regime: str) -> str:
    found = batches.filter((pl.col("context") == context) & (pl.col("regime") == regime))
    return f"{int(found['batch'][0]):,}" if found.height else "none"


def _group_share(frame: pl.DataFrame, regime: str, names: Sequence[str]) -> float | None:
    """Bound over expected time of ``names`` summed at ``regime`` [1], or None (no data)."""
    part = frame.filter((pl.col("regime") == regime) & pl.col("operation").is_in(list(names)))
    expected = part.filter(pl.col("time") == "expected")["ms"]
    bound = part.filter(pl.col("time") == "bound")["ms"]
    if expected.null_count() or bound.null_count() or not expected.sum():
        return None
    return float(bound.sum()) / float(expected.sum())


def _kernel_colours(sel: Selection, frame: pl.DataFrame) -> alt.Color:
    """The operations drawn, each in its own colour, the same in every figure."""
    every = [str(o) for o in sel.ds["operation"].values]
    operations = [o for o in every if o in set(frame["operation"])]
    colours = [OPERATION_COLOURS[every.index(o) % len(OPERATION_COLOURS)] for o in operations]
    return alt.Color(
        "operation:N",
        title="operation",
        sort=operations,
        scale=alt.Scale(domain=operations, range=colours),
        legend=alt.Legend(
            orient=symbol_orient(sel), columns=1 if sel.size.legend == "right" else 3
        ),
    )


KERNEL_TOOLTIPS = (
    alt.Tooltip("engine:N", title="engine"),
    alt.Tooltip("context:Q", title=title("context"), format=","),
    alt.Tooltip("regime:N", title="at"),
    alt.Tooltip("batch:Q", title=title("batch"), format=","),
    alt.Tooltip("time:N", title="time"),
    alt.Tooltip("operation:N", title="operation"),
    alt.Tooltip("sum(ms):Q", title="time [ms]", format=".3~f"),
)


@themed
def kernels_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> Any:
    """Where one decode step goes [ms]: each operation's expected time from the measured
    kernels (solid) stacked beside its roofline bound (faded), at batch 1, at the grid's batch
    nearest the knee and at the memory wall (the last batch that fits), a panel per engine
    (columns) and context (rows), at the first KV setting. ``options`` as
    ``heatmaps.ceiling_chart``.
    """
    sel = select(ds, model, hardware, **options)
    frame, notes = kernel_rows(sel)
    screen = sel.size.name == "screen"
    engines = [str(e) for e in sel.ds["engine"].values]
    # left of the panels: the context's header and the regimes' labels; right: the legends
    room = sel.size.width - (160 + 140 if screen else 125) - 10 * (len(engines) - 1)
    panel = max(36, int(room // len(engines)))
    x_title = _fits(TIME_TITLE, panel, sel.size.font + 1)
    order = [str(o) for o in sel.ds["operation"].values]
    chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X(
                "sum(ms):Q",
                title=x_title,
                axis=alt.Axis(tickCount=6 if screen else 2, labelOverlap=True),
            ),
            y=alt.Y("regime:N", title=None, sort=list(regimes(sel.ds))),
            yOffset=alt.YOffset("time:N", sort=list(TIMES)),
            color=_kernel_colours(sel, frame),
            opacity=alt.Opacity(
                "time:N",
                title=None,
                sort=list(TIMES),
                scale=alt.Scale(domain=list(TIMES), range=[1.0, 0.4]),
                legend=alt.Legend(orient=symbol_orient(sel)) if screen else None,
            ),
            order=alt.Order("operation_order:Q"),
            tooltip=list(KERNEL_TOOLTIPS),
        )
        .transform_calculate(operation_order=f"indexof({order!r}, datum.operation)")
        .properties(width=panel, height=alt.Step(1.4 * sel.size.font))
        .facet(
            column=alt.Column(
                "engine:N", title="engine" if x_title else f"{TIME_TITLE} by engine", sort=engines
            ),
            row=alt.Row(
                "context:O",
                title=title("context"),
                header=alt.Header(labelAngle=0, labelAlign="left", format=","),
            ),
            spacing=10,
        )
    )
    key = (
        "Solid: each operation's expected time from the measured kernels, all layers of one "
        "decode step; faded: its roofline bound."
    )
    lines = [key, *_kernel_sentence(frame), *_reasons(sel.ds), *sel.notes, *notes]
    what = "where the step goes, expected beside the bound"
    return chart.properties(title=heading(sel.headline(what), lines, sel.size))


ROOFLINE_SHARE = register(Kind(
    name="roofline-share",
    title="Expected against the bound: the share of the roofline reached",
    order=52,
    default=True,
    doc="heatmap per model and device, where the sweep has axes.engine: the bound over the "
    "expected step from measured kernels, batch by context, a panel per engine",
    builder=share_chart,
    applies=has_engine,
))  # fmt: skip
KERNELS = register(Kind(
    name="kernels",
    title="Expected against the bound: where the step goes",
    order=54,
    default=True,
    doc="per model and device, where the sweep has axes.engine: each operation's expected time "
    "beside its bound at batch 1, the knee and the memory wall",
    builder=kernels_chart,
    applies=has_engine,
))  # fmt: skip
