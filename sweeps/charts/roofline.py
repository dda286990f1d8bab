"""The roofline: attainable FLOP/s against arithmetic intensity, log-log.

``roofline_chart``: one device, a roof per compute dtype it has (bf16, fp8, fp4), the
bandwidth slope labelled, the decode and prefill points of one model. ``compare_chart``: every
device of the sweep, one roof each (the sweep's compute dtype), each device's points in its hue.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from sweeps.errors import ConfigError
from sweeps.outputs import Kind, register

from .data import KV_FACETS, Selection, join, select, status, thin, tidy
from .lines import LOG_LABELS, spread
from .theme import (
    DECODE,
    DOES_NOT_FIT,
    INK,
    PREFILL,
    Size,
    category_scale,
    device_scale,
    device_shapes,
    heading,
    number,
    size_of,
    themed,
    title,
    tooltip,
    unit,
)
from .ticks import log_ticks, thinned, tight_span

ROOF_DTYPES = ("fp4", "fp8", "bf16")
"""Compute dtypes that get a roof where the device has a peak: the formats LLM inference runs
in (int8 equals fp8 on every catalog device; fp32 is not used for decode)."""
PHASES = ((DECODE, "context", ""), (PREFILL, "prompt", "prefill_"))
"""Phase, its length dimension, its variables' prefix."""


OWN_ABOVE = 1e-3
"""How far above the roof drawn a point's own roof must be to be drawn [1]: the roofs of one
format equal it to the last bits."""


