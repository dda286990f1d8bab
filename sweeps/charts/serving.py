"""The serving charts of a sweep with a ``[serving]`` table, drawn from its grid alone.

``pareto_chart``: output tokens/s per device against tokens/s per user, one line per device and
serving mode over its Pareto front, the region meeting the TPOT objective shaded.
``request_time_chart``: the time of one request split into prefill (TTFT) and decode against
batch. ``fleet_chart``: devices and cost per million output tokens against arrival rate, the
cheapest colocated and the cheapest disaggregated plan (``sweeps.views.plans``).

Each chart shows one model, its first KV setting, one weight dtype and one workload (prompt
and output tokens), named in its caption. The objectives are the grid's ``ttft_slo_s`` and
``tpot_slo_s`` attrs; nothing here recomputes a time or a cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from sweeps import physics
from sweeps.outputs import Kind, register

from .data import altair_row_limit
from .theme import (
    COLORS,
    DECODE,
    DOES_NOT_FIT,
    INK,
    PREFILL,
    Size,
    device_scale,
    device_shapes,
    fit_title,
    heading,
    size_of,
    themed,
    title,
    tooltip,
)
from .workloads import (
    MEETS,
    MISSES,
    chosen,
    every_workload,
    label,
    labels,
    selector,
    sentence,
    status_sentence,
)

POOL_MODES = ("colocated", "disaggregated")
WORKLOAD_KEYS = ("model", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens")
SCENARIO_DIMS = ("spec_tokens", "spec_acceptance", "spec_draft", "prefix_hit_rate", "kv_tier")
"""The speculative and prefix dims a serving grid may have: each chart takes their first."""
PHASE_MODES = ("static", "serial-prefill")
"""The modes whose request time is drawn: one batch at a time, and continuous batching."""


def phase_modes(ds: xr.Dataset) -> list[str]:
    """The modes whose request time is drawn: ``PHASE_MODES`` where the grid has them, the
    first continuous scheduler ``[serving] schedulers`` names in place of ``serial-prefill``
    where it names another [-]."""
    have = [str(m) for m in ds["mode"].values]
    static, continuous = PHASE_MODES
    others = [m for m in have if m not in (BOUND, static)]
    batching = continuous if continuous in have else next(iter(others), None)
    return [m for m in (static, batching) if m is not None and m in have]


def has_serving(ds: xr.Dataset) -> bool:
    """Whether ``ds`` holds the serving and pools analyses (a sweep with ``[serving]``)."""
    return "on_pareto_front" in ds and "pools_row" in ds


@dataclass(frozen=True)
class Workload:
    """The model, dtypes and workload one serving chart shows."""

    model: str
    weight_dtype: str
    prompt_tokens: int
    output_tokens: int
    at: dict[str, Any]

    @classmethod
    def of(cls, ds: xr.Dataset, model: str | None = None, weight_dtype: str | None = None) -> Any:
        """``model`` (default the first), the first KV setting and workload of ``ds``, and
        ``weight_dtype`` (default the first with a point on that workload's Pareto front)."""
        model = model or str(ds["model"].values[0])
        prompt, output = int(ds["prompt_tokens"].values[0]), int(ds["output_tokens"].values[0])
        if weight_dtype is None:  # the front spans weight dtypes: one that has a part of it
            front = ds["on_pareto_front"].sel(
                model=model, prompt_tokens=prompt, output_tokens=output
            )
            on = front.any([d for d in front.dims if d != "weight_dtype"])
            weight_dtype = str(ds["weight_dtype"].values[int(on.values.argmax())])
        at = {
            "model": model,
            "kv_heads": ds["kv_heads"].values[0],
            "kv_dtype": ds["kv_dtype"].values[0],
            "weight_dtype": weight_dtype,
            "prompt_tokens": prompt,
            "output_tokens": output,
            # with speculation or prefix caching: the first acceptance and hit rate, and no
            # speculation and the first tier (docs/speculative.md draws those)
            **{d: ds[d].values[0] for d in SCENARIO_DIMS if d in ds.dims},
        }
        return cls(model, weight_dtype, prompt, output, at)

    def label(self) -> str:
        """The workload's label in a figure's selector (``workloads.label``) [-]."""
        return label(self.weight_dtype, self.prompt_tokens, self.output_tokens)

    def caption(self) -> str:
        """The line naming what the chart shows [-]."""
        return (
            f"{self.model}, {self.weight_dtype} weights, {self.prompt_tokens} prompt and "
            f"{self.output_tokens} output tokens per request."
        )


def _frame(ds: xr.Dataset, names: list[str], at: dict[str, Any]) -> pd.DataFrame:
    return ds[names].sel(at).to_dataframe().reset_index()


def panel_width(size: Size, panels: int, legend: int) -> int:
    """Width [px] of each of ``panels`` side by side in a figure of ``size``: what is left of
    its width after the y axis (``size.left``), a legend of ``legend`` [px] on the right (on a
    screen; in print it goes below) and 16 px between panels, and never under 48 [px]."""
    beside = legend if size.legend == "right" else 0
    return max(48, int((size.width - size.left - beside - 16 * (panels - 1)) / panels))


def band_ticks(values: list[int], width: float, font: float) -> list[int]:
    """The values of a band axis of ``width`` [px] whose labels (written level) clear each
    other (``lines.spaced``), first kept [-]."""
    from .lines import spaced

    if not values:
        return []
    band = width / len(values)
    positions = (np.arange(len(values)) + 0.5) * band
    widths = np.array([len(f"{v}") * 0.64 * font for v in values])
    return [values[i] for i in spaced(positions, widths, 0.5 * font)]


def objectives(ds: xr.Dataset) -> tuple[float, float]:
    """The grid's TTFT and TPOT objectives [s]."""
    return float(ds.attrs["ttft_slo_s"]), float(ds.attrs["tpot_slo_s"])


@themed
def pareto_chart(
    ds: xr.Dataset, model: str | None = None, weight_dtype: str | None = None, width: str = "screen"
) -> alt.LayerChart:
    """Output tokens/s per device [token/s] against tokens/s per user [token/s], per workload
    (a selector in the HTML): a line per device and named scheduler through the points on the
    schedulers' Pareto front (one front over every device, tp, batch and scheduler of the
    workload), a black line through the front of mode ``bound`` (the fluid bound over every
    scheduler), dots for every scheduler's point meeting both objectives, and the region where
    a user gets at least ``1 / tpot_slo_s`` tokens per second shaded."""
    # long: the dots, the front lines and the shaded objective share one pair of log scales
    size, work = size_of(width), Workload.of(ds, model, weight_dtype)
    x_name, y_name = "tokens_per_s_per_user", "output_tokens_per_s_per_device"
    names = [x_name, y_name, "meets_slo", "request_latency_s"]
    data = every_workload(ds, names, work.at, weight_dtype)
    data = data[data["meets_slo"] & np.isfinite(data[x_name]) & np.isfinite(data[y_name])]
    ceiling = data["mode"] == BOUND
    group = data["workload"].astype(str) + np.where(ceiling, " bound", "")
    data = data.assign(front=physics.pareto_front(data[y_name], data[x_name], group))
    options, default = labels(ds, weight_dtype), work.label()
    param = selector(options, default)
    devices = [str(h) for h in ds["hardware"].values]
    ttft, tpot = objectives(ds)
    bound = 1.0 / tpot
    found = data[x_name] if len(data) else pd.Series([bound])
    lo, hi = min(float(found.min()), bound) / 1.5, max(float(found.max()), bound) * 1.5
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
    x = alt.X(f"{x_name}:Q", title=title(x_name), scale=scale)
    y = alt.Y(f"{y_name}:Q", title=title(y_name), scale=alt.Scale(type="log"))
    color = alt.Color("hardware:N", title="device", scale=device_scale(devices))
    marker = alt.Shape("hardware:N", title="device", scale=device_shapes(devices))
    tips = [
        alt.Tooltip("hardware:N"),
        alt.Tooltip("mode:N"),
        alt.Tooltip("tp:Q"),
        alt.Tooltip("batch:Q"),
        tooltip(x_name, ".3g"),
        tooltip(y_name, ".3g"),
    ]
    region = pd.DataFrame({"from": [bound], "to": [hi]})
    shade = (
        alt.Chart(region)
        .mark_rect(color=COLORS[DECODE], opacity=0.08)
        .encode(x=alt.X("from:Q", scale=scale), x2="to:Q")
    )
    edge = alt.Chart(region).mark_rule(color=INK, strokeDash=[4, 3]).encode(x="from:Q")
    named = data[~ceiling]
    few = len(named) > altair_row_limit()  # the dots of one workload only, said below
    named = named[named["workload"] == default] if few else named
    dots = chosen(
        alt.Chart(named)
        .mark_point(filled=True, size=3 * size.font, opacity=0.8)
        .encode(x, y, color, marker, tooltip=tips),
        param,
        default,
    )
    front = data[~ceiling & data["front"]].sort_values(x_name)
    limit = data[ceiling & data["front"]].sort_values(x_name)
    drawn = set(front["mode"]) | set(limit["mode"])  # a legend entry per mode drawn
    modes = [str(m) for m in ds["mode"].values if m in drawn]
    dashes = alt.StrokeDash(
        "mode:N",
        title="mode",
        scale=alt.Scale(domain=modes, range=[DASHES[i % len(DASHES)] for i in range(len(modes))]),
        legend=alt.Legend(
            symbolType="stroke",
            symbolStrokeColor=INK,
            symbolStrokeWidth=2,
            columns=alt.Undefined if size.legend == "right" else PRINT_COLUMNS[size.name],
        ),
    )
    fluid = chosen(
        alt.Chart(limit).mark_line(color=INK, strokeWidth=2.5).encode(x, y, dashes, tooltip=tips),
        param,
        default,
    )
    lines = (
        alt.Chart(front)
        .mark_line(strokeWidth=2)  # no points: a line mark with points has a dot as legend
        .encode(
            x,
            y,
            color,
            dashes,
            tooltip=tips,
        )
    )
    caption = [
        work.caption(),
        f"Objectives: TTFT ≤ {ttft:g} s, TPOT ≤ {tpot * 1000:g} ms; the shaded region gets a "
        f"user at least 1 / TPOT = {bound:g} tokens/s. Dots: every scheduler's point meeting "
        "both; coloured lines: the points on the Pareto front of all devices and named "
        "schedulers, joined per device and scheduler; black dashes: the front of mode bound, "
        "the fluid bound over every scheduler.",
        *[line for line in [sentence(options, default)] if line],
        *(["Dots: of the images' workload only (every workload's are over the row limit)."]
          if few else []),
    ]  # fmt: skip
    chart = alt.LayerChart(
        layer=[shade, edge, dots, chosen(lines, param, default), fluid],
        title=heading("Throughput per device against speed per user", caption, size),
        width=panel_width(size, 1, 120),
        height=size.panel_height * 1.6,
    )
    return chart if param is None else chart.add_params(param)


def _split(ds: xr.Dataset, work: Workload, weight_dtype: str | None = None) -> pd.DataFrame:
    """Per workload (``workloads``), device (at its smallest tp that serves a request), mode
    of ``PHASE_MODES`` and batch: prefill (``serving_ttft_s``) and decode (the rest of
    ``request_latency_s``) [s], and whether the batch fits and meets the objectives."""
    names = ["serving_ttft_s", "request_latency_s", "serving_feasible", "meets_slo"]
    data = every_workload(ds.sel(mode=phase_modes(ds)), names, work.at, weight_dtype)
    data = data[np.isfinite(data["request_latency_s"])]
    least = data.groupby(["workload", "hardware"])["tp"].transform("min")
    data = data[data["tp"] == least]
    data = data.assign(**{PREFILL: data["serving_ttft_s"]})
    data[DECODE] = data["request_latency_s"] - data["serving_ttft_s"]
    data["status"] = np.where(
        ~data["serving_feasible"].astype(bool),
        DOES_NOT_FIT,
        np.where(data["meets_slo"].astype(bool), MEETS, MISSES),
    )
    keys = ["workload", "hardware", "tp", "mode", "batch", "request_latency_s", "status"]
    long = data.melt(id_vars=keys, value_vars=[PREFILL, DECODE], var_name="phase", value_name="s")
    return long.assign(fill=np.where(long["status"] == DOES_NOT_FIT, DOES_NOT_FIT, long["phase"]))


BOUND = "bound"
"""The serving mode that bounds every scheduler (the fluid bound), drawn as its own line."""
PRINT_COLUMNS = {"single-column": 1, "double-column": 2}
"""Columns of the Pareto chart's mode legend in print (below the plot, in the column's width)."""
DASHES = ([10, 4], [1, 0], [6, 3], [2, 2], [8, 2, 2, 2], [4, 4], [1, 3])
"""Dash patterns of the modes, in the grid's order (``bound`` first)."""


@themed
def request_time_chart(
    ds: xr.Dataset, model: str | None = None, weight_dtype: str | None = None, width: str = "screen"
) -> alt.FacetChart:
    """Seconds per request [s] against batch [sequence], stacked: prefill (the TTFT) under
    decode (latency minus TTFT), a panel per device (at its smallest tp that fits) and mode."""
    # long: the bars' phase, status and selector share one frame, one caption
    size, work = size_of(width), Workload.of(ds, model, weight_dtype)
    data = _split(ds, work, weight_dtype)
    options, default = labels(ds, weight_dtype), work.label()
    param = selector(options, default)
    fills = [PREFILL, DECODE, DOES_NOT_FIT]
    phases = alt.Scale(domain=fills, range=[COLORS[f] for f in fills])
    looks = alt.Scale(domain=[MEETS, MISSES, DOES_NOT_FIT], range=[1.0, 0.35, 1.0])
    batches = sorted(int(b) for b in data["batch"].unique())
    panel = panel_width(size, 2, 160)
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "batch:O",
                title=fit_title(title("batch"), panel + 16, size.font + 1),
                axis=alt.Axis(labelAngle=0, values=band_ticks(batches, panel, size.font)),
            ),
            y=alt.Y("s:Q", title=title("request_latency_s"), stack="zero"),
            color=alt.Color("fill:N", title="phase", scale=phases, sort=fills),
            opacity=alt.Opacity(
                "status:N",
                title="objectives",
                scale=looks,
                legend=alt.Legend(
                    symbolType="square", symbolFillColor=COLORS[DECODE], values=[MEETS, MISSES]
                )
                if size.legend == "right"
                else None,  # a print column has no room: the caption says what fades
            ),
            order=alt.Order("phase_order:Q"),
            tooltip=[
                alt.Tooltip("hardware:N"),
                alt.Tooltip("tp:Q"),
                alt.Tooltip("batch:Q"),
                alt.Tooltip("phase:N"),
                alt.Tooltip("status:N"),
                alt.Tooltip("s:Q", title="time [s]", format=".3g"),
                tooltip("request_latency_s", ".3g"),
            ],
        )
        .transform_calculate(phase_order=f"datum.phase == '{PREFILL}' ? 0 : 1")
        .properties(width=panel, height=size.panel_height * 0.7)
    )
    caption = [
        work.caption(),
        "Each device at its smallest tp that serves a request. Static: a batch is prefilled, "
        "then decoded; serial-prefill: continuous batching, each prompt prefilled alone "
        "between decode steps.",
        status_sentence(data[data["workload"] == default], *objectives(ds)),
        sentence(options, default),
    ]
    faceted = bars.facet(
        row=alt.Row("hardware:N", title=None),
        column=alt.Column("mode:N", title=None, sort=phase_modes(ds)),
        title=heading("Time per request: prefill and decode", caption, size),
    )
    faceted = chosen(faceted, param, default)
    return faceted if param is None else faceted.add_params(param)


def fleet_chart(*args: Any, **kwargs: Any) -> Any:
    """``sweeps.charts.fleet.fleet_chart``: devices and cost against arrival rate."""
    from .fleet import fleet_chart as chart  # it reads this module's Workload

    return chart(*args, **kwargs)


def _energy_chart(*args: Any, **kwargs: Any) -> Any:
    from .techniques import energy_chart  # it reads this module's SCENARIO_DIMS

    return energy_chart(*args, **kwargs)


BUILDERS: dict[str, Any] = {
    "pareto": pareto_chart,
    "request-time": request_time_chart,
    "fleet": fleet_chart,
    "energy": _energy_chart,
}
"""The serving figures, by the stem they are written under (``serving-<name>-<model>``)."""


SERVING = register(Kind(
    name="serving",
    title="Serving: speed per user, time per request, fleet and cost",
    order=70,
    doc="per model, where the sweep has [serving]: the Pareto front, time per request, fleet "
    "and energy",
    applies=has_serving,
))  # fmt: skip
