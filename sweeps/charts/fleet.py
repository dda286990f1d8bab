"""The fleet figure of a serving sweep: devices and cost per million output tokens against
arrival rate, the cheapest colocated and the cheapest disaggregated plan meeting the objectives
(``sweeps.views.plans``), every workload in one figure (``workloads``: a selector in the
HTML), and a sentence saying where disaggregation is the cheaper plan."""

from __future__ import annotations

import altair as alt
import polars as pl
import xarray as xr

from .serving import POOL_MODES, SCENARIO_DIMS, Workload, objectives, panel_width
from .theme import COLORS, heading, size_of, themed, title, tooltip
from .ticks import log_axis
from .workloads import chosen, label, labels, selector, sentence


def fleet_plans(ds: xr.Dataset, work: Workload, weight_dtype: str | None = None) -> pl.DataFrame:
    """Per workload, pool mode and arrival rate: the cheapest plan of that mode meeting the
    objectives (``sweeps.views.plans.cheapest_plans`` of that mode's pools rows), at the
    chart's model, KV setting and scenario (one weight dtype where ``weight_dtype`` is set);
    ``workload`` is its label (``workloads.label``)."""
    from sweeps.export.parquet import frame
    from sweeps.views.plans import cheapest_plans

    pools = frame(ds, "pools")
    apart = pl.col("pool_mode").cast(pl.String) == "disaggregated"
    parts = [
        cheapest_plans(pools.filter(~apart if mode == "colocated" else apart)).with_columns(
            pl.when(pl.col("pool_mode").is_not_null()).then(pl.lit(mode)).alias("pool_mode")
        )
        for mode in POOL_MODES
    ]
    every = pl.concat(parts, how="vertical_relaxed")
    chosen = every.filter(
        *[
            pl.col(key).cast(pl.String) == str(work.at[key])
            for key in ("model", "kv_dtype", *SCENARIO_DIMS)
            if key in work.at and key in every.columns
        ],
        *([pl.col("weight_dtype").cast(pl.String) == weight_dtype] if weight_dtype else []),
        pl.col("kv_heads") == every["kv_heads"].first(),  # the number "native" resolved to
    )
    named = [
        label(w, p, o)
        for w, p, o in chosen.select("weight_dtype", "prompt_tokens", "output_tokens").iter_rows()
    ]
    return chosen.with_columns(
        pl.col("pool_mode").fill_null("none").cast(pl.String),
        workload=pl.Series(named, dtype=pl.String),
    )


def disaggregation_sentence(plans: pl.DataFrame) -> str:
    """Where the cheapest disaggregated plan is cheaper than the cheapest colocated one,
    counted over the workloads and rates with both priced [-]."""
    cost = "cost_per_million_output_tokens_usd"
    wide = plans.pivot(
        on="pool_mode", index=["workload", "arrival_rate"], values=cost, aggregate_function="min"
    )
    if not set(POOL_MODES) <= set(wide.columns):
        return "No workload has both a colocated and a disaggregated plan priced."
    both = wide.drop_nulls([*POOL_MODES])
    wins = both.filter(pl.col("disaggregated") < pl.col("colocated"))
    if wins.height == 0:
        return (
            f"Colocated is never costlier than disaggregated ({both.height} workload and rate "
            "pairs with both priced)."
        )
    cells = "; ".join(f"{w} at {r:g}/s" for w, r in wins.select("workload", "arrival_rate").rows())
    return (
        f"Disaggregated is cheaper in {wins.height} of {both.height} workload and rate pairs "
        f"with both priced: {cells}."
    )


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
    objectives, each cost with the dates of its prices."""
    # long: the two panels share one frame of every workload, the selector and the caption
    size, work = size_of(width), Workload.of(ds, model, weight_dtype)
    every = fleet_plans(ds, work, weight_dtype)
    options = labels(ds, weight_dtype)
    default = _default(every, work.label())
    param = selector(options, default)
    plans = every.filter(pl.col("workload") == default)
    cost = "cost_per_million_output_tokens_usd"
    data = every.select(
        "workload",
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
    across = size.legend == "right"  # on a screen side by side; in a print column stacked
    panel = {"width": panel_width(size, 2 if across else 1, 200), "height": size.panel_height}

    def axis(column: str, along_x: bool) -> tuple[alt.Scale, alt.Axis]:
        length = panel["width"] if along_x else panel["height"]
        return log_axis(data[column].to_numpy(float), length, size.font, along_x)

    scale, ticks = axis("arrival_rate", True)
    x = alt.X("arrival_rate:Q", title=title("arrival_rate"), scale=scale, axis=ticks)
    tips = [
        alt.Tooltip("mode:N"),
        alt.Tooltip("plan:N", title="prefill + decode"),
        tooltip("arrival_rate", ".3g"),
        tooltip("devices", ".3g"),
        tooltip(cost, ".3g"),
        alt.Tooltip("price_as_of:N", title="prices as of (prefill / decode)"),
    ]
    base = chosen(
        alt.Chart(data).mark_line(point=True).encode(x, color=alt.Color("mode:N", scale=modes)),
        param,
        default,
    )
    scale, ticks = axis("devices", False)
    devices = base.encode(
        y=alt.Y("devices:Q", title=title("devices"), scale=scale, axis=ticks), tooltip=tips
    ).properties(**panel)
    scale, ticks = axis(cost, False)
    costs = base.encode(
        y=alt.Y(f"{cost}:Q", title=title(cost), scale=scale, axis=ticks), tooltip=tips
    ).properties(**panel)
    dates = ", ".join(_dates(plans)) or "none known"
    ttft, tpot = objectives(ds)
    caption = [
        f"{work.model}, {default} tokens per request.",
        f"The cheapest plan of each mode meeting TTFT ≤ {ttft:g} s and TPOT ≤ {tpot * 1000:g} "
        f"ms, idle capacity paid for; catalog prices as of {dates}. A rate with no priced plan "
        "has no point.",
        disaggregation_sentence(every),
        *[line for line in [sentence(options, default)] if line],
    ]
    chart = (alt.hconcat if across else alt.vconcat)(devices, costs).properties(
        title=heading("Devices and cost against arrival rate", caption, size)
    )
    return chart if param is None else chart.add_params(param)


def _default(plans: pl.DataFrame, first: str) -> str:
    """The workload the images draw: the first where disaggregation is the cheaper plan at
    some rate, else ``first``."""
    cost = "cost_per_million_output_tokens_usd"
    wide = plans.pivot(
        on="pool_mode", index=["workload", "arrival_rate"], values=cost, aggregate_function="min"
    )
    if not set(POOL_MODES) <= set(wide.columns):
        return first
    wins = wide.filter(pl.col("disaggregated") < pl.col("colocated"))["workload"].to_list()
    order = list(dict.fromkeys(plans["workload"].to_list()))
    return next((w for w in order if w in wins), first)
