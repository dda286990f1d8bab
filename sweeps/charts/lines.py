"""Arithmetic intensity against batch: one line per context, each its own hue, labelled at its
end (spread apart so that no two labels overprint), with its ceiling, the ridge point and the
memory wall."""

from __future__ import annotations

import itertools
import math
from typing import Any, cast

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from sweeps.outputs import Kind, register

from .data import KV_FACETS, Selection, kv_facets, select
from .heatmaps import decode_cells
from .theme import (
    INK,
    fit_title,
    heading,
    number,
    series_scale,
    series_shapes,
    themed,
    title,
    tooltip,
    unit,
)

LINE_KEYS = ("context", *KV_FACETS)
LABEL_GAP = 1.25
"""Vertical room of one end label, in font sizes."""


def log_domain(values: np.ndarray) -> tuple[float, float]:
    """Whole decades spanning the positive, finite ``values`` [same unit]."""
    v = values[np.isfinite(values) & (values > 0)]
    return 10.0 ** math.floor(np.log10(v.min())), 10.0 ** math.ceil(np.log10(v.max()))


def spread(values: np.ndarray, gap: float) -> np.ndarray:
    """``values`` moved as little as possible (least squares) so that neighbours are at least
    ``gap`` apart (same unit), order kept: the end-label positions of lines that end close
    together. Exact: with ``q_i = p_i - i gap`` the constraint is ``q`` non-decreasing, an
    isotonic regression of ``v_i - i gap`` (pool adjacent violators)."""
    order = np.argsort(values, kind="stable")
    shift = np.arange(len(values)) * gap
    target = np.asarray(values, dtype=float)[order] - shift
    blocks: list[list[float]] = []  # [mean, count]
    for value in target:
        blocks.append([float(value), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1] = [
                (blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count),
                blocks[-1][1] + count,
            ]
    fitted = np.concatenate([np.full(int(count), mean) for mean, count in blocks])
    out = np.empty(len(values))
    out[order] = fitted + shift
    return out


def _ends(frame: pl.DataFrame, last: int, decades: float, sel: Selection) -> pl.DataFrame:
    """Rows to draw at the ends of the lines: ``mark`` "wall" at each line's last fitting
    batch where its memory wall falls inside the sweep, and "label" at the sweep's last batch
    (right of the panel), spread so that no two labels overprint."""
    walls = (
        frame.filter(pl.col("feasible") & (pl.col("max_batch") <= last))
        .sort("batch")
        .group_by(LINE_KEYS, maintain_order=True)
        .last()
        .with_columns(mark=pl.lit("wall"))
    )
    context = pl.col("context").map_elements(lambda c: f"{c:,} tok", pl.String)
    labels = (
        frame.sort("batch")
        .group_by(LINE_KEYS, maintain_order=True)
        .last()
        .with_columns(
            mark=pl.lit("label"),
            end_label=pl.when(pl.col("max_batch") < 1)
            .then(pl.format("{}: does not fit", context))
            .when(pl.col("max_batch") <= last)
            .then(pl.format("{}, wall {}", context, pl.col("max_batch")))
            .otherwise(context),
        )
    )
    gap = LABEL_GAP * sel.size.font * decades / _panel_height(sel)
    parts = [walls]
    for _, part in labels.group_by(KV_FACETS, maintain_order=True):
        logs = np.log10(part["arithmetic_intensity"].to_numpy())
        parts.append(part.with_columns(label_y=pl.Series(10.0 ** spread(logs, gap))))
    return pl.concat(parts, how="diagonal_relaxed")


def _room(sel: Selection, columns: int) -> float:
    """Width of each of ``columns`` panels side by side that fills the figure, less the end
    labels right of each [px]."""
    labels = 9 * sel.size.font
    room = sel.size.width - sel.size.left - (140 if sel.size.legend == "right" else 0)
    return (room - 16 * (columns - 1)) / columns - labels


def _columns(sel: Selection) -> int:
    """KV-head panels side by side: on screen every one (a figure with many grows); in print
    as many as fit the column at the least panel width, the rest wrapped below [1]."""
    heads = sel.ds.sizes.get("kv_heads", 1)
    if sel.size.name == "screen":
        return heads
    least = int(0.8 * sel.size.panel_height)
    return next((c for c in range(heads, 1, -1) if _room(sel, c) >= least), 1)


def _panel_width(sel: Selection) -> int:
    least = int(0.8 * sel.size.panel_height)  # wider than tall
    return int(max(least, min(340, _room(sel, _columns(sel)))))


WRAPPED_HEIGHT = 0.6
"""Share of the size's panel height a print panel keeps where the KV-head panels wrap [1]."""


def _panel_height(sel: Selection) -> int:
    """Height of each panel [px]: the size's own, and ``WRAPPED_HEIGHT`` of it in print where
    the KV-head panels wrap (one setting a panel, stacked), so that four settings stacked stay
    within a page: 702 -> 526 px at 3.5 in, 885 -> 629 px at 7 in."""
    heads = sel.ds.sizes.get("kv_heads", 1)
    if sel.size.name == "screen" or _columns(sel) >= heads:
        return sel.size.panel_height
    return int(WRAPPED_HEIGHT * sel.size.panel_height)


LOG_LABELS = "datum.value >= 1000 ? format(datum.value, '~s') : format(datum.value, '~g')"
"""Labels of a log axis: SI prefixes from a thousand up, plain numbers below."""
TIPS = (
    ("batch", ""),
    ("context", ""),
    ("arithmetic_intensity", ".3~f"),
    ("ceiling", ".3~f"),
    ("fraction_of_ceiling", ".1%"),
    ("max_batch", ","),
    ("step_time_s", ".3~s"),
    ("tokens_per_s", ",.0f"),
)


def decade_ticks(span: tuple[float, float]) -> list[float]:
    """The powers of ten from ``span[0]`` to ``span[1]`` [same unit]."""
    return [10.0**k for k in range(round(math.log10(span[0])), round(math.log10(span[1])) + 1)]


def spaced(positions: np.ndarray, widths: np.ndarray, gap: float) -> list[int]:
    """Indices of the labels to write, centred at ``positions`` [px] (ascending), so that no
    two of ``widths`` [px] come within ``gap`` [px]: every k-th from the first, the smallest
    such k, and the last where it clears the one before it [-]."""

    def clear(i: int, j: int) -> bool:
        return bool(positions[j] - widths[j] / 2 >= positions[i] + widths[i] / 2 + gap)

    count = len(positions)
    for every in range(1, count + 1):
        kept = list(range(0, count, every))
        if all(clear(i, j) for i, j in itertools.pairwise(kept)):
            last = count - 1
            return [*kept, last] if kept[-1] != last and clear(kept[-1], last) else kept
    return [0]


def batch_ticks(batches: list[int], width: float, font: float) -> list[int]:
    """The batches [sequence] a log batch axis of ``width`` [px] labels: every one where their
    labels ("~s" format) clear each other, else a thinned set, first and last kept [-]."""
    logs = np.log10(np.asarray(batches, dtype=float))
    span = max(float(logs[-1] - logs[0]), 1e-9)
    positions = (logs - logs[0]) / span * width
    widths = np.array([len(f"{b:,}".replace(",", "")) * 0.64 * font for b in batches])
    return [batches[i] for i in spaced(positions, widths, 0.6 * font)]


def _encodings(
    frame: pl.DataFrame, sel: Selection
) -> tuple[alt.X, alt.Y, alt.Color, tuple[float, float]]:
    """Log batch (labels thinned to the panel), log intensity (whole decades over
    intensities, ceilings and ridge; its title in two lines where a panel is short), a hue
    per context; and the intensity span [FLOP/byte]."""
    batches = [int(b) for b in np.unique(frame["batch"].to_numpy())]
    contexts = [str(int(c)) for c in np.unique(frame["context"].to_numpy())]
    span = log_domain(
        pl.concat([frame["arithmetic_intensity"], frame["ceiling"], frame["ridge_point"]])
        .drop_nulls()
        .to_numpy()
    )
    x = alt.X(
        "batch:Q",
        title=title("batch"),
        scale=alt.Scale(type="log", nice=False, domain=[batches[0], batches[-1]]),
        axis=alt.Axis(format="~s", values=batch_ticks(batches, _panel_width(sel), sel.size.font)),
    )
    y = alt.Y(
        "arithmetic_intensity:Q",
        title=fit_title(title("arithmetic_intensity"), _panel_height(sel), sel.size.font + 1),
        scale=alt.Scale(type="log", domain=list(span), nice=False),
        axis=alt.Axis(values=decade_ticks(span), labelExpr=LOG_LABELS),
    )
    color = alt.Color(
        "context:N",
        title=title("context"),
        sort=contexts,
        scale=series_scale(contexts),
        legend=None,
    )
    return x, y, color, span


def ridge_label_side(
    ridge: float, ceilings: np.ndarray, span: tuple[float, float], height: float, font: float
) -> str:
    """Where the ridge point's label goes, ``above`` or ``below`` its line: the side whose
    band of one line of ``font`` [px] (on a log axis of ``height`` [px] over ``span``) no
    ceiling line crosses, else the side whose nearest ceiling is farther [-]."""
    per_px = math.log10(span[1] / span[0]) / height
    band = 1.4 * font * per_px  # the label's height and its gap, in decades
    logs = np.log10(ceilings[np.isfinite(ceilings) & (ceilings > 0)]) - np.log10(ridge)
    up = logs[logs >= 0]
    down = -logs[logs <= 0]
    clear_up = float(up.min()) if up.size else math.inf
    clear_down = float(down.min()) if down.size else math.inf
    if clear_up > band or clear_up >= clear_down:
        return "above"
    return "below"


def _layers(
    base: alt.Chart, x: alt.X, y: alt.Y, color: alt.Color, sel: Selection
) -> list[alt.Chart]:
    """Lines (dotted beyond the wall), points, ceilings, ridge point, walls and end labels."""
    point = float(np.max(sel.ds["ridge_point"].values))
    span = cast(dict[str, Any], y.to_dict())["scale"]["domain"]
    ceilings = np.asarray(sel.ds["ceiling"].values, dtype=float).reshape(-1)
    side = ridge_label_side(point, ceilings, tuple(span), _panel_height(sel), sel.size.font)
    above = side == "above"
    contexts = list(cast(dict[str, Any], color.to_dict())["sort"])
    shape = alt.Shape("context:N", scale=series_shapes(contexts), legend=None)
    cells = base.transform_filter(alt.datum.mark == "cell")
    fit = cells.transform_filter(alt.FieldEqualPredicate(field="feasible", equal=True))
    font = sel.size.font
    tips = [tooltip(name, fmt) for name, fmt in TIPS] + [alt.Tooltip("status:N", title="status")]
    return [
        cells.mark_line(strokeDash=[1, 3], strokeWidth=1.2, opacity=0.7).encode(
            x=x, y=y, color=color
        ),
        fit.mark_line(strokeWidth=2).encode(x=x, y=y, color=color),
        fit.mark_point(filled=True, size=3 * font).encode(  # a marker per context: lines cross
            x=x, y=y, color=color, shape=shape, tooltip=tips
        ),
        cells.mark_rule(strokeDash=[6, 4], strokeWidth=1.2, opacity=0.8).encode(
            y=alt.Y("max(ceiling):Q"), color=color
        ),
        cells.mark_rule(color=INK, strokeWidth=1.2, strokeDash=[2, 2]).encode(
            y=alt.Y("max(ridge_point):Q")
        ),
        cells.mark_text(
            align="left",
            baseline="bottom" if above else "top",
            dx=2,
            dy=-2 if above else 2,
            fontSize=font - 1,
        ).encode(
            x=alt.X("min(batch):Q"),
            y=alt.Y("max(ridge_point):Q"),
            text=alt.value(f"ridge point {number(point)} {unit('ridge_point')}"),
        ),
        base.transform_filter(alt.datum.mark == "wall")
        .mark_tick(orient="vertical", color=INK, thickness=0.22 * font, size=1.1 * font)
        .encode(x=x, y=y, tooltip=[tooltip("max_batch", ","), tooltip("context")]),
        base.transform_filter(alt.datum.mark == "label")
        .mark_text(align="left", dx=6, fontSize=font, fontWeight="bold")
        .encode(x=x, y=alt.Y("label_y:Q"), text="end_label:N", color=color),
    ]


@themed
def ai_vs_batch_chart(
    ds: xr.Dataset, model: str | None = None, hardware: str | None = None, **options: Any
) -> Any:
    """Decode arithmetic intensity [FLOP/byte] against batch [sequence] (log-log), one line per
    context in its own hue, labelled at its end, faceted KV heads (columns) x KV dtype (rows);
    in print, KV-head columns that do not fit side by side wrap below (one panel per setting).

    Dashed: each context's asymptotic ceiling; black dashes: the device's ridge point; a black
    bar at each line's memory wall (max batch); dotted: batches that do not fit.

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
    sel = select(ds, model, hardware, **options)
    frame, note = decode_cells(sel)
    x, y, color, (lo, hi) = _encodings(frame, sel)
    ends = _ends(frame, int(frame["batch"].to_numpy().max()), math.log10(hi / lo), sel)
    rows = pl.concat(
        [frame.with_columns(mark=pl.lit("cell")), ends], how="diagonal_relaxed"
    ).with_columns(pl.col("context").cast(pl.String))
    base = alt.Chart().properties(width=_panel_width(sel), height=_panel_height(sel))
    chart = kv_facets(
        alt.layer(*_layers(base, x, y, color, sel), data=rows),
        sel,
        spacing=16,
        columns=_columns(sel),
    )
    caption = [
        "Each line one context, labelled at the right with its memory wall (max batch; black "
        "bar: its last batch that fits); dotted: batches beyond the wall; dashed, same hue: "
        "the context's asymptotic ceiling.",
        *sel.notes,
        *([note] if note else []),
    ]
    return chart.properties(
        title=heading(sel.headline("arithmetic intensity against batch"), caption, sel.size)
    )


AI_VS_BATCH = register(Kind(
    name="ai-vs-batch",
    title="Arithmetic intensity against batch",
    order=30,
    default=True,
    doc="per model and device: decode's arithmetic intensity against batch, a line per context",
    builder=ai_vs_batch_chart,
))  # fmt: skip
