"""Figures of a sweep: Altair chart builders (pure presentation, no physics), rendering to
offline HTML, PNG, SVG and PDF, the report page, and the pipeline hook that writes them.

Every builder takes the grid (``xarray.Dataset``) plus the model and device to show (default:
the first) and returns an Altair chart drawn at the tp and weight dtype ``data.choose`` picks
(the smallest at which the model fits, unless told); units in axis titles come from the
variable registry. The look is the registered Altair theme ``sweeps``, so charts compose with
``|``, ``&`` and ``+``. ``write_figures_streamed`` writes the figures and report from one
model-and-device slice at a time.
"""

from sweeps.charts.heatmaps import bottleneck_chart, ceiling_chart
from sweeps.charts.lines import ai_vs_batch_chart
from sweeps.charts.output import (
    BUILDERS,
    Settings,
    chart_specs,
    output_hooks,
    slices,
    sweep_figures,
    time_figures,
    write_figures,
    write_figures_streamed,
)
from sweeps.charts.rendering import render
from sweeps.charts.roofline import compare_chart, roofline_chart

__all__ = [
    "BUILDERS",
    "Settings",
    "ai_vs_batch_chart",
    "bottleneck_chart",
    "ceiling_chart",
    "chart_specs",
    "compare_chart",
    "output_hooks",
    "render",
    "roofline_chart",
    "slices",
    "sweep_figures",
    "time_figures",
    "write_figures",
    "write_figures_streamed",
]
