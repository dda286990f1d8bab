"""The report's table of the cheapest serving plans: what ``sweeps run`` prints after its
summary (``sweeps.views.cheapest_plans``), one row per model, weights, workload and arrival
rate, the plan or the reason there is none."""

from __future__ import annotations

import html

import polars as pl
import xarray as xr

from .report import table

PLAN_ROWS = 200
"""Plans the page shows at most; ``pools.parquet`` has every one."""


def cheapest(grids: list[xr.Dataset]) -> pl.DataFrame | None:
    """The cheapest plans of each model's serving grid (``None`` where there is none)."""
    from sweeps.views.plans import cheapest_plans

    parts = [cheapest_plans(grid) for grid in grids]
    return pl.concat(parts, how="diagonal_relaxed") if parts else None


def _pool(side: str) -> pl.Expr:
    replicas = pl.col(f"{side}_replicas")
    return pl.format(
        "{}{} tp {}",
        pl.when(replicas.is_null()).then(pl.lit("")).otherwise(pl.format("{} x ", replicas)),
        pl.col(f"{side}_hardware"),
        pl.col(f"{side}_tp"),
    )


def plans_frame(plans: pl.DataFrame) -> pl.DataFrame:
    """The columns the command line's table shows, titled with their units [-]."""
    found = pl.col("reason").is_null()
    return plans.select(
        pl.col("model").cast(pl.String),
        pl.col("weight_dtype").cast(pl.String).alias("weights"),
        pl.col("prompt_tokens").alias("prompt [token]"),
        pl.col("output_tokens").alias("output [token]"),
        pl.col("arrival_rate").alias("arrival rate [request/s]"),
        pl.when(found)
        .then(pl.col("pool_mode").cast(pl.String))
        .otherwise(pl.col("reason"))
        .alias("plan"),
        pl.when(found).then(_pool("prefill")).otherwise(pl.lit("")).alias("prefill"),
        pl.when(found).then(_pool("decode")).otherwise(pl.lit("")).alias("decode"),
        pl.col("devices").alias("devices [device]"),
        pl.col("cost_per_million_output_tokens_usd").alias("cost per M output tokens [USD]"),
        (pl.col("ttft_s") * 1e3).alias("TTFT [ms]"),
        (pl.col("tpot_s") * 1e3).alias("TPOT [ms]"),
        pl.col("decode_time_share").alias("decode share of device time [1]"),
        pl.format(
            "{} / {}",
            pl.col("prefill_price_as_of").cast(pl.String).fill_null("-"),
            pl.col("decode_price_as_of").cast(pl.String).fill_null("-"),
        ).alias("prices as of (prefill / decode)"),
    )


def plans_section(plans: pl.DataFrame | None) -> str:
    """The report's section of the cheapest plans, '' where the run has none."""
    if plans is None or plans.height == 0:
        return ""
    more = (
        f" (the first {PLAN_ROWS:,} of {plans.height:,}; pools.parquet has every one)"
        if plans.height > PLAN_ROWS
        else ""
    )
    note = (
        "The cheapest plan meeting the TTFT and TPOT objectives per model, weights, workload "
        "and arrival rate, idle capacity paid for, at the devices' dated catalog prices" + more
    )
    return (
        '<h2 id="plans">Cheapest serving plans</h2>'
        f"<p>{html.escape(note)}.</p>{table(plans_frame(plans), PLAN_ROWS, registry=False)}"
    )
