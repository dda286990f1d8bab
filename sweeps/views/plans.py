"""The serving summary: per model and workload, the cheapest plan that meets the objectives.

Reads the pools table (``pools.parquet``, docs/serving.md sections 4-5): for every model, KV
setting, weight dtype, workload (``I``, ``O``) and arrival rate, among the plans that meet
the TTFT and TPOT objectives (``feasible``), the one with the lowest cost per million output
tokens at that rate, idle capacity paid for. Costs within ``TIE`` of each other are a tie,
which goes to fewer devices, then to the colocated plan (one pool), then to the table's order.
Weight dtypes stay apart: fp8 and bf16 weights are not the same model to a user.

Every cost carries the dates of its prices. A workload that no plan serves within the
objectives gets a row with null cost and a ``reason``; a plan whose devices have no known price
is still named (the one with the fewest devices), with a null cost and a reason: never zero.
"""

from __future__ import annotations

import polars as pl
import xarray as xr

from sweeps.errors import ConfigError
from sweeps.studies.serving.pools import DIMS as POOL_DIMS
from sweeps.studies.serving.pools import LOADS, PLAN_DIMS

KEYS = tuple(d for d in POOL_DIMS if d not in PLAN_DIMS)
"""One summary row per value of these and of the load (``LOADS``: a rate or a concurrency): a
model, its dtypes and a workload (the pools' dims but those that make the plan: the devices,
their tp and the mode)."""

PLAN = (
    "pool_mode",
    "prefill_hardware",
    "prefill_tp",
    "prefill_replicas",
    "decode_hardware",
    "decode_tp",
    "decode_replicas",
    "decode_batch",
    "devices",
    "cost_per_million_output_tokens_usd",
    "prefill_price_as_of",
    "decode_price_as_of",
    "ttft_s",
    "tpot_s",
    "decode_time_share",
)
"""What the summary says of the chosen plan (columns of the pools table)."""

COST = "cost_per_million_output_tokens_usd"

SCENARIOS = ("spec_acceptance", "prefix_hit_rate")
"""Keys a sweep with speculation or prefix caching adds: the acceptance and the hit rate the
workload meets (``docs/speculative.md``)."""
CHOICES = ("spec_tokens", "spec_draft", "kv_tier", "ep", "dp_attention", "pp")
"""What such a sweep adds to a plan: whether it speculates (``k``, the draft), the tier its
cached prefixes live in, the replica's parallel layout (``ep``, ``dp_attention``, ``pp``);
chosen with the devices."""


def _keys(frame: pl.DataFrame) -> list[str]:
    """The keys of one summary row in ``frame``: ``KEYS``, its load (an arrival rate or a
    concurrency) and the scenarios it has."""
    return [*KEYS, *(c for c in (*LOADS, *SCENARIOS) if c in frame.columns)]


ENERGY = "energy_per_output_token_j"
"""The plan's energy per output token (an estimate at board power), beside its cost when the
pools frame has it."""


def _plan(frame: pl.DataFrame) -> list[str]:
    """The plan's columns in ``frame``: ``PLAN`` after the choices it has, the energy beside
    the cost."""
    plan = list(PLAN)
    if "scheduler" in frame.columns:
        plan.append("scheduler")
    if ENERGY in frame.columns:
        plan.insert(plan.index(COST) + 1, ENERGY)
    return [*(c for c in CHOICES if c in frame.columns), *plan]


TIE = 1e-9
"""Relative difference of two costs below which they are a tie [1]."""

NO_PLAN = "no plan meets ttft_slo_s and tpot_slo_s on these devices"
NO_PRICE = "the plans that meet the objectives use devices without a known price"


