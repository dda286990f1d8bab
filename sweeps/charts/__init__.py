"""Figures of a sweep: Altair chart builders (pure presentation, no physics), rendering to
offline HTML, PNG, SVG and PDF, the report page, and the pipeline hook that writes them.

Every builder takes the grid (``xarray.Dataset``) plus the model and device to show (default:
the first) and returns an Altair chart drawn at the tp and weight dtype ``data.choose`` picks
(the smallest at which the model fits, unless told); units in axis titles come from the
variable registry. The look is the registered Altair theme ``sweeps``, so charts compose with
``|``, ``&`` and ``+``. ``write_figures_streamed`` writes the figures and report from one
model-and-device slice at a time.

The names below are imported only when asked for, so that importing ``sweeps.charts`` stays
light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sweeps.charts.heatmaps import bottleneck_chart as bottleneck_chart
    from sweeps.charts.heatmaps import ceiling_chart as ceiling_chart
    from sweeps.charts.hooks import output_hooks as output_hooks
    from sweeps.charts.hooks import time_figures as time_figures
    from sweeps.charts.lines import ai_vs_batch_chart as ai_vs_batch_chart
    from sweeps.charts.output import Settings as Settings
    from sweeps.charts.output import chart_specs as chart_specs
    from sweeps.charts.output import slices as slices
    from sweeps.charts.output import sweep_figures as sweep_figures
    from sweeps.charts.output import write_figures as write_figures
    from sweeps.charts.output import write_figures_streamed as write_figures_streamed
    from sweeps.charts.rendering import render as render
    from sweeps.charts.roofline import compare_chart as compare_chart
    from sweeps.charts.roofline import roofline_chart as roofline_chart

_LAZY = {
    "ceiling_chart": "sweeps.charts.heatmaps",
    "bottleneck_chart": "sweeps.charts.heatmaps",
    "ai_vs_batch_chart": "sweeps.charts.lines",
    "roofline_chart": "sweeps.charts.roofline",
    "compare_chart": "sweeps.charts.roofline",
    "render": "sweeps.charts.rendering",
    "output_hooks": "sweeps.charts.hooks",
    "time_figures": "sweeps.charts.hooks",
    **dict.fromkeys(
        (
            "Settings",
            "chart_specs",
            "slices",
            "sweep_figures",
            "write_figures",
            "write_figures_streamed",
        ),
        "sweeps.charts.output",
    ),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """Import the heavy modules (Altair, xarray, vl-convert) only when one of their names is
    asked for."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'sweeps.charts' has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
