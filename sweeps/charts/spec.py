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


SUBTITLE_LINES = 4
"""Lines a figure's subtitle may hold; the caption's further sentences (how the figure was
thinned, what it leaves out) go to the spec's ``description``: the caption file and the
report print them under the figure (``shortened``)."""


def spec_of(chart: Any, width: str) -> dict[str, Any]:
    """``chart.to_dict()`` under the registered theme of ``width``, its subtitle ``shortened``;
    not validated against the Vega-Lite schema again (half the time of a small chart; the
    tests validate every kind)."""
    with alt.theme.enable(size_of(width).theme):
        spec: dict[str, Any] = chart.to_dict(validate=False)
    return shortened(spec)


def _ends_sentence(line: str) -> bool:
    return line.rstrip().endswith((".", ".)", ":", ";"))


def shortened(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with at most ``SUBTITLE_LINES`` subtitle lines: the first whole sentences that
    fit (a sentence cut only where the first is longer), the rest moved, in order, to the
    front of its ``description``."""
    head = spec.get("title")
    if not isinstance(head, dict):
        return spec
    subtitle = head.get("subtitle", [])
    lines = [subtitle] if isinstance(subtitle, str) else list(subtitle)
    if len(lines) <= SUBTITLE_LINES:
        return spec
    ends = [n for n in range(1, SUBTITLE_LINES + 1) if _ends_sentence(lines[n - 1])]
    keep = ends[-1] if ends else SUBTITLE_LINES
    rest = " ".join([*lines[keep:], *([spec["description"]] if spec.get("description") else [])])
    return {**spec, "title": {**head, "subtitle": lines[:keep]}, "description": rest}


def chart_spec(builder: Builder, width: str, /, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The spec (``spec_of``) of the chart ``builder(*args, **kwargs)`` draws."""
    return spec_of(builder(*args, **kwargs), width)