def phase_points(sel: Selection) -> tuple[pl.DataFrame, list[str]]:
    """Decode and prefill points of a selection, one frame with a ``phase`` column, thinned.

    Each point is at the FLOP/s it attains, beside ``own_roof``, the compute roof it runs
    against [FLOP/s]: the formats' peaks weighted by its FLOPs (attention at the KV format's
    peak, the GEMMs at the weights'), efficiency applied, read back from its utilization
    (attained over that roof); ``above``: that roof is above the one the chart names (the
    sweep's compute dtype), where a point may sit above the roof drawn."""
    limit = max(2, sel.max_cells // 2)
    parts, notes = [], []
    for phase, length, prefix in PHASES:
        dims = ("batch", length, *KV_FACETS)
        names = {
            f"{prefix}arithmetic_intensity": "arithmetic_intensity",
            f"{prefix}attainable_flops": "attainable_flops",
            f"{prefix}feasible": "feasible",
            f"{prefix}utilization": "utilization",
        }
        # the three variables drawn, thinned: not the hundred of the selection
        thinned, note = thin(sel.ds[list(names)], dims, ("batch", length), limit)
        frame = tidy(thinned.rename(names), tuple(names.values()), dims)
        parts.append(status(frame.with_columns(phase=pl.lit(phase)), "feasible", "phase"))
        notes += [f"{phase.capitalize()}: {note[0].lower()}{note[1:]}"] if note else []
    points = pl.concat(parts, how="diagonal").with_columns(
        hardware=pl.lit(sel.device_name), tp=pl.lit(sel.tp), weight_dtype=pl.lit(sel.weight_dtype)
    )
    # a step whose attention runs at a faster format's peak attains more than the roof named:
    # it is drawn where it is, against its own roof (its utilization's, 0..1)
    bandwidth, efficiency = _efficient(sel.ds)
    roof = float(np.atleast_1d(sel.ds[f"peak_flops_{compute_dtype(sel)}"].values)[0])
    share, slope = pl.col("utilization"), pl.col("arithmetic_intensity") * bandwidth
    own = pl.when(share > 0).then(pl.col("attainable_flops") / share * efficiency)
    drawn = pl.min_horizontal(slope, pl.lit(roof * efficiency))
    points = points.with_columns(own_roof=pl.min_horizontal(slope, own)).with_columns(
        above=(pl.col("own_roof") > drawn * (1 + OWN_ABOVE)).fill_null(False)
    )
    return points.drop("utilization"), notes


def own_roofs(points: pl.DataFrame) -> pl.DataFrame:
    """A short dashed segment at each point's own roof, where it is above the roof drawn:
    from 0.8 to 1.25 times its intensity (``arithmetic_intensity`` to ``x_high``), at
    ``attainable_flops``, its own roof [FLOP/s] (the roofline's own axes' fields)."""
    above = points.filter(pl.col("above"))
    return above.select(
        arithmetic_intensity=pl.col("arithmetic_intensity") * 0.8,
        x_high=pl.col("arithmetic_intensity") * 1.25,
        attainable_flops=pl.col("own_roof"),
        phase=pl.col("phase"),
    )


def _efficient(ds: xr.Dataset) -> tuple[float, float]:
    """Bandwidth [byte/s] and compute-efficiency factor [1] the grid applies."""
    bandwidth = float(np.atleast_1d(ds["bandwidth"].values)[0])
    return bandwidth * float(ds.attrs.get("bandwidth_efficiency", 1.0)), float(
        ds.attrs.get("compute_efficiency", 1.0)
    )


def compute_dtype(sel: Selection) -> str:
    """The compute dtype whose peak the grid used for ``sel`` (its ridge point times the
    bandwidth): the sweep's ``compute_dtype``, or under ``"auto"`` the weight format's own [-]."""
    return _dtype_used(sel.ds)


def _dtype_used(ds: xr.Dataset) -> str:
    """``compute_dtype`` of a grid of one device at one weight format [-]."""
    bandwidth, efficiency = _efficient(ds)
    used = float(np.max(ds["ridge_point"].values)) * bandwidth / efficiency
    peaks = {d: float(np.atleast_1d(ds[f"peak_flops_{d}"].values)[0]) for d in ROOF_DTYPES}
    present = {d: p for d, p in peaks.items() if np.isfinite(p)}
    return min(present, key=lambda d: abs(present[d] - used) / used)


def roofs(ds: xr.Dataset, dtypes: tuple[str, ...], span: tuple[float, float]) -> pl.DataFrame:
    """Vertices of one device's roofs over ``span`` [FLOP/byte]: the bandwidth slope up to each
    dtype's ridge point, then its peak (efficiencies applied, as in the grid)."""
    bandwidth, efficiency = _efficient(ds)
    rows = []
    for dtype in dtypes:
        peak = float(np.atleast_1d(ds[f"peak_flops_{dtype}"].values)[0]) * efficiency
        if not np.isfinite(peak):
            continue
        ridge = peak / bandwidth
        for x in (span[0], ridge, span[1]):
            rows.append(
                {
                    "roof": dtype,
                    "arithmetic_intensity": x,
                    "attainable_flops": min(x * bandwidth, peak),
                }
            )
    return pl.DataFrame(rows)


def _scales(
    points: pl.DataFrame, roof: pl.DataFrame, ridges: list[float], size: Size, width: int
) -> tuple[alt.X, alt.Y, tuple[float, float], tuple[float, float]]:
    xs = np.r_[points["arithmetic_intensity"].drop_nulls().to_numpy(), ridges]
    x_span = tight_span(xs, above=3)  # room right of the last ridge for the roof's flat part
    y_span = tight_span(
        np.r_[
            roof["attainable_flops"].to_numpy(),
            points["attainable_flops"].drop_nulls().to_numpy(),
            own_roofs(points)["attainable_flops"].to_numpy(),
        ],
        above=2,
    )
    x = alt.X(
        "arithmetic_intensity:Q",
        title=title("arithmetic_intensity"),
        scale=log_scale(x_span),
        axis=alt.Axis(
            labelExpr=LOG_LABELS,
            values=thinned(log_ticks(x_span), x_span, width, size.font, True),
        ),
    )
    y = alt.Y(
        "attainable_flops:Q",
        title=title("attainable_flops"),
        scale=log_scale(y_span),
        axis=alt.Axis(
            format="~s",
            values=thinned(log_ticks(y_span), y_span, size.panel_height * 1.5, size.font, False),
        ),
    )
    return x, y, x_span, y_span


def log_scale(span: tuple[float, float]) -> alt.Scale:
    """A roofline axis's scale: log over ``span``, not widened to whole decades."""
    return alt.Scale(type="log", domain=list(span), nice=False)


def plot_width(size: Size, labels: Iterable[str], most: int) -> int:
    """Plot width [px] that leaves the figure's width for the y axis and the roof labels."""
    room = max((len(text) for text in labels), default=0) * 0.6 * size.font + 10
    return int(min(most, size.width - size.left + 40 - room))


def _slope_angle(
    size: Size, width: int, x_span: tuple[float, float], y_span: tuple[float, float]
) -> float:
    """Angle [degree] of a slope-1 line on the log-log panel, for its label."""
    per_x = width / math.log10(x_span[1] / x_span[0])
    per_y = size.panel_height * 1.5 / math.log10(y_span[1] / y_span[0])
    return -math.degrees(math.atan2(per_y, per_x))


def _slope_label(
    size: Size,
    bandwidth: float,
    ridge: float,
    axes: tuple[alt.X, alt.Y],
    spans: tuple[tuple[float, float], tuple[float, float]],
    width: int,
) -> alt.Chart:
    """The bandwidth [byte/s] written along the slope, halfway (in log) to the first ridge."""
    at = math.sqrt(spans[0][0] * ridge)
    slope = pl.DataFrame(
        {
            "arithmetic_intensity": [at],
            "attainable_flops": [at * bandwidth],
            "label": [f"{number(bandwidth / 1e12)} TB/s"],
        }
    )
    angle = _slope_angle(size, width, *spans)
    return (
        alt.Chart(slope)
        .mark_text(angle=round(angle) % 360, baseline="bottom", dy=-9, fontSize=size.font)
        .encode(x=axes[0], y=axes[1], text="label:N")
    )


def _tips(with_device: bool) -> list[alt.Tooltip]:
    return [
        alt.Tooltip("phase:N", title="phase"),
        *([alt.Tooltip("hardware:N", title="hardware")] if with_device else []),
        tooltip("batch"),
        tooltip("context"),
        tooltip("prompt"),
        tooltip("kv_heads"),
        tooltip("kv_dtype"),
        tooltip("arithmetic_intensity", ".3~f"),
        tooltip("attainable_flops", ".3~s"),
        alt.Tooltip("status:N", title="status"),
    ]


def _roof_labels(
    roof: pl.DataFrame, key: str, text: dict[str, str], y_span: tuple[float, float], size: Size
) -> pl.DataFrame:
    """One label per roof right of its end (outside the plot, clear of every line), spread so
    that none overprints another."""
    ends = roof.group_by(key, maintain_order=True).last()
    logs = np.log10(ends["attainable_flops"].to_numpy())
    gap = 1.3 * size.font * math.log10(y_span[1] / y_span[0]) / (size.panel_height * 1.5)
    placed = spread(logs, gap)
    return ends.with_columns(
        label_y=pl.Series(10.0**placed), label=pl.Series([text[str(k)] for k in ends[key]])
    )


@themed
def roofline_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> alt.LayerChart:
    """Roofline of one device: a roof per compute dtype it has (``ROOF_DTYPES``; the sweep's
    ``compute_dtype`` solid, the others dashed), the bandwidth slope labelled, and the decode
    and prefill points of ``model`` by phase (grey: does not fit).

    Parameters
    ----------
    ds
        A grid (``sweeps.run``) with the decode analysis.
    model
        The model drawn (default: the grid's first).
    hardware
        The device drawn (default: the grid's first).
    **options
        As ``ceiling_chart`` takes them: ``tp``, ``weight_dtype``, ``pick``, ``max_cells``,
        ``width``.

    Returns
    -------
    alt.LayerChart
        The Altair chart; its title and subtitle are the caption
        (``sweeps.charts.rendering.caption``).
    """
    # long: one layer per roof, slope label and phase, each from the same selection
    sel = select(ds, model, hardware, **options)
    points, notes = phase_points(sel)
    compute = compute_dtype(sel)
    bandwidth, efficiency = _efficient(sel.ds)
    peaks = {
        d: float(np.atleast_1d(sel.ds[f"peak_flops_{d}"].values)[0]) * efficiency
        for d in ROOF_DTYPES
    }
    present = tuple(d for d in ROOF_DTYPES if np.isfinite(peaks[d]))
    ridges = [peaks[d] / bandwidth for d in present]
    first = roofs(sel.ds, present, (1.0, 1.0))
    text = {d: f"{d} {number(peaks[d] / 1e12)} T{unit('peak_flops')}" for d in present}
    width = plot_width(sel.size, text.values(), 520)
    x, y, x_span, y_span = _scales(points, first, ridges, sel.size, width)
    roof = roofs(sel.ds, present, x_span)
    labels = _roof_labels(roof, "roof", text, y_span, sel.size)
    dash = alt.StrokeDash(
        "roof:N",
        scale=alt.Scale(
            domain=list(present), range=[[1, 0] if d == compute else [5, 3] for d in present]
        ),
        legend=None,
    )
    font = sel.size.font
    layers = [
        alt.Chart(roof).mark_line(color=INK, strokeWidth=1.8).encode(x=x, y=y, strokeDash=dash),
        alt.Chart(points)
        .mark_point(filled=True, size=4 * font, opacity=0.75)
        .encode(
            x=x,
            y=y,
            tooltip=_tips(False),
            color=alt.Color(
                "status:N",
                title="phase",
                scale=category_scale(DECODE, PREFILL, DOES_NOT_FIT),
                legend=alt.Legend(
                    orient="bottom-right" if sel.size.legend == "right" else "bottom"
                ),
            ),
            order=alt.Order("feasible:Q"),
        ),
        alt.Chart(labels)
        .mark_text(align="left", baseline="middle", dx=5, fontSize=font)
        .encode(x=x, y=alt.Y("label_y:Q"), text="label:N"),
        _slope_label(sel.size, bandwidth, min(ridges), (x, y), (x_span, y_span), width),
    ]
    mine = own_roofs(points)
    if mine.height:
        layers.append(_own_roof_layer(mine, x, y))
    caption = [
        f"Roofs: min(intensity × bandwidth, peak) for each compute dtype of the device; the "
        f"points use the {compute} roof (options.compute_dtype, solid); each point one batch "
        "and context (decode) or prompt (prefill), at the FLOP/s it attains.",
        *([OWN_ROOF_NOTE] if mine.height else []),
        *sel.notes,
        *notes,
    ]
    return alt.LayerChart(
        layer=layers,
        width=width,
        height=int(sel.size.panel_height * 1.5),
        title=heading(sel.headline("roofline of decode and prefill"), caption, sel.size),
    )


OWN_ROOF_NOTE = (
    "Grey dashes: a point's own roof where above the solid one (attention at the KV "
    "format's faster peak; the peaks weighted by their FLOPs)."
)
"""The caption's sentence where a point's own roof is drawn."""


def _own_roof_layer(segments: pl.DataFrame, x: alt.X, y: alt.Y) -> alt.Chart:
    """``own_roofs`` as short grey dashes over their points, on the roofline's axes."""
    return (
        alt.Chart(segments)
        .mark_rule(color="#888888", strokeDash=[2, 2], strokeWidth=1.5)
        .encode(
            x=x,
            x2="x_high:Q",
            y=y,
            tooltip=[alt.Tooltip("attainable_flops:Q", title="own roof [FLOP/s]", format=".3~s")],
        )
    )


@themed
def compare_chart(ds: xr.Dataset, model: str | None = None, **options: Any) -> alt.LayerChart:
    """Rooflines of every device of the sweep for ``model`` (``compare_from`` of each device's
    selection). ``options`` as ``heatmaps.ceiling_chart``."""
    return compare_from(
        [select(ds, model, str(h), **options) for h in ds["hardware"].values],
        options.get("width"),
    )


def _shared_points(drawn: list[Selection]) -> tuple[pl.DataFrame, str]:
    """The points of every device of ``drawn`` that fit, each device thinned to its share of
    the chart's cells (the smallest ``max_cells``, itself within Altair's row limit, split
    evenly between the devices: 35 devices at 4,500 cells each drew 72,774 rows, past
    Altair's 5,000), and the caption's line where a device was thinned ('' otherwise)."""
    cap = min(sel.max_cells for sel in drawn)
    share = max(4, cap // len(drawn))
    parts, thinned_any = [], False
    for sel in drawn:
        frame, notes = phase_points(dataclasses.replace(sel, max_cells=share))
        parts.append(frame.filter(pl.col("feasible")))
        thinned_any = thinned_any or bool(notes)
    note = (
        f"Each device's points thinned to at most about {share:,} (log-spaced batches and "
        f"lengths: {len(drawn)} devices share the chart's {cap:,} cells); the Parquet files "
        "have all."
        if thinned_any
        else ""
    )
    return pl.concat(parts), note


def compare_from(selections: list[Selection], width: str | Size | None = None) -> alt.LayerChart:
    """One roof per device (its peak in the compute dtype the grid used), each device's decode
    (circles) and prefill (triangles) points that fit, in its hue, at that device's own tp and
    weight dtype; devices where the model does not fit are left out and named (``ConfigError``
    where it fits on none)."""
    # long: the roofs, labels and points of every device share one scale and one legend
    size = size_of(width)
    drawn = [sel for sel in selections if sel.choice.fits]
    missing = [sel.device_name for sel in selections if not sel.choice.fits]
    if not drawn:
        msg = f"charts: {selections[0].model} fits on none of {', '.join(missing)}"
        raise ConfigError(msg)
    names = [sel.device_name for sel in drawn]
    points, shared = _shared_points(drawn)
    ridges = [float(np.max(sel.ds["ridge_point"].values)) for sel in drawn]
    first = pl.concat([roofs(sel.ds, (compute_dtype(sel),), (1.0, 1.0)) for sel in drawn])
    plot = plot_width(size, names, 560)
    x, y, x_span, y_span = _scales(points, first, ridges, size, plot)
    roof = pl.concat(
        [
            roofs(sel.ds, (compute_dtype(sel),), x_span).with_columns(
                hardware=pl.lit(sel.device_name)
            )
            for sel in drawn
        ]
    )
    labels = _roof_labels(roof, "hardware", {n: n for n in names}, y_span, size)
    ids = [sel.hardware for sel in drawn]
    color = alt.Color("hardware:N", title="hardware", scale=device_scale(ids, names), legend=None)
    marker = alt.Shape("hardware:N", scale=device_shapes(ids, names), legend=None)
    ridge_vertices = roof.group_by("hardware", maintain_order=True).agg(pl.all().get(1))
    font = size.font
    layers = [
        alt.Chart(roof).mark_line(strokeWidth=1.8).encode(x=x, y=y, color=color),
        alt.Chart(ridge_vertices)  # each roof's ridge, in the device's marker: roofs cross
        .mark_point(filled=True, size=9 * font, opacity=1)
        .encode(x=x, y=y, color=color, shape=marker),
        alt.Chart(points)
        .mark_point(filled=True, size=4 * font, opacity=0.7)
        .encode(
            x=x,
            y=y,
            color=color,
            tooltip=_tips(True),
            shape=alt.Shape(
                "phase:N",
                scale=alt.Scale(domain=[DECODE, PREFILL], range=["circle", "triangle-up"]),
                legend=alt.Legend(
                    title="phase", orient="bottom-right" if size.legend == "right" else "bottom"
                ),
            ),
        ),
        alt.Chart(labels)
        .mark_text(align="left", baseline="middle", dx=5, fontSize=font, fontWeight="bold")
        .encode(x=x, y=alt.Y("label_y:Q"), text="label:N", color=color),
    ]
    mine = own_roofs(points)
    if mine.height:
        layers.append(_own_roof_layer(mine, x, y))
    pairs = {(sel.tp, sel.weight_dtype) for sel in drawn}
    chosen = (
        f"all at tp {drawn[0].tp} with {drawn[0].weight_dtype} weights"
        if len(pairs) == 1
        else ", ".join(f"{sel.device_name} tp {sel.tp} {sel.weight_dtype}" for sel in drawn)
    )
    caption = [
        f"One roof per device (its {join(sorted({compute_dtype(s) for s in drawn}))} peak, "
        "options.compute_dtype); the points that "
        f"fit, decode (circles) and prefill (triangles), each device at its own tp and weight "
        f"dtype ({chosen}).",
        *([OWN_ROOF_NOTE] if mine.height else []),
        *([shared] if shared else []),
        *([f"Not drawn: {', '.join(missing)} (the model does not fit)."] if missing else []),
    ]
    return alt.LayerChart(
        layer=layers,
        width=plot,
        height=int(size.panel_height * 1.5),
        title=heading(f"{selections[0].model}: roofline across devices", caption, size),
    )


def device_roofs_part(one: xr.Dataset) -> xr.Dataset:
    """What ``device_roofs_chart`` keeps of a slice: its device's ridge point at its first
    model, tp and weight format, with the device's figures (a few numbers)."""
    first = {d: 0 for d in ("model", "tp", "weight_dtype") if d in one["ridge_point"].dims}
    return one[["ridge_point"]].isel(first).copy(deep=True)


@themed
def device_roofs_chart(devices: list[xr.Dataset], width: str | None = None) -> alt.LayerChart:
    """One roof per device (``device_roofs_part`` of a slice of each): its bandwidth slope to
    its ridge point, marked, then its peak in the compute dtype the grid used for the sweep's
    first weight format (efficiencies applied), each labelled with the device's name."""
    size = size_of(width)
    names = [str(np.atleast_1d(d["hardware_name"].values)[0]) for d in devices]
    ids = [str(np.atleast_1d(d["hardware"].values)[0]) for d in devices]
    dtypes = [_dtype_used(d) for d in devices]
    ridges = [float(np.max(d["ridge_point"].values)) for d in devices]
    first = pl.concat([roofs(d, (t,), (1.0, 1.0)) for d, t in zip(devices, dtypes, strict=True)])
    plot = plot_width(size, names, 560)
    columns = ("arithmetic_intensity", "attainable_flops", "own_roof", "above", "phase")
    types = (pl.Float64, pl.Float64, pl.Float64, pl.Boolean, pl.String)
    none = pl.DataFrame(schema=dict(zip(columns, types, strict=True)))  # no points: roofs only
    x, y, x_span, y_span = _scales(none, first, ridges, size, plot)
    roof = pl.concat(
        [
            roofs(d, (t,), x_span).with_columns(hardware=pl.lit(n))
            for d, t, n in zip(devices, dtypes, names, strict=True)
        ]
    )
    labels = _roof_labels(roof, "hardware", {n: n for n in names}, y_span, size)
    color = alt.Color("hardware:N", title="hardware", scale=device_scale(ids, names), legend=None)
    marker = alt.Shape("hardware:N", scale=device_shapes(ids, names), legend=None)
    ridge_vertices = roof.group_by("hardware", maintain_order=True).agg(pl.all().get(1))
    layers = [
        alt.Chart(roof).mark_line(strokeWidth=1.8).encode(x=x, y=y, color=color),
        alt.Chart(ridge_vertices)
        .mark_point(filled=True, size=9 * size.font, opacity=1)
        .encode(x=x, y=y, color=color, shape=marker),
        alt.Chart(labels)
        .mark_text(align="left", baseline="middle", dx=5, fontSize=size.font, fontWeight="bold")
        .encode(x=x, y=alt.Y("label_y:Q"), text="label:N", color=color),
    ]
    caption = [
        f"One roof per device: its bandwidth slope up to its ridge point (marked), then its "
        f"{join(sorted(set(dtypes)))} peak, the compute dtype of the sweep's first weight "
        "format (efficiencies applied, as in the grid).",
    ]
    return alt.LayerChart(
        layer=layers,
        width=plot,
        height=int(size.panel_height * 1.5),
        title=heading("The devices' roofs", caption, size),
    )


ROOFLINE = register(Kind(
    name="roofline",
    title="Roofline",
    order=40,
    default=True,
    doc="per model and device: the roofs of its dtypes with the decode and prefill points",
    builder=roofline_chart,
))  # fmt: skip
DEVICES = register(Kind(
    name="roofline-devices",
    title="Across devices",
    order=50,
    chosen=False,
    doc="per model, with roofline, where the sweep has several devices: one roof per device",
))  # fmt: skip
DEVICE_ROOFS = register(Kind(
    name="device-roofs",
    title="The devices' roofs",
    order=55,
    doc="one figure where the sweep has several devices: each device's roof (bandwidth slope, "
    "ridge, peak); drawn by default past 24 model-device pairs, in place of the rooflines",
))  # fmt: skip
