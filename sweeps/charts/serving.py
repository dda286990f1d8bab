"""The serving charts of a sweep with a ``[serving]`` table, drawn from its grid alone.

``pareto_chart``: output tokens/s per device against tokens/s per user, one line per device and
serving mode over its Pareto front, the region meeting the TPOT objective shaded.
``request_time_chart``: the time of one request split into prefill (TTFT) and decode against
batch. ``fleet_chart``: devices and cost per million output tokens against arrival rate, the
cheapest colocated and the cheapest disaggregated plan (``sweeps.pipeline.plans``).

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
import polars as pl
import xarray as xr

from .theme import (
    COLORS,
    DECODE,
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

SERVING = "serving"
POOL_MODES = ("colocated", "disaggregated")
WORKLOAD_KEYS = ("model", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens")
SCENARIO_DIMS = ("spec_tokens", "spec_acceptance", "spec_draft", "prefix_hit_rate", "kv_tier")
"""The speculative and prefix dims a serving grid may have: each chart takes their first."""
PHASE_MODES = ("static", "serial-prefill")
"""The modes whose request time is drawn: one batch at a time, and continuous batching."""


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
    """Output tokens/s per device [token/s] against tokens/s per user [token/s]: a line per
    device and mode through its points on the grid's Pareto front (``on_pareto_front``, one
    front over every device, tp, batch and mode), faint dots
    for every point meeting both objectives, and the region where a user gets at least
    ``1 / tpot_slo_s`` tokens per second shaded."""
    # long: the dots, the front lines and the shaded objective share one pair of log scales
    size, work = size_of(width), Workload.of(ds, model, weight_dtype)
    x_name, y_name = "tokens_per_s_per_user", "output_tokens_per_s_per_device"
    names = [x_name, y_name, "meets_slo", "on_pareto_front", "request_latency_s"]
    data = _frame(ds, names, work.at)
    data = data[data["meets_slo"] & np.isfinite(data[x_name])]
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
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=3 * size.font, opacity=0.8)
        .encode(x, y, color, marker, tooltip=tips)
    )
    front = data[data["on_pareto_front"]].sort_values(x_name)
    lines = (
        alt.Chart(front)
        .mark_line(strokeWidth=2)  # no points: a line mark with points has a dot as legend
        .encode(
            x,
            y,
            color,
            alt.StrokeDash(
                "mode:N",
                title="mode",
                legend=alt.Legend(symbolType="stroke", symbolStrokeColor=INK, symbolStrokeWidth=2),
            ),
            tooltip=tips,
        )
    )
    caption = [
        work.caption(),
        f"Objectives: TTFT ≤ {ttft:g} s, TPOT ≤ {tpot * 1000:g} ms; the shaded region gets a "
        f"user at least 1 / TPOT = {bound:g} tokens/s. Dots: every point meeting both; lines: "
        "the points on the Pareto front of all devices and modes, joined per device and mode.",
    ]
    return alt.LayerChart(
        layer=[shade, edge, dots, lines],
        title=heading("Throughput per device against speed per user", caption, size),
        width=panel_width(size, 1, 120),
        height=size.panel_height * 1.6,
    )


def _split(ds: xr.Dataset, work: Workload) -> pd.DataFrame:
    """Per device (at its smallest tp that serves a request), mode of ``PHASE_MODES`` and batch:
    prefill (``serving_ttft_s``) and decode (the rest of ``request_latency_s``) [s]."""
    names = ["serving_ttft_s", "request_latency_s"]
    data = _frame(ds.sel(mode=list(PHASE_MODES)), names, work.at)
    data = data[np.isfinite(data["request_latency_s"])]
    data = data[data["tp"] == data.groupby("hardware")["tp"].transform("min")]
    data = data.assign(**{PREFILL: data["serving_ttft_s"]})
    data[DECODE] = data["request_latency_s"] - data["serving_ttft_s"]
    keys = ["hardware", "tp", "mode", "batch", "request_latency_s"]
    return data.melt(id_vars=keys, value_vars=[PREFILL, DECODE], var_name="phase", value_name="s")


@themed
def request_time_chart(
    ds: xr.Dataset, model: str | None = None, weight_dtype: str | None = None, width: str = "screen"
) -> alt.FacetChart:
    """Seconds per request [s] against batch [sequence], stacked: prefill (the TTFT) under
    decode (latency minus TTFT), a panel per device (at its smallest tp that fits) and mode."""
    size, work = size_of(width), Workload.of(ds, model, weight_dtype)
    data = _split(ds, work)
    batches = sorted(int(b) for b in data["batch"].unique())
    panel = panel_width(size, 2, 160)
    phases = alt.Scale(domain=[PREFILL, DECODE], range=[COLORS[PREFILL], COLORS[DECODE]])
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
            color=alt.Color("phase:N", title="phase", scale=phases, sort=[PREFILL, DECODE]),
            order=alt.Order("phase_order:Q"),
            tooltip=[
                alt.Tooltip("hardware:N"),
                alt.Tooltip("tp:Q"),
                alt.Tooltip("batch:Q"),
                alt.Tooltip("phase:N"),
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
    ]
    return bars.facet(
        row=alt.Row("hardware:N", title=None),
        column=alt.Column("mode:N", title=None, sort=list(PHASE_MODES)),
        title=heading("Time per request: prefill and decode", caption, size),
    )


def fleet_plans(ds: xr.Dataset, work: Workload) -> pl.DataFrame:
    """Per pool mode and arrival rate: the cheapest plan of that mode meeting the objectives
    (``sweeps.pipeline.plans.cheapest_plans`` of that mode's pools rows)."""
    from sweeps.export.parquet import frame
    from sweeps.pipeline.plans import cheapest_plans

    pools = frame(ds, "pools")
    parts = [cheapest_plans(pools.filter(pl.col("pool_mode") == mode)) for mode in POOL_MODES]
    every = pl.concat(parts)
    chosen = every.filter(
        *[
            pl.col(key).cast(pl.String) == str(work.at[key])
            for key in (*WORKLOAD_KEYS, *SCENARIO_DIMS)
            if key in work.at and key in every.columns
        ],
        pl.col("kv_heads") == every["kv_heads"].first(),  # the number "native" resolved to
    )
    return chosen.with_columns(pl.col("pool_mode").fill_null("none").cast(pl.String))


def _dates(plans: pl.DataFrame) -> list[str]:
    found = plans.select(
        pl.concat_list(
            pl.col("prefill_price_as_of").cast(pl.String),
            pl.col("decode_price_as_of").cast(pl.String),
        ).explode()
    )
    return sorted({str(d) for d in found.to_series().to_list() if d})


@themed
def fleet_chart(
    ds: xr.Dataset, model: str | None = None, weight_dtype: str | None = None, width: str = "screen"
) -> alt.HConcatChart | alt.VConcatChart:
    """Devices [device] and cost per million output tokens [USD] against arrival rate
    [request/s]: the cheapest colocated and the cheapest disaggregated plan meeting the
    objectives, each cost with the dates of its prices; side by side on a screen, stacked in a
    print column."""
    size, work = size_of(width), Workload.of(ds, model, weight_dtype)
    plans = fleet_plans(ds, work)
    cost = "cost_per_million_output_tokens_usd"
    data = plans.select(
        "arrival_rate",
        "devices",
        cost,
        pl.col("pool_mode").alias("mode"),
        pl.format("{} / {}", pl.col("prefill_price_as_of"), pl.col("decode_price_as_of")).alias(
            "price_as_of"
        ),
        pl.format(
            "{} tp {} + {} tp {}",
            pl.col("prefill_hardware"),
            pl.col("prefill_tp"),
            pl.col("decode_hardware"),
            pl.col("decode_tp"),
        ).alias("plan"),
    ).to_pandas()
    modes = alt.Scale(domain=list(POOL_MODES), range=[COLORS[m] for m in POOL_MODES])
    x = alt.X("arrival_rate:Q", title=title("arrival_rate"), scale=alt.Scale(type="log"))
    tips = [
        alt.Tooltip("mode:N"),
        alt.Tooltip("plan:N", title="prefill + decode"),
        tooltip("arrival_rate", ".3g"),
        tooltip("devices", ".3g"),
        tooltip(cost, ".3g"),
        alt.Tooltip("price_as_of:N", title="prices as of (prefill / decode)"),
    ]
    base = alt.Chart(data).mark_line(point=True).encode(x, color=alt.Color("mode:N", scale=modes))
    across = size.legend == "right"  # on a screen side by side; in a print column stacked
    panel = {"width": panel_width(size, 2 if across else 1, 200), "height": size.panel_height}
    devices = base.encode(
        y=alt.Y("devices:Q", title=title("devices"), scale=alt.Scale(type="log")), tooltip=tips
    ).properties(**panel)
    costs = base.encode(
        y=alt.Y(f"{cost}:Q", title=title(cost), scale=alt.Scale(type="log")), tooltip=tips
    ).properties(**panel)
    dates = ", ".join(_dates(plans)) or "none known"
    caption = [
        work.caption(),
        "The cheapest plan of each mode meeting both objectives, idle capacity paid for; "
        f"catalog prices as of {dates}. A rate with no priced plan has no point.",
    ]
    return (alt.hconcat if across else alt.vconcat)(devices, costs).properties(
        title=heading("Devices and cost against arrival rate", caption, size)
    )


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