def _pools(source: xr.Dataset | pl.DataFrame) -> pl.DataFrame:
    """The pools table of ``source``: a grid with a ``[serving]`` table, or the frame itself."""
    if isinstance(source, pl.DataFrame):
        frame = source
    else:
        from sweeps.export import frames

        tables = frames(source)
        if "pools" not in tables:
            msg = (
                "this grid has no pools table: the sweep has no [serving] table; "
                "allowed: a grid of a sweep with [serving], or its pools frame"
            )
            raise ConfigError(msg)
        frame = tables["pools"]
    missing = [c for c in (*KEYS, *PLAN, "feasible") if c not in frame.columns]
    if missing:
        msg = f"not a pools table: columns {missing} are missing; allowed: pools.parquet's frame"
        raise ConfigError(msg)
    return frame.with_columns(pl.col(COST).fill_nan(None))


def _one_pool(mode: str) -> pl.Expr:
    """The rows of ``mode``: ``colocated`` is every named scheduler's one-pool plan."""
    apart = pl.col("pool_mode").cast(pl.String) == "disaggregated"
    return ~apart if mode == "colocated" else apart


def _best_per_mode(frame: pl.DataFrame, mode: str) -> pl.DataFrame:
    """The cheapest priced cost of ``mode`` per key among ``frame``'s plans, as
    ``cheapest_<mode>_usd``."""
    return (
        frame.filter(_one_pool(mode), pl.col(COST).is_not_null())
        .group_by(_keys(frame))
        .agg(pl.col(COST).min().alias(f"cheapest_{mode}_usd"))
    )


def cheapest_plans(source: xr.Dataset | pl.DataFrame) -> pl.DataFrame:
    """Per model, dtypes, workload and load: the cheapest plan that meets the SLOs.

    With speculation or prefix caching the keys add the acceptance and the hit rate, and the
    plan says which ``k`` and draft (``spec_tokens`` 0: no speculation) and which KV tier it
    uses (``CHOICES``); its energy per output token (an estimate at board power) is beside
    its cost.

    Parameters
    ----------
    source
        A grid (``sweeps.run`` of a sweep with ``[serving]``) or its pools frame
        (``sweeps.export.frames(ds)["pools"]``, or ``pools.parquet`` read back).

    Returns
    -------
    pl.DataFrame
        One row per key of ``KEYS`` and load, sorted by them: the plan's columns of ``PLAN``
        (``pool_mode`` a named scheduler on one pool, or disaggregated; hardware and tp per
        phase, replicas, devices, cost per million output tokens [USD] with its prices' dates,
        TTFT and TPOT [s], the share of device time in decode [1], the scheduler),
        ``cheapest_colocated_usd`` (over the one-pool plans) and ``cheapest_disaggregated_usd``
        (the best of each mode meeting the SLOs, null where none is priced), and ``reason``:
        null when a priced plan was found, else why the cost is null.
    """
    frame = _pools(source)
    keys = _keys(frame)
    feasible = frame.filter(pl.col("feasible"))
    # costs equal to rounding are a tie (a colocated and a disaggregated plan of the same
    # devices): fewer devices first, then one pool, which is simpler to run
    lowest = pl.col(COST).min().over(keys)
    tied = pl.col(COST) <= lowest * (1 + TIE)
    ranked = feasible.sort(
        [
            ~tied.fill_null(False),
            pl.col(COST).is_null(),
            "devices",
            pl.col("pool_mode").cast(pl.String) == "disaggregated",
            COST,
        ],
        nulls_last=True,
        maintain_order=True,
    )
    best = ranked.group_by(keys, maintain_order=True).first().select(*keys, *_plan(frame))
    every = frame.select(keys).unique(maintain_order=True)
    out = every.join(best, on=keys, how="left", nulls_equal=True)
    for mode in ("colocated", "disaggregated"):
        out = out.join(_best_per_mode(feasible, mode), on=keys, how="left", nulls_equal=True)
    reason = (
        pl.when(pl.col("pool_mode").is_null())
        .then(pl.lit(NO_PLAN))
        .when(pl.col(COST).is_null())
        .then(pl.lit(NO_PRICE))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    return out.with_columns(reason.alias("reason")).sort(keys)
