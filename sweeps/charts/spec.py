"""A chart's Vega-Lite spec under the package's theme: what every figure module hands the
renderer, whatever its kind (the per-slice charts, the cross-device roofline, the serving,
technique, size and simulated figures)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import altair as alt

from .theme import size_of

Builder = Callable[..., Any]
"""A chart builder: its arguments (a grid or rows, what to show, ``width``, ...) to an Altair
chart."""


def spec_of(chart: Any, width: str) -> dict[str, Any]:
    """``chart.to_dict()`` under the registered theme of ``width``; not validated against the
    Vega-Lite schema again (half the time of a small chart; the tests validate every kind)."""
    with alt.theme.enable(size_of(width).theme):
        spec: dict[str, Any] = chart.to_dict(validate=False)
    return spec


def chart_spec(builder: Builder, width: str, /, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The spec (``spec_of``) of the chart ``builder(*args, **kwargs)`` draws."""
    return spec_of(builder(*args, **kwargs), width)
