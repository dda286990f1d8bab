"""Ticks of log axes that print: spans without empty decades, labels thinned so none touch."""

from __future__ import annotations

import math

import altair as alt
import numpy as np

from .lines import spaced


def tight_span(values: np.ndarray, below: float = 1.5, above: float = 1.5) -> tuple[float, float]:
    """A log axis' span over the positive, finite ``values`` with a margin (x ``below`` under
    the least, x ``above`` over the largest), not widened to whole decades, so no decade of
    the axis is empty [same unit]."""
    v = values[np.isfinite(values) & (values > 0)]
    return float(v.min()) / below, float(v.max()) * above


def log_ticks(span: tuple[float, float]) -> list[float]:
    """The powers of ten inside ``span``; where fewer than two fall inside, 1-2-5 steps
    too [same unit]."""
    lo, hi = math.floor(math.log10(span[0])), math.ceil(math.log10(span[1]))
    decades = [10.0**k for k in range(lo, hi + 1) if span[0] <= 10.0**k <= span[1]]
    if len(decades) >= 2:
        return decades
    steps = [m * 10.0**k for k in range(lo, hi + 1) for m in (1, 2, 5)]
    return [t for t in steps if span[0] <= t <= span[1]]


def log_axis(
    values: np.ndarray, length: float, font: float, across: bool
) -> tuple[alt.Scale, alt.Axis]:
    """A log axis of ``length`` [px] over ``values``: the span ``tight_span`` gives, ticks at
    its powers of ten (or 1-2-5 steps), where fewer than two fall inside at the data's ends
    (two significant digits), thinned so that no two labels touch, each label written once
    (Vega's own ticks on a span inside one decade printed "40" and "50" run together)."""
    v = values[np.isfinite(values) & (values > 0)]
    if v.size == 0:
        return alt.Scale(type="log"), alt.Axis()
    span = tight_span(v)
    ticks = log_ticks(span)
    if len(ticks) < 2:
        ticks = sorted({float(f"{t:.2g}") for t in (float(v.min()), float(v.max()))})
    shown = thinned(ticks, span, length, font, across)
    scale = alt.Scale(type="log", domain=list(span), nice=False)
    plain = max(shown) < 1e5  # 0.1 and 10000 as written; larger in SI prefixes (never "100m")
    return scale, alt.Axis(values=shown, format="~g" if plain else "~s")


def si(value: float) -> str:
    """``value`` as a log axis labels it: SI prefixes from a thousand up (``~s``) [-]."""
    for power, prefix in ((15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k")):
        if value >= 10.0**power:
            return f"{value / 10.0**power:g}{prefix}"
    return f"{value:g}"


def thinned(ticks: list[float], span: tuple[float, float], length: float, font: float,
            across: bool) -> list[float]:  # fmt: skip
    """``ticks`` of a log axis of ``length`` [px] over ``span``, thinned so that no two labels
    touch (``lines.spaced``): along an x axis (``across``) each label is as wide as its text,
    along a y axis as tall as its font [same unit]."""
    if len(ticks) < 2:
        return ticks
    logs = np.log10(np.asarray(ticks))
    positions = (logs - math.log10(span[0])) / math.log10(span[1] / span[0]) * length
    sizes = np.array([len(si(t)) * 0.64 * font if across else 1.2 * font for t in ticks])
    return [ticks[i] for i in spaced(positions, sizes, 0.8 * font)]
