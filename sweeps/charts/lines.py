"""Line and point charts: arithmetic intensity against batch, and the classic roofline."""

from __future__ import annotations

from typing import Any, Literal

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from .data import KV_FACETS, Selection, kv_heads_labels, select, status, thin, tidy
from .heatmaps import decode_cells
from .theme import (
    CONTEXT_SCHEME,
    DECODE,
    DOES_NOT_FIT,
    INK,
    PANEL,
    PREFILL,
    category_scale,
    finish,
    heading,
    number,
    title,
    tooltip,
    unit,
)

LINE_KEYS = ("context", *KV_FACETS)
WALL_LABELS: tuple[tuple[Literal["left", "right"], int, bool], ...] = (
    ("left", 5, False),
    ("right", -6, True),
)
"""Memory-wall labels: below right of a wall inside the sweep, below left of one beyond it."""


def _walls(frame: pl.DataFrame) -> pl.DataFrame:
    """Mark each line's last fitting batch and where its memory wall (max batch) is drawn."""
    last = frame["batch"].max()
    return (
        frame.sort("batch")
        .with_columns(
            next_ai=pl.col("arithmetic_intensity").shift(-1).over(LINE_KEYS),
            wall=pl.col("feasible")
            & ~pl.col("feasible").shift(-1, fill_value=False).over(LINE_KEYS),
        )
        .with_columns(
            wall_x=pl.min_horizontal(pl.col("max_batch"), pl.lit(last)),
            wall_y=pl.col("arithmetic_intensity")
            / pl.when(pl.col("next_ai").is_null()).then(1.25).otherwise(1.0),
            wall_y2=pl.col("next_ai").fill_null(pl.col("arithmetic_intensity") * 1.25),
            wall_label=pl.format("max batch {}", pl.col("max_batch"))
            + pl.when(pl.col("max_batch") > last).then(pl.lit(" →")).otherwise(pl.lit("")),
        )
    )


def _context_color(sel: Selection) -> alt.Color:
    return alt.Color(
        "context:O",
        title=title("context"),
        sort=[int(c) for c in sel.ds["context"].values],
        scale=alt.Scale(scheme=alt.SchemeParams(CONTEXT_SCHEME, extent=[0.45, 1.0])),
        legend=alt.Legend(format=","),
    )


