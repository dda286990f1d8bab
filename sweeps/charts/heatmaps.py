"""The decode heatmaps: batch across, context down, one panel per KV-head and KV-dtype setting.

``ceiling``: the fraction of the asymptotic ceiling reached. ``bottleneck``: memory- or
compute-bound. Both grey out the cells beyond the memory wall ("does not fit") and mark the
first compute-bound batch of each row with a black bar on a white halo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from sweeps.outputs import Kind, register

from .captions import crossing_text, ridge_text, wall_text
from .data import (
    KV_FACETS,
    Selection,
    kv_facets,
    percent_labels,
    reached,
    select,
    shown_percent,
    spaced,
    status,
    thin,
    tidy,
)
from .theme import (
    COMPUTE_BOUND,
    DOES_NOT_FIT,
    HALO,
    INK,
    MEMORY_BOUND,
    SEQUENTIAL,
    category_scale,
    fit_title,
    heading,
    percent_title,
    themed,
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
LABEL_MIN_CELL = 26
"""Cells at least this wide [px] carry their value as text."""


def _ridge_mark(ds: xr.Dataset) -> xr.DataArray:
    """True at the first compute-bound batch of each row (read from the flags), where that
    batch fits: beyond the memory wall the ridge is never reached."""
    compute = ds["bottleneck"] == 1
    return compute & (compute.cumsum("batch") == 1) & ds["feasible"]


MOST_ROWS = 40
"""Contexts a heatmap draws at most, log-spaced (the rows of one facet)."""


def most_columns(sel: Selection) -> int:
    """Batches a heatmap's facet row has room for at the smallest cell width [1]."""
    columns = max(1, sel.ds.sizes.get("kv_heads", 1))
    legend = 150 if sel.size.legend == "right" else 0
    room = sel.size.width - sel.size.left - 12 * (columns - 1) - legend
    return max(2, int(room // (columns * sel.size.cell[0])))


def fit_axes(ds: xr.Dataset, sel: Selection) -> tuple[xr.Dataset, str]:
    """``ds`` with at most ``most_columns`` batches and ``MOST_ROWS`` contexts, log-spaced
    (``data.spaced``, ends kept), and the caption's note saying so, or ''. A long axis
    (``batch = 1..2048 step 1``) is drawn thinned, never spelled value by value into the
    spec (vl-convert ran out of stack on the sort list of 2,048 batches)."""
    most = {"batch": most_columns(sel), "context": MOST_ROWS}
    keep = {d: spaced(ds[d].values, n) for d, n in most.items() if ds.sizes[d] > n}
    if not keep:
        return ds, ""
    said = ", ".join(f"{len(i)} of {ds.sizes[d]:,} {d} values" for d, i in keep.items())
    note = f"Axes thinned to fit the figure ({said}, log-spaced); the Parquet files have all."
    return ds.isel(keep), note


def decode_cells(sel: Selection) -> tuple[pl.DataFrame, str]:
    """Tidy decode cells of a selection, thinned to ``sel.max_cells``; the thinning note.

    ``reached`` and ``label`` (the written percentage) come from ``data.reached``, the one
    rule the outline, the legend, the caption and the report share.
    """
    ds, note = thin(sel.ds, HEAT_DIMS, ("batch", "context"), sel.max_cells)
    ds, fitted = fit_axes(ds, sel)
    note = " ".join(line for line in (note, fitted) if line)
    ds = ds.assign(
        ridge_mark=_ridge_mark(ds),
        reached=reached(ds["fraction_of_ceiling"], ds["feasible"], sel.threshold),
        shown=shown_percent(ds["fraction_of_ceiling"], sel.threshold),
    )
    frame = tidy(ds, (*HEAT_VARIABLES, "ridge_mark", "reached", "shown"), HEAT_DIMS)
    labels = percent_labels(
        frame["fraction_of_ceiling"].fill_null(np.nan).to_numpy(), sel.threshold
    )
    return status(
        frame.with_columns(label=pl.Series(labels, dtype=pl.String)), "feasible", "bottleneck"
    ), note


def _step(frame: pl.DataFrame, sel: Selection) -> tuple[int, int]:
    """Cell width and height [px] that fit the figure's width."""
    columns = max(1, frame["kv_heads"].n_unique())
    batches = max(1, frame["batch"].n_unique())
    low, high = sel.size.cell
    room = (
        sel.size.width
        - sel.size.left
        - 12 * (columns - 1)
        - (0 if sel.size.legend != "right" else 150)
    )
    step = int(np.clip(room / (columns * batches), low, high))
    return step, max(step, low + 8)


def _stacked_titles(sel: Selection, height: int) -> bool:
    """Whether the context title is too long for one facet row's height, so that it moves
    into the row header ("context [token] by kv dtype") instead of overprinting [-]."""
    rows = sel.ds.sizes.get("kv_dtype", 1)
    return rows > 1 and sel.ds.sizes["context"] * height < 0.62 * (sel.size.font + 1) * 16


def _order(frame: pl.DataFrame, dim: str) -> list[int]:
    """The values of ``dim`` the frame draws, in the grid's order (thinned: ``fit_axes``)."""
    return [int(v) for v in frame[dim].unique(maintain_order=True)]


def _axes(sel: Selection, frame: pl.DataFrame, step: int, height: int) -> dict[str, Any]:
    batches = _order(frame, "batch")
    panel = step * len(batches) + 12  # a facet column's width and spacing [px]
    return {
        "x": alt.X(
            "batch:O",
            title=fit_title(title("batch"), panel, sel.size.font + 1),
            sort=batches,
            axis=alt.Axis(labelAngle=-45 if step < LABEL_MIN_CELL else 0, labelOverlap="greedy"),
        ),
        "y": alt.Y(
            "context:O",
            title=None if _stacked_titles(sel, height) else title("context"),
            sort=_order(frame, "context"),
            axis=alt.Axis(format=",", labelOverlap="greedy"),
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


def _facet(layers: list[alt.Chart], frame: pl.DataFrame, sel: Selection, height: int) -> Any:
    rows = f"{title('context')} by {title('kv_dtype')}" if _stacked_titles(sel, height) else ""
    return kv_facets(alt.layer(*layers, data=frame), sel, rows)


def _ridge_bars(base: alt.Chart, frame: pl.DataFrame, height: int) -> list[alt.Chart]:
    """The first compute-bound batch: a black bar on a white halo, seen on every colour."""
    x = alt.X("batch:O", sort=_order(frame, "batch"), bandPosition=0)
    return [
        base.mark_tick(orient="vertical", thickness=thickness, size=height, color=color)
        .encode(x=x)
        .transform_filter(alt.datum.ridge_mark)
        for thickness, color in ((7, HALO), (3, INK))
    ]


def _heatmap(
    ds: xr.Dataset,
    model: str | None,
    hardware: str | None,
    what: str,
    layers: Callable[[alt.Chart, Selection, int], list[alt.Chart]],
    subtitle: Callable[[Selection], list[str]],
    **options: Any,
) -> Any:
    sel = select(ds, model, hardware, **options)
    frame, note = decode_cells(sel)
    step, height = _step(frame, sel)
    base = (
        alt.Chart()
        .encode(**_axes(sel, frame, step, height), tooltip=_tooltips())
        .properties(width=alt.Step(step), height=alt.Step(height))
    )
    marks = [*layers(base, sel, step), *_ridge_bars(base, frame, height)]
    chart = _facet(marks, frame, sel, height)
    lines = [*subtitle(sel), *sel.notes, *([note] if note else [])]
    return chart.properties(title=heading(sel.headline(what), lines, sel.size))


def _fits(feasible: bool) -> alt.FieldEqualPredicate:
    return alt.FieldEqualPredicate(field="feasible", equal=feasible)


def symbol_orient(sel: Selection) -> Any:
    """Where the symbol legends go: the theme's place on screen; above the panels in print,
    so that the gradient alone sits below and the figure keeps its column width."""
    return alt.Undefined if sel.size.legend == "right" else "top"


def does_not_fit(base: alt.Chart, sel: Selection) -> alt.Chart:
    """The grey layer of cells beyond the memory wall, in the legend as "does not fit"."""
    return (
        base.mark_rect()
        .encode(
            fill=alt.Fill(
                "status:N",
                scale=category_scale(DOES_NOT_FIT),
                legend=alt.Legend(title=None, symbolType="square", orient=symbol_orient(sel)),
            ),
        )
        .transform_filter(_fits(False))
    )


def reached_label(threshold: float) -> str:
    """Legend entry of the outline: ``≥ 90% of ceiling`` [-]."""
    return f"≥ {percent_labels(np.asarray([threshold]), threshold)[0]} of ceiling"


def _ceiling_layers(base: alt.Chart, sel: Selection, step: int) -> list[alt.Chart]:
    """The share of the ceiling, the grey cells, the outline of ``reached`` and the labels."""
    entry = reached_label(sel.threshold)
    heat = (
        base.mark_rect(stroke="white", strokeWidth=0.5)
        .encode(
            color=alt.Color(
                "fraction_of_ceiling:Q",
                title=percent_title("fraction_of_ceiling"),
                scale=alt.Scale(scheme=SEQUENTIAL, domain=[0, 1]),
                legend=alt.Legend(format=".0%", gradientLength=12 * sel.size.font),
            ),
        )
        .transform_filter(_fits(True))
    )
    outline = (
        base.mark_rect(fill=None, fillOpacity=0, strokeWidth=2.5)
        .encode(
            stroke=alt.Stroke(
                "outline:N",
                scale=alt.Scale(domain=[entry], range=[INK]),
                legend=alt.Legend(
                    title=None,
                    orient=symbol_orient(sel),
                    symbolType="square",
                    symbolFillColor=HALO,
                    symbolStrokeColor=INK,
                    symbolStrokeWidth=2.5,
                ),
            ),
        )
        .transform_filter(alt.datum.reached)
        .transform_calculate(outline=repr(entry))
    )
    out = [heat, does_not_fit(base, sel), outline]
    if step >= LABEL_MIN_CELL:
        out.append(
            base.mark_text()
            .encode(
                text=alt.Text("label:N"),
                color=alt.condition(alt.datum.shown > 55, alt.value(INK), alt.value("white")),
            )
            .transform_filter(_fits(True))
        )
    return out


def _ceiling_caption(sel: Selection) -> list[str]:
    """The finding in numbers, then the key."""
    key = (
        f"Colour: arithmetic intensity as a share of its asymptotic ceiling; outlined: "
        f"{reached_label(sel.threshold)} (ceiling_fraction)."
    )
    return [line for line in (wall_text(sel), crossing_text(sel), key, ridge_text(sel)) if line]


@themed
def ceiling_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> Any:
    """Heatmap of the fraction of the asymptotic decode ceiling reached [1], batch x context,
    faceted KV heads (columns) x KV dtype (rows).

    Cells that reach ``ds.attrs['ceiling_fraction']`` (``data.reached``) are outlined; cells
    beyond the memory wall form the grey "does not fit" layer; a black bar marks the first
    compute-bound batch. The caption states the share of the ceiling at the memory wall and
    the context from which the ceiling is below the ridge point.

    Parameters
    ----------
    ds
        A grid (``sweeps.run``) with the decode analysis.
    model
        The model drawn (default: the grid's first).
    hardware
        The device drawn (default: the grid's first).
    **options
        ``tp`` and ``weight_dtype`` (the slice drawn, default the grid's first), ``pick`` (see
        ``sweeps.charts.data.choose``), ``max_cells`` [cell] (thinned beyond), ``width``
        (``sweeps.charts.theme.SIZES``: ``screen``, ``single-column``, ``double-column``).

    Returns
    -------
    alt.Chart
        The Altair chart; its title and subtitle are the caption
        (``sweeps.charts.rendering.caption``).
    """
    return _heatmap(
        ds,
        model,
        hardware,
        "fraction of the decode ceiling",
        _ceiling_layers,
        _ceiling_caption,
        **options,
    )


@themed
def bottleneck_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> Any:
    """Heatmap of what bounds decode: memory-bound, compute-bound or does not fit, batch x
    context, faceted KV heads (columns) x KV dtype (rows).

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
    alt.Chart
        The Altair chart; its title and subtitle are the caption
        (``sweeps.charts.rendering.caption``).
    """

    def layers(base: alt.Chart, sel: Selection, step: int) -> list[alt.Chart]:
        return [
            base.mark_rect().encode(
                color=alt.Color(
                    "status:N",
                    title=None,
                    scale=category_scale(MEMORY_BOUND, COMPUTE_BOUND, DOES_NOT_FIT),
                    legend=alt.Legend(  # in a print column: two entries a line
                        orient=symbol_orient(sel), columns=2 if sel.size.width < 400 else 3
                    ),
                ),
            )
        ]

    def subtitle(sel: Selection) -> list[str]:
        point = float(np.max(sel.ds["ridge_point"].values))
        return [
            f"Compute-bound from arithmetic intensity {point:.0f} "
            f"{unit('ridge_point')} (the ridge point); grey: weights and caches exceed "
            f"memory.",
            *[line for line in (crossing_text(sel), ridge_text(sel)) if line],
        ]

    return _heatmap(ds, model, hardware, "what bounds decode", layers, subtitle, **options)


CEILING = register(Kind(
    name="ceiling",
    title="How close decode gets to its ceiling",
    order=10,
    default=True,
    doc="heatmap per model and device: decode's share of its ceiling 2P/KV_seq, batch by context",
    builder=ceiling_chart,
))  # fmt: skip
BOTTLENECK = register(Kind(
    name="bottleneck",
    title="What bounds decode",
    order=20,
    default=True,
    doc="heatmap per model and device: memory-bound, compute-bound or does not fit",
    builder=bottleneck_chart,
))  # fmt: skip
