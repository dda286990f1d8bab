"""The names of a result's outputs, declared once: the chart kinds (``[outputs] charts``), the
order the report shows them in and their section headings. Ground floor: imports nothing of
the package, so the config schema and the charts both read it without Altair or xarray.

Extension point: a new kind (a serving or calibration chart) is named here and its builder
registered in ``sweeps.charts.output.BUILDERS``; the report places it by ``REPORT_ORDER``.
"""

from __future__ import annotations

from typing import Final, Literal

ChartKind = Literal[
    "ceiling",
    "bottleneck",
    "ai-vs-batch",
    "roofline",
    "serving",
    "speculative",
    "prefix",
    "model-size",
]
CHART_KINDS: Final[tuple[ChartKind, ...]] = ("ceiling", "bottleneck", "ai-vs-batch", "roofline")
"""The default of ``[outputs] charts``: the kinds drawn per model and device."""
SERVING: Final = "serving"
"""The serving figures (Pareto front, time per request, fleet against arrival rate), drawn
per model from the whole grid, only where it has the serving analysis (a ``[serving]``
table); ``[outputs] charts`` may ask for them besides ``CHART_KINDS``."""
DEVICES: Final = "roofline-devices"
"""The cross-device roofline, written with ``roofline`` when a sweep has several devices."""
SPECULATIVE: Final = "speculative"
"""The speculative figures (speedup against batch, the verify step on the roofline), drawn per
model from the whole grid where it has the speculative analysis (``axes.spec_tokens``)."""
PREFIX: Final = "prefix"
"""The prefix-caching figure (TTFT against hit rate per tier), per model, where the grid has the
prefix analysis (``axes.prefix_hit_rate``)."""
MODEL_SIZE: Final = "model-size"
"""The model-size heatmap (parameters against context, coloured by the share of the ceiling
at the memory wall), one per device, drawn from every model of the sweep where a device ran
two or more; ``[outputs] charts`` may ask for it besides ``CHART_KINDS``."""
REPORT_ORDER: Final = (
    *CHART_KINDS,
    DEVICES,
    MODEL_SIZE,
    SERVING,
    SPECULATIVE,
    PREFIX,
    "calibration",
)
"""Chart kinds in the order the report shows them: the headline heatmap first. Kinds not
listed follow, in the order they were drawn."""
SECTION_TITLES: Final = {
    "ceiling": "How close decode gets to its ceiling",
    "bottleneck": "What bounds decode",
    "ai-vs-batch": "Arithmetic intensity against batch",
    "roofline": "Roofline",
    DEVICES: "Across devices",
    MODEL_SIZE: "Model size: the share of the ceiling at the memory wall",
    SERVING: "Serving: speed per user, time per request, fleet and cost",
    SPECULATIVE: "Speculative decoding: speedup and break-even batch",
    PREFIX: "Prefix caching: TTFT against hit rate and KV tier",
    "calibration": "Calibration",
    "simulated": "Simulated plans: TTFT and TPOT of every request",
}
"""The report's heading of each kind's section (a kind not listed: its name)."""
