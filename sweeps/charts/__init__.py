"""Figures of a sweep: Altair chart builders (pure presentation, no physics), rendering to
offline HTML, PNG and SVG, the report page, and the pipeline hook that writes them.

Every builder takes the grid (``xarray.Dataset``) plus the model and device to show (default:
the first) and returns an Altair chart; units in axis titles come from the variable registry.
"""

from sweeps.charts.heatmaps import bottleneck_chart, ceiling_chart
from sweeps.charts.lines import ai_vs_batch_chart, roofline_chart
from sweeps.charts.output import (
    BUILDERS,
    chart_specs,
    output_hooks,
    render,
    report_html,
    write_figures,
)

__all__ = [
    "BUILDERS",
    "ai_vs_batch_chart",
    "bottleneck_chart",
    "ceiling_chart",
    "chart_specs",
    "output_hooks",
    "render",
    "report_html",
    "roofline_chart",
    "write_figures",
]
