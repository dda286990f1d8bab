"""The one look of every chart: palette, fonts, axis titles from the variable registry.

Each colour means one thing in every chart (memory-bound is always the same orange, "does not
fit" always the same grey), and every axis title is the registry's ``label``, so units are
declared once, in ``sweeps.grid.variables``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import altair as alt

from sweeps.grid.variables import BOTTLENECK_FLAGS, REGISTRY

DOES_NOT_FIT = "does not fit"
MEMORY_BOUND, COMPUTE_BOUND = BOTTLENECK_FLAGS
DECODE, PREFILL = "decode", "prefill"

COLORS: dict[str, str] = {
    MEMORY_BOUND: "#e6862b",
    COMPUTE_BOUND: "#3b6fb6",
    DECODE: "#8e44ad",
    PREFILL: "#2a9d6f",
    DOES_NOT_FIT: "#c9c9c9",
}
"""Categorical colours, one meaning each across all charts."""

INK = "#222222"
"""Annotations: ridge rules, outlines, labels."""
SEQUENTIAL: Final = "viridis"
"""Scheme of continuous quantities (fraction of the ceiling)."""
CONTEXT_SCHEME: Final = "purples"
"""Ordinal scheme of decode lines by context: all purple (decode), darker = longer."""

FONT = "DejaVu Sans, Liberation Sans, Helvetica, Arial, sans-serif"
CELL = 30
"""Heatmap cell size [px]."""
PANEL = (300, 220)
"""Width and height of one line-chart panel [px]."""


def title(name: str) -> str:
    """Axis or legend title of a registry variable: its label, unit in brackets.

    Categorical variables (unit ``-``) show no bracket.
    """
    entry = REGISTRY[name]
    return entry.name.replace("_", " ") if entry.unit == "-" else entry.label


def unit(name: str) -> str:
    """The registry unit of ``name``."""
    return REGISTRY[name].unit


def category_scale(*names: str) -> alt.Scale:
    """Nominal scale over ``names`` with their fixed colours."""
    return alt.Scale(domain=list(names), range=[COLORS[n] for n in names])


def tooltip(name: str, fmt: str = "", field: str = "") -> alt.Tooltip:
    """Tooltip of a registry variable titled with its label (``field``: the column, if renamed)."""
    kind = "N" if unit(name) == "-" else "Q"
    kwargs: dict[str, Any] = {"title": title(name)}
    if fmt:
        kwargs["format"] = fmt
    return alt.Tooltip(f"{field or name}:{kind}", **kwargs)


def heading(text: str, subtitle: Sequence[str]) -> alt.TitleParams:
    """Chart title with subtitle lines."""
    return alt.TitleParams(text=text, subtitle=list(subtitle), anchor="start")


def finish(chart: Any, heading_: alt.TitleParams) -> Any:
    """Apply the title and the shared configuration (fonts, sizes, no frame) to a top-level
    chart. Sizes are chosen to stay legible at 2x PNG scale."""
    return (
        chart.properties(title=heading_)
        .configure(font=FONT, padding={"left": 8, "right": 8, "top": 8, "bottom": 8})
        .configure_title(
            fontSize=16,
            subtitleFontSize=12,
            subtitleColor="#444444",
            subtitlePadding=6,
            offset=12,
            color=INK,
        )
        .configure_axis(
            labelFontSize=11,
            titleFontSize=12,
            titleColor=INK,
            labelColor=INK,
            gridColor="#e6e6e6",
            domainColor="#888888",
            tickColor="#888888",
        )
        .configure_header(labelFontSize=12, titleFontSize=12, titleColor=INK, labelColor=INK)
        .configure_legend(
            labelFontSize=11,
            titleFontSize=12,
            titleColor=INK,
            labelColor=INK,
            orient="right",
            titleLimit=260,
            labelLimit=260,
        )
        .configure_view(stroke=None)
    )


def number(value: float) -> str:
    """Three significant digits, thousands separated, never in exponent form [-]."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
