"""The decode heatmaps: batch across, context down, one panel per KV-head and KV-dtype setting.

``ceiling``: the fraction of the asymptotic ceiling reached. ``bottleneck``: memory- or
compute-bound. Both grey out the cells beyond the memory wall ("does not fit").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from .data import KV_FACETS, Selection, kv_heads_labels, select, status, thin, tidy
from .theme import (
    COLORS,
    COMPUTE_BOUND,
    DOES_NOT_FIT,
    INK,
    MEMORY_BOUND,
    SEQUENTIAL,
    category_scale,
    finish,
    heading,
    number,
    title,
    tooltip,
    unit,
)

HEAT_DIMS = ("batch", "context", *KV_FACETS)
HEAT_VARIABLES = (
    "arithmetic_intensity",
    "ceiling",
    "fraction_of_ceiling",
    "max_batch",
    "step_time_s",
    "tokens_per_s",
    "ridge_batch",
    "ridge_point",
    "bottleneck",
    "feasible",
)
RIDGE_MARK = "turns compute-bound (ridge batch)"
LABEL_MIN_CELL = 26
"""Cells at least this wide [px] carry their value as text."""


def _ridge_mark(ds: xr.Dataset) -> xr.DataArray:
    """True at the first compute-bound batch of each row (read from the flags)."""
    compute = ds["bottleneck"] == 1
    return compute & (compute.cumsum("batch") == 1)


def decode_cells(sel: Selection) -> tuple[pl.DataFrame, str]:
    """Tidy decode cells of a selection, thinned to ``sel.max_cells``; the thinning note."""
    ds, note = thin(sel.ds, HEAT_DIMS, ("batch", "context"), sel.max_cells)
    ds = ds.assign(ridge_mark=_ridge_mark(ds))
    frame = tidy(ds, (*HEAT_VARIABLES, "ridge_mark"), HEAT_DIMS)
    return status(frame, "feasible", "bottleneck"), note


def ceiling_text(sel: Selection) -> str:
    """``ceiling 243 FLOP/byte at 512 tokens, 19 at 8,192`` or a range when many [-]."""
    ceiling = sel.ds["ceiling"]
    values = np.unique(np.round(ceiling.values.reshape(-1), 6))
    u = unit("ceiling")
    if ceiling.sizes.get("context", 1) == ceiling.size <= 4:
        parts = [
            f"{number(v)} at {c:,} tokens"
            for v, c in zip(ceiling.values.reshape(-1), sel.ds["context"].values, strict=True)
        ]
        return f"ceiling {parts[0].replace(' at', f' {u} at', 1)}" + "".join(
            f", {p}" for p in parts[1:]
        )
    return (
        f"ceiling {number(values.min())} to {number(values.max())} {u} across contexts and "
        "KV settings"
    )


def ridge_text(sel: Selection) -> str:
    """Where decode turns compute-bound, or that it never does [-]."""
    ridge = sel.ds["ridge_batch"].values.reshape(-1)
    point = float(np.max(sel.ds["ridge_point"].values))
    found = ridge[np.isfinite(ridge)]
    if found.size == 0:
        return (
            f"Decode never turns compute-bound: every ceiling is below the ridge point, "
            f"{point:.0f} {unit('ridge_point')}."
        )
    never = ridge.size - found.size
    tail = f"; never for {never} of {ridge.size} settings" if never else ""
    span = f"{found.min():,.0f}" + (f" to {found.max():,.0f}" if found.max() > found.min() else "")
    return f"Blue bar: first compute-bound batch (ridge batch {span}{tail})."


def _axes(frame: pl.DataFrame, sel: Selection, step: int) -> dict[str, Any]:
    return {
        "x": alt.X(
            "batch:O",
            title=title("batch"),
            sort=[int(b) for b in sel.ds["batch"].values],
            axis=alt.Axis(labelAngle=-45 if step < LABEL_MIN_CELL else 0, labelOverlap="greedy"),
        ),
        "y": alt.Y(
            "context:O",
            title=title("context"),
            sort=[int(c) for c in sel.ds["context"].values],
            axis=alt.Axis(format=","),
        ),
    }


def _tooltips() -> list[alt.Tooltip]:
    return [
        tooltip("batch"),
        tooltip("context"),
        tooltip("kv_heads"),
        tooltip("kv_dtype"),
        tooltip("arithmetic_intensity", ".3~f"),
        tooltip("ceiling", ".3~f"),
        tooltip("fraction_of_ceiling", ".1%"),
        tooltip("max_batch", ","),
        tooltip("ridge_batch", ",.1f"),
        tooltip("step_time_s", ".3~s"),
        tooltip("tokens_per_s", ",.0f"),
        alt.Tooltip("status:N", title="status"),
    ]


def _facet(layers: list[alt.Chart], frame: pl.DataFrame, sel: Selection) -> alt.FacetChart:
    heads = kv_heads_labels(sel.ds)
    return (
        alt.layer(*layers, data=frame)
        .facet(
            column=alt.Column("kv_heads:N", title=title("kv_heads"), sort=heads),
            row=alt.Row(
                "kv_dtype:N",
                title=title("kv_dtype"),
                header=alt.Header(labelAngle=0, labelAlign="left"),
                sort=[str(v) for v in sel.ds["kv_dtype"].values],
            ),
            spacing=12,
        )
        .resolve_scale(x="shared", y="shared")
    )


def _heatmap(
    ds: xr.Dataset,
    model: str | None,
    hardware: str | None,
    what: str,
    layers: Callable[[alt.Chart, Selection, int], list[alt.Chart]],
    subtitle: Callable[[Selection], list[str]],
    **options: Any,
) -> alt.FacetChart:
    sel = select(ds, model, hardware, **options)
    frame, note = decode_cells(sel)
    step = int(np.clip(520 / max(1, frame["batch"].n_unique()), 12, 36))
    base = (
        alt.Chart()
        .encode(**_axes(frame, sel, step), tooltip=_tooltips())
        .properties(width=alt.Step(step))
    )
    height = max(step, 22)
    base = base.properties(height=alt.Step(height))
    ridge = (
        base.mark_tick(
            orient="vertical",
            thickness=5,
            size=height,
            stroke="white",
            strokeWidth=1.5,
            color=COLORS[COMPUTE_BOUND],
        )
        .encode(
            x=alt.X("batch:O", sort=[int(b) for b in sel.ds["batch"].values], bandPosition=0),
        )
        .transform_filter(alt.datum.ridge_mark)
    )
    chart = _facet([*layers(base, sel, step), ridge], frame, sel)
    lines = [*subtitle(sel), *sel.notes, *([note] if note else [])]
    return finish(chart, heading(sel.headline(what), lines))


def _fits(feasible: bool) -> alt.FieldEqualPredicate:
    return alt.FieldEqualPredicate(field="feasible", equal=feasible)


def does_not_fit(base: alt.Chart) -> alt.Chart:
    """The grey layer of cells beyond the memory wall, in the legend as "does not fit"."""
    return (
        base.mark_rect()
        .encode(
            fill=alt.Fill(
                "status:N",
                scale=category_scale(DOES_NOT_FIT),
                legend=alt.Legend(title=None, symbolType="square", symbolSize=200),
            ),
        )
        .transform_filter(_fits(False))
    )


def ceiling_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> alt.FacetChart:
    """Heatmap of the fraction of the asymptotic decode ceiling reached [1], batch x context,
    faceted KV heads (columns) x KV dtype (rows).

    Cells at or above ``ds.attrs['ceiling_fraction']`` are outlined; cells beyond the memory
    wall form the grey "does not fit" layer; a blue bar marks the first compute-bound batch.
    ``options``: ``tp``, ``weight_dtype`` (default: the first), ``max_cells`` [cell].
    """
    fraction = float(ds.attrs.get("ceiling_fraction", 0.9))
    reached = f"≥ {fraction:.0%} of ceiling"

    def layers(base: alt.Chart, sel: Selection, step: int) -> list[alt.Chart]:
        heat = (
            base.mark_rect(stroke="white", strokeWidth=0.5)
            .encode(
                color=alt.Color(
                    "fraction_of_ceiling:Q",
                    title=title("fraction_of_ceiling"),
                    scale=alt.Scale(scheme=SEQUENTIAL, domain=[0, 1]),
                    legend=alt.Legend(format=".0%", gradientLength=140),
                ),
            )
            .transform_filter(_fits(True))
        )
        outline = (
            base.mark_rect(fillOpacity=0, strokeWidth=2.5)
            .encode(
                stroke=alt.Stroke(
                    "reached:N",
                    scale=alt.Scale(domain=[reached], range=[INK]),
                    legend=alt.Legend(
                        title=None,
                        symbolType="square",
                        symbolSize=200,
                        symbolFillColor="#ffffff",
                        symbolStrokeWidth=2.5,
                    ),
                ),
            )
            .transform_filter(_fits(True))
            .transform_filter(alt.datum.fraction_of_ceiling >= fraction)
            .transform_calculate(reached=repr(reached))
        )
        out = [heat, does_not_fit(base), outline]
        if step >= LABEL_MIN_CELL:
            out.append(
                base.mark_text(fontSize=10)
                .encode(
                    text=alt.Text("fraction_of_ceiling:Q", format=".0%"),
                    color=alt.condition(
                        alt.datum.fraction_of_ceiling > 0.55, alt.value(INK), alt.value("white")
                    ),
                )
                .transform_filter(_fits(True))
            )
        return out

    def subtitle(sel: Selection) -> list[str]:
        return [
            f"Colour: arithmetic intensity as a fraction of its asymptotic ceiling; "
            f"{ceiling_text(sel)}; outlined: {reached}.",
            ridge_text(sel),
        ]

    return _heatmap(
        ds, model, hardware, "fraction of the decode ceiling", layers, subtitle, **options
    )


def bottleneck_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> alt.FacetChart:
    """Heatmap of what bounds decode: memory-bound, compute-bound or does not fit, batch x
    context, faceted KV heads (columns) x KV dtype (rows). ``options`` as ``ceiling_chart``.
    """

    def layers(base: alt.Chart, sel: Selection, step: int) -> list[alt.Chart]:
        return [
            base.mark_rect().encode(
                color=alt.Color(
                    "status:N",
                    title=None,
                    scale=category_scale(MEMORY_BOUND, COMPUTE_BOUND, DOES_NOT_FIT),
                ),
            )
        ]

    def subtitle(sel: Selection) -> list[str]:
        point = float(np.max(sel.ds["ridge_point"].values))
        return [
            f"Compute-bound from arithmetic intensity {point:.0f} "
            f"{unit('ridge_point')} (the ridge point); grey: weights and caches exceed "
            f"memory.",
            ridge_text(sel),
        ]

    return _heatmap(ds, model, hardware, "what bounds decode", layers, subtitle, **options)
