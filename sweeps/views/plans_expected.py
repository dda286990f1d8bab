"""Devices a workload needs by expectation, beside the plans sized on roofline steps.

Reads ``pools.parquet`` and ``pools_expected.parquet`` (a sweep with ``[serving]`` and
``axes.engine``; docs/expected.md, "Serving"). Per model, dtypes, workload, load and engine:

- ``devices`` and ``pool_mode``: the cheapest plan of the pools table (``plans.cheapest_plans``)
  and ``fewest_devices``, the fewest over every plan of it that meets the objectives. Those are
  sized on roofline step times: no implementation of their scheduler on these devices needs
  fewer.
- ``expected_*``: the plan with the fewest devices by expectation (then the lowest cost), over
  every device, tp and plan priced on expected steps (each scheduler on one pool, and
  disaggregated on one device and tp: ``expected_scheduler`` says ``disaggregated``), its
  devices, (decode) replicas, batch, TTFT and TPOT at the load, and its parallel layout
  (``expected_ep``, ``expected_dp_attention``, ``expected_pp``) where the sweep has the axes.
  Null, with ``expected_reason``, where no plan is expected to meet the objectives on devices
  with data.
"""

from __future__ import annotations

import polars as pl

from sweeps.errors import ConfigError
from sweeps.views.plans import _keys, cheapest_plans

EXPECTED = {
    "pool_mode": "expected_scheduler",
    "hardware": "expected_hardware",
    "tp": "expected_tp",
    "expected_decode_batch": "expected_batch",
    "expected_replicas": "expected_replicas",
    "expected_devices": "expected_devices",
    "expected_pools_cost_per_million_output_tokens_usd": "expected_cost_per_million_usd",
    "expected_pools_ttft_s": "expected_ttft_s",
    "expected_pools_tpot_s": "expected_tpot_s",
}
"""The expected plan's columns of ``pools_expected.parquet``, by their names here."""
LAYOUT = {"ep": "expected_ep", "dp_attention": "expected_dp_attention", "pp": "expected_pp"}
"""The expected plan's parallel layout, where ``pools_expected.parquet`` has the axes (its
replica is ``expected_tp x expected_ep x expected_pp`` devices)."""
TECHNIQUE = {
    "spec_tokens": "expected_spec_tokens",
    "spec_draft": "expected_spec_draft",
    "kv_tier": "expected_kv_tier",
}
"""What the expected plan chose of speculation and its prefixes' tier, where
``pools_expected.parquet`` has the axes (the acceptance and the hit rate are the workload's:
keys, as in ``plans.SCENARIOS``)."""

NO_EXPECTED = "no plan is expected to meet ttft_slo_s and tpot_slo_s on devices with data"


def expected_plans(pools: pl.DataFrame, expected: pl.DataFrame) -> pl.DataFrame:
    """Per key, load and engine: the roofline plan's devices beside the expected plan's.

    ``pools`` and ``expected`` are the frames of ``pools.parquet`` and
    ``pools_expected.parquet`` (``sweeps.export.frames(ds)`` or read back).
    """
    missing = [c for c in (*EXPECTED, "engine") if c not in expected.columns]
    if missing:
        msg = (
            f"not a pools_expected table: columns {missing} are missing; allowed: "
            "pools_expected.parquet's frame (a sweep with [serving] and axes.engine)"
        )
        raise ConfigError(msg)
    plans = cheapest_plans(pools)
    keys = _keys(plans)
    fewest = (
        pools.filter(pl.col("feasible"))
        .group_by(keys)
        .agg(pl.col("devices").min().alias("fewest_devices"))
    )
    bound = plans.select(*keys, "pool_mode", "devices").join(
        fewest, on=keys, how="left", nulls_equal=True
    )
    shared = [k for k in keys if k in expected.columns]
    planned = expected.filter(pl.col("expected_devices").is_not_null())
    ranked = planned.sort(
        ["expected_devices", "expected_pools_cost_per_million_output_tokens_usd"],
        nulls_last=True,
        maintain_order=True,
    )
    named = {**LAYOUT, **TECHNIQUE}
    chosen = {**EXPECTED, **{k: v for k, v in named.items() if k in expected.columns}}
    best = (
        ranked.group_by([*shared, "engine"], maintain_order=True)
        .first()
        .select(*shared, "engine", *chosen)
        .rename(chosen)
    )
    engines = expected.select("engine").unique(maintain_order=True)
    out = bound.join(engines, how="cross").join(
        best, on=[*shared, "engine"], how="left", nulls_equal=True
    )
    reason = (
        pl.when(pl.col("expected_devices").is_null())
        .then(pl.lit(NO_EXPECTED))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    return out.with_columns(reason.alias("expected_reason")).sort([*keys, "engine"])