def ai_vs_batch_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> alt.FacetChart:
    """Decode arithmetic intensity [FLOP/byte] against batch [sequence] (log-log), one line per
    context, faceted KV heads (columns) x KV dtype (rows).

    Dashed: each context's asymptotic ceiling; black: the device's ridge point; a bar and label
    mark each line's memory wall (max batch); dotted: batches that do not fit.
    ``options``: ``tp``, ``weight_dtype`` (default: the first), ``max_cells`` [cell].
    """
    sel = select(ds, model, hardware, **options)
    point = float(np.max(sel.ds["ridge_point"].values))
    cells, note = decode_cells(sel)
    frame = _walls(cells)
    color = _context_color(sel)
    batches = [int(b) for b in np.unique(frame["batch"].to_numpy())]
    last = batches[-1]
    x = alt.X(
        "batch:Q",
        title=title("batch"),
        scale=alt.Scale(type="log", nice=False),
        axis=alt.Axis(format="~s", values=batches if len(batches) <= 12 else alt.Undefined),
    )
    y = alt.Y(
        "arithmetic_intensity:Q",
        title=title("arithmetic_intensity"),
        scale=alt.Scale(type="log"),
        axis=decades(
            pl.concat([frame["arithmetic_intensity"], frame["ceiling"], frame["ridge_point"]])
        ),
    )
    base = alt.Chart().properties(width=PANEL[0], height=PANEL[1])
    tips = [
        tooltip("batch"),
        tooltip("context"),
        tooltip("arithmetic_intensity", ".3~f"),
        tooltip("ceiling", ".3~f"),
        tooltip("fraction_of_ceiling", ".1%"),
        tooltip("max_batch", ","),
        tooltip("step_time_s", ".3~s"),
        tooltip("tokens_per_s", ",.0f"),
        alt.Tooltip("status:N", title="status"),
    ]
    fits = alt.FieldEqualPredicate(field="feasible", equal=True)
    layers = [
        base.mark_line(strokeDash=[2, 3], strokeWidth=1.5, opacity=0.6).encode(
            x=x, y=y, color=color
        ),
        base.mark_line(strokeWidth=2.2).encode(x=x, y=y, color=color).transform_filter(fits),
        base.mark_point(filled=True, size=36)
        .encode(x=x, y=y, color=color, tooltip=tips)
        .transform_filter(fits),
        base.mark_rule(strokeDash=[7, 4], strokeWidth=1.5).encode(
            y=alt.Y("max(ceiling):Q"), color=color
        ),
        base.mark_rule(color=INK, strokeWidth=1.5, strokeDash=[2, 2]).encode(
            y=alt.Y("max(ridge_point):Q")
        ),
        base.mark_text(align="right", baseline="bottom", dy=-3, fontSize=11, color=INK).encode(
            x=alt.X("max(batch):Q"),
            y=alt.Y("max(ridge_point):Q"),
            text=alt.value(
                f"ridge point {number(point)} {unit('ridge_point')}: compute-bound above"
            ),
        ),
        base.mark_rule(color=INK, strokeWidth=3)
        .encode(
            x=alt.X("wall_x:Q"),
            y=alt.Y("wall_y:Q"),
            y2="wall_y2:Q",
            tooltip=[tooltip("max_batch", ","), tooltip("context")],
        )
        .transform_filter(alt.datum.wall),
        *(
            base.mark_text(align=align, dx=dx, dy=14, fontSize=10, color=INK)
            .encode(x=alt.X("wall_x:Q"), y=alt.Y("wall_y:Q"), text="wall_label:N")
            .transform_filter(alt.datum.wall)
            .transform_filter((alt.datum.max_batch > last) == beyond)
            for align, dx, beyond in WALL_LABELS
        ),
        base.mark_text(align="left", baseline="top", dx=2, dy=3, fontSize=10).encode(
            x=alt.X("min(batch):Q"),
            y=alt.Y("max(ceiling):Q"),
            color=color,
            text=alt.Text("max(ceiling):Q", format=",.3~r"),
        ),
    ]
    chart = alt.layer(*layers, data=frame).facet(
        column=alt.Column("kv_heads:N", title=title("kv_heads"), sort=kv_heads_labels(sel.ds)),
        row=alt.Row(
            "kv_dtype:N",
            title=title("kv_dtype"),
            sort=[str(v) for v in sel.ds["kv_dtype"].values],
            header=alt.Header(labelAngle=0, labelAlign="left"),
        ),
        spacing=16,
    )
    lines = [
        "Dashed, labelled at the left: each context's asymptotic ceiling; dotted: batches "
        "beyond the memory wall (black bar: max batch).",
        *sel.notes,
        *([note] if note else []),
    ]
    return finish(chart, heading(sel.headline("arithmetic intensity against batch"), lines))


def decades(values: pl.Series) -> alt.Axis:
    """Log axis with ticks and grid lines at the powers of ten spanning ``values`` only, SI
    prefixes from a thousand up."""
    logs = np.log10(values.drop_nulls().to_numpy().astype(float))
    ticks = [10.0**k for k in range(int(np.floor(logs.min())), int(np.ceil(logs.max())) + 1)]
    return alt.Axis(
        values=ticks,
        labelExpr="datum.value >= 1000 ? format(datum.value, '~s') : format(datum.value, '~g')",
    )


