"""The simulated plans' TTFT and TPOT as cumulative distributions, one line per plan.

Each simulated plan (``sweeps.studies.serving.simulate.plans``) gives every request's TTFT and
TPOT; a CDF
chart of each draws them for all plans of the run, the objective as a rule, so a reader sees
what share of requests meets it (the plan's SLO attainment) and how long the tail is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps.outputs import Kind, register

KIND = register(Kind(
    name="simulated",
    title="Simulated plans: TTFT and TPOT of every request",
    order=100,
    chosen=False,
    doc="with [serving] simulate: the TTFT and TPOT of every simulated request, as CDFs",
))  # fmt: skip
"""The report section of these figures."""
POINTS = 200
"""Quantiles drawn per plan (the CDF's resolution)."""

METRICS = {
    "ttft": ("ttft", "Time to first token [s]", "ttft_slo_s"),
    "tpot": ("tpot", "Time per output token [s]", "tpot_slo_s"),
}


def _label(row: dict[str, Any]) -> str:
    clients = row.get("concurrency")
    load = f"{row['arrival_rate']:g}/s" if clients is None else f"{clients} clients"
    return (
        f"{row['model']} {row['hardware']} tp{row['tp']} B{row['batch']} x{row['replicas']} "
        f"{row['scheduler']} I{row['prompt_tokens']} O{row['output_tokens']} "
        f"{load}"
    )


def cdf_frame(simulated: list[Any], metric: str) -> Any:
    """``POINTS`` quantiles of ``metric`` of each plan (fewer where the plans' lines would
    pass Altair's row limit together, at least 2): columns plan, value, share."""
    import polars as pl

    from .data import altair_row_limit

    timelines = [getattr(one.timeline, METRICS[metric][0]) for one in simulated]
    drawn = [(one, t[~np.isnan(t)]) for one, t in zip(simulated, timelines, strict=True)]
    drawn = [(one, values) for one, values in drawn if values.size]
    points = max(2, min(POINTS, altair_row_limit() // max(1, len(drawn))))
    shares = np.linspace(0.0, 1.0, points)
    parts = [
        pl.DataFrame({
            "plan": [_label(one.row)] * points,
            "value": np.quantile(values, shares),
            "share": shares,
        })
        for one, values in drawn
    ]  # fmt: skip
    return pl.concat(parts) if parts else pl.DataFrame({"plan": [], "value": [], "share": []})


def cdf_chart(simulated: list[Any], metric: str, objective: float) -> Any:
    """The CDF chart of ``metric`` (``ttft`` or ``tpot``) with the objective as a rule."""
    import altair as alt

    from .theme import series_scale

    frame = cdf_frame(simulated, metric).to_pandas()
    title = METRICS[metric][1]
    plans = list(dict.fromkeys(str(p) for p in frame["plan"]))  # the colour-blind-safe hues
    lines = (
        alt.Chart(frame)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("value:Q", title=title),
            y=alt.Y("share:Q", title="Share of requests", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("plan:N", title="Simulated plan", scale=series_scale(plans)),
            strokeDash=alt.StrokeDash("plan:N", title="Simulated plan"),  # beside the hue
        )
    )
    rule = alt.Chart(alt.Data(values=[{"slo": objective}])).mark_rule(strokeDash=[4, 4])
    rule = rule.encode(x="slo:Q")
    return (lines + rule).properties(
        title=f"Simulated {metric.upper()}: cumulative share of requests (dashed: objective)"
    )


def cdf_figures(simulated: list[Any], sweep: Any) -> list[Any]:
    """The report's figures of the simulated plans: a TTFT and a TPOT CDF, the objectives of
    ``sweep`` drawn as rules (``charts/simulated-ttft-cdf``, ``-tpot-cdf``)."""
    from sweeps.charts.failures import built
    from sweeps.charts.output import Settings
    from sweeps.charts.spec import spec_of

    settings = Settings.of(sweep)

    def spec(metric: str, objective: float) -> dict[str, Any]:
        return spec_of(cdf_chart(simulated, metric, objective), settings.width)

    # a chart that cannot be built is skipped, saying why, as the other figures are
    return [
        built(f"{KIND.name}-{metric}-cdf", KIND.name, "all", None, spec, metric,
              float(getattr(sweep.studies["serving"], key)))
        for metric, (_, _, key) in METRICS.items()
    ]  # fmt: skip
