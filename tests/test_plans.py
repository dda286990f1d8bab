"""The serving summary: the cheapest plan per workload and rate, against a brute-force search."""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest
import xarray as xr

import sweeps
from sweeps.errors import ConfigError
from sweeps.views import plans as summary
from sweeps.views.plans import NO_PLAN, NO_PRICE, PLAN, cheapest_plans

KEYS = (*summary.KEYS, "arrival_rate")  # the workload's keys and its load
ONE_POOL = pl.col("pool_mode").cast(pl.String) != "disaggregated"


def grid(hardware: list[str], prompts: list[int]) -> xr.Dataset:
    return sweeps.run(
        {
            "sweep": {"name": "plans-test"},
            "axes": {
                "model": ["llama-3-8b"],
                "hardware": hardware,
                "tp": [1, 2],
                "batch": {"start": 1, "stop": 256, "geometric": True},
                "context": [2048],
                "kv_heads": ["native"],
                "kv_dtype": ["bf16"],
                "weight_dtype": ["bf16", "fp8"],
            },
            "serving": {
                "prompt_tokens": prompts,
                "output_tokens": [64, 512],
                "arrival_rate": [1.0, 50.0],
                "ttft_slo_s": 0.1,  # a 32k prompt takes longer than that, even at tp 2
                "tpot_slo_s": 0.05,
            },
        }
    )


@pytest.fixture(scope="module")
def priced() -> xr.Dataset:
    return grid(["h100-sxm", "h200"], [512, 32768])


def cost_of(row: dict[str, Any]) -> float:
    value = row["cost_per_million_output_tokens_usd"]
    return math.nan if value is None else value


def test_the_cheapest_feasible_plan_per_workload_and_rate(priced: xr.Dataset) -> None:
    pools = sweeps.export.frames(priced)["pools"]
    plans = cheapest_plans(priced)
    assert plans.height == pools.select(KEYS).unique().height == 16
    assert list(plans.columns[: len(KEYS)]) == list(KEYS)
    found = 0
    for row in plans.iter_rows(named=True):
        match = pools.filter(*(pl.col(k) == row[k] for k in KEYS))
        ok = match.filter(pl.col("feasible"), pl.col("cost_per_million_output_tokens_usd") > 0)
        if row["prompt_tokens"] == 32768:  # TTFT alone exceeds the objective
            assert ok.height == 0
            assert row["reason"] == NO_PLAN
            assert row["cost_per_million_output_tokens_usd"] is None
            assert row["pool_mode"] is None
            continue
        found += 1
        assert row["reason"] is None
        cheapest = ok["cost_per_million_output_tokens_usd"].min()
        assert row["cost_per_million_output_tokens_usd"] == pytest.approx(cheapest, rel=1e-9)
        tied = ok.filter(pl.col("cost_per_million_output_tokens_usd") <= cheapest * (1 + 1e-9))
        assert row["devices"] == tied["devices"].min()
        if tied.filter(pl.col("devices") == row["devices"], ONE_POOL).height:
            assert row["pool_mode"] != "disaggregated"  # a tie goes to one pool
            assert row["scheduler"] == row["pool_mode"]
        # the chosen plan is a row of the pools table, with its prices' dates
        chosen = match.filter(*(pl.col(c) == row[c] for c in PLAN if row[c] is not None))
        assert chosen.height >= 1
        assert row["prefill_price_as_of"] is not None
        assert row["decode_price_as_of"] is not None
        for mode, rows in (("colocated", ONE_POOL), ("disaggregated", ~ONE_POOL)):
            best = ok.filter(rows)["cost_per_million_output_tokens_usd"]
            assert row[f"cheapest_{mode}_usd"] == best.min()
        assert row["ttft_s"] <= 0.1
        assert row["tpot_s"] <= 0.05
        assert 0 < row["decode_time_share"] <= 1
    assert found == 8
    # the plan for a dataset and for its pools frame (as pools.parquet reads back) agree
    assert plans.equals(cheapest_plans(pools))


def test_devices_without_a_price_are_named_with_a_null_cost() -> None:
    ds = grid(["mi300x"], [512])  # no catalog price: costs null, never zero
    plans = cheapest_plans(ds)
    assert plans.height == 8
    assert plans["cost_per_million_output_tokens_usd"].null_count() == plans.height
    assert (plans["reason"] == NO_PRICE).all()
    assert plans["devices"].null_count() == 0  # the plan is still named: fewest devices
    pools = sweeps.export.frames(ds)["pools"].filter(pl.col("feasible"))
    fewest = pools.group_by(KEYS).agg(pl.col("devices").min()).sort(list(KEYS))
    assert plans.sort(list(KEYS))["devices"].to_list() == fewest["devices"].to_list()


def test_what_is_not_a_pools_table_is_refused() -> None:
    decode_only = sweeps.run(
        {
            "sweep": {"name": "no-serving"},
            "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"], "batch": [1]},
        }
    )
    with pytest.raises(ConfigError, match=r"no pools table: the sweep has no \[serving\] table"):
        cheapest_plans(decode_only)
    with pytest.raises(ConfigError, match=r"not a pools table: columns \['model'"):
        cheapest_plans(pl.DataFrame({"x": [1]}))


def test_exported_lazily() -> None:
    assert sweeps.cheapest_plans is cheapest_plans
    assert sweeps.views.cheapest_plans is cheapest_plans
    assert "cheapest_plans" in sweeps.__all__


def plan_row(
    mode: str, devices: float, cost: float | None, feasible: bool = True
) -> dict[str, Any]:
    return {
        "model": "m",
        "kv_heads": 8,
        "kv_dtype": "bf16",
        "weight_dtype": "bf16",
        "prompt_tokens": 512,
        "output_tokens": 128,
        "arrival_rate": 10.0,
        "pool_mode": mode,
        "prefill_hardware": "a",
        "prefill_tp": 1,
        "prefill_replicas": devices,
        "decode_hardware": "a",
        "decode_tp": 1,
        "decode_replicas": devices,
        "decode_batch": 64.0,
        "devices": devices,
        "cost_per_million_output_tokens_usd": cost,
        "prefill_price_as_of": "2025-01-01",
        "decode_price_as_of": "2025-01-01",
        "ttft_s": 0.1,
        "tpot_s": 0.02,
        "decode_time_share": 0.5,
        "feasible": feasible,
    }


def test_ties_go_to_fewer_devices_then_to_one_pool() -> None:
    rows = [
        plan_row("disaggregated", 4, 1.0 * (1 - 1e-13)),  # cheaper only by rounding
        plan_row("serial-prefill", 4, 1.0),
        plan_row("disaggregated", 6, 1.0),
        plan_row("chunked-paced", 2, 0.5, feasible=False),  # cheaper, but misses the objectives
        plan_row("batched-prefill", 1, float("nan")),  # no price: never taken for zero
    ]
    plans = cheapest_plans(pl.DataFrame(rows))
    assert plans.height == 1
    best = plans.row(0, named=True)
    assert best["pool_mode"] == "serial-prefill"
    assert best["devices"] == 4
    assert best["cost_per_million_output_tokens_usd"] == 1.0
    assert best["cheapest_colocated_usd"] == 1.0  # the best of each mode that meets the SLOs
    assert best["cheapest_disaggregated_usd"] == 1.0 * (1 - 1e-13)