def _phase_points(sel: Selection) -> tuple[pl.DataFrame, list[str]]:
    """Decode and prefill points, one frame with a ``phase`` column, each thinned."""
    limit = max(2, sel.max_cells // 2)
    parts, notes = [], []
    extra = ("hardware",) if sel.hardware is None else ()
    for phase, length, prefix in ((DECODE, "context", ""), (PREFILL, "prompt", "prefill_")):
        dims = (*extra, "batch", length, *KV_FACETS)
        thinned, note = thin(sel.ds, dims, ("batch", length), limit)
        names = {
            f"{prefix}arithmetic_intensity": "arithmetic_intensity",
            f"{prefix}attainable_flops": "attainable_flops",
            f"{prefix}feasible": "feasible",
        }
        frame = tidy(thinned[list(names)].rename(names), tuple(names.values()), dims)
        parts.append(status(frame.with_columns(phase=pl.lit(phase)), "feasible", "phase"))
        notes += [f"{phase} {note}"] if note else []
    return pl.concat(parts, how="diagonal"), notes


def _roofs(sel: Selection, points: pl.DataFrame) -> pl.DataFrame:
    """Vertices of each device's roof over the plotted range: the bandwidth slope up to the
    ridge point, then the peak (compute efficiency applied, as in the grid)."""
    ds = sel.ds
    ridge = np.atleast_1d(
        ds["ridge_point"].max([d for d in ds["ridge_point"].dims if d != "hardware"]).values
    )
    peaks = ds["peak_flops"]
    peaks = peaks.max([d for d in peaks.dims if d != "hardware"]) if peaks.ndim > 1 else peaks
    peak = np.atleast_1d(peaks.values) * float(ds.attrs.get("compute_efficiency", 1.0))
    names = [str(n) for n in np.atleast_1d(ds["hardware_name"].values)]
    intensity = points["arithmetic_intensity"].to_numpy()
    lo = float(np.nanmin(intensity)) / 2
    hi = max(float(np.nanmax(intensity)), float(ridge.max())) * 2
    rows = [
        {
            "hardware": name,
            "arithmetic_intensity": x,
            "attainable_flops": p * min(x / r, 1.0),
            "label": f"{name}\npeak {number(p / 1e12)} T{unit('peak_flops')}, ridge {r:.0f} "
            f"{unit('ridge_point')}"
            if x == r
            else "",
        }
        for name, r, p in zip(names, ridge, peak, strict=True)
        for x in (lo, float(r), hi)
    ]
    return pl.DataFrame(rows)


def roofline_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> alt.LayerChart:
    """Classic roofline: attainable [FLOP/s] against arithmetic intensity [FLOP/byte], log-log.

    The roof of each device (all devices of the grid when ``hardware`` is ``None``), with the
    decode and prefill points of ``model`` coloured by phase; points that do not fit are grey.
    ``options``: ``tp``, ``weight_dtype`` (default: the first), ``max_cells`` [cell].
    """
    sel = select(
        ds, model, hardware, all_hardware=hardware is None and ds.sizes["hardware"] > 1, **options
    )
    points, notes = _phase_points(sel)
    if "hardware" not in points.columns:
        points = points.with_columns(hardware=pl.lit(sel.device_name))
    roofs = _roofs(sel, points)
    top = float(np.max(roofs["attainable_flops"].to_numpy())) * 2.5
    x = alt.X(
        "arithmetic_intensity:Q",
        title=title("arithmetic_intensity"),
        scale=alt.Scale(type="log"),
        axis=decades(roofs["arithmetic_intensity"]),
    )
    y = alt.Y(
        "attainable_flops:Q",
        title=title("attainable_flops"),
        scale=alt.Scale(type="log", domainMax=top),
        axis=decades(pl.Series([roofs["attainable_flops"].min(), top])),
    )
    dash = alt.StrokeDash("hardware:N", title="roof", legend=None if sel.hardware else alt.Legend())
    roof = alt.Chart(roofs).mark_line(color=INK, strokeWidth=2).encode(x=x, y=y, strokeDash=dash)
    label = (
        alt.Chart(roofs)
        .mark_text(
            align="right", baseline="bottom", dx=-10, dy=-22, lineBreak="\n", fontSize=11, color=INK
        )
        .encode(x=x, y=y, text="label:N")
        .transform_filter(alt.datum.label != "")
    )
    tips = [
        alt.Tooltip("phase:N", title="phase"),
        alt.Tooltip("hardware:N", title="hardware"),
        tooltip("batch"),
        tooltip("context"),
        tooltip("prompt"),
        tooltip("kv_heads"),
        tooltip("kv_dtype"),
        tooltip("arithmetic_intensity", ".3~f"),
        tooltip("attainable_flops", ".3~s"),
        alt.Tooltip("status:N", title="status"),
    ]
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, size=45, opacity=0.75)
        .encode(
            x=x,
            y=y,
            tooltip=tips,
            color=alt.Color(
                "status:N", title="phase", scale=category_scale(DECODE, PREFILL, DOES_NOT_FIT)
            ),
            shape=alt.Shape(
                "hardware:N", title="hardware", legend=None if sel.hardware else alt.Legend()
            ),
            order=alt.Order("feasible:Q"),
        )
    )
    chart = alt.layer(roof, dots, label).properties(width=520, height=340)
    lines = [
        "Each point one setting of batch, context (decode) or prompt (prefill), KV heads "
        "and KV dtype; the roof is min(intensity × bandwidth, peak) of the device.",
        *sel.notes,
        *notes,
    ]
    return finish(chart, heading(sel.headline("roofline of decode and prefill"), lines))
