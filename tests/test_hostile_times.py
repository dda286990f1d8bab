"""Times that are times (issue 44 item 4): inputs at extremes that would make a time ``inf`` or
0 are refused at validation with their range, or computed without overflow; a statistic with
nothing to measure is null with its reason in the manifest; every time column of a run at the
extremes the config accepts is positive and finite, or null (``tests/times.py``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sweeps import limits
from sweeps.config import parse_config
from sweeps.errors import ConfigError
from sweeps.export.parquet import write_with_units
from sweeps.export.post_steps import post_steps
from sweeps.pipeline import run_to_folder
from sweeps.studies.serving.simulate.run import Timeline
from sweeps.studies.serving.simulate.stats import NULL_REASONS, summarize

from .times import bad_times, folder_bad_times

EXTREMES = """
[sweep]
name = "extremes"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm", "slowpoke"]
batch = [1, 16]
context = [2048]
prefix_hit_rate = [0.0, 0.5]
kv_tier = ["hbm", "slow"]
[kv_tiers.slow]
bandwidth = {bandwidth}
[hardware.slowpoke]
peak_flops = {{ bf16 = {flops} }}
bandwidth = {bandwidth}
memory = 80e9
price_per_hour = 1.0
[serving]
prompt_tokens = [512]
output_tokens = [{output}]
arrival_rate = [{rate}, 1.0]
ttft_slo_s = {slo}
kv_link_bandwidth = {bandwidth}
simulate = {simulate}
[outputs]
charts = []
grid = "none"
"""

ACCEPTED = {
    "bandwidth": limits.MIN_BANDWIDTH,
    "flops": limits.MIN_FLOPS,
    "rate": limits.MIN_RATE,
    "slo": 1e-9,
    "output": 128,
    "simulate": 0,
}


def _config(**changes: object) -> str:
    return EXTREMES.format(**{**ACCEPTED, **changes})


@pytest.mark.parametrize(
    ("change", "key", "allowed"),
    [
        ({"rate": 1e-300}, "serving.arrival_rate[0]: 1e-300 request/s", "at least 1e-06 request/s (limits.MIN_RATE)"),
        ({"bandwidth": 1e-300}, "kv_tiers.slow.bandwidth: 1e-300 byte/s", "at least 1000 byte/s (limits.MIN_BANDWIDTH)"),
        ({"bandwidth": 1e-300}, "hardware.slowpoke.bandwidth: 1e-300 byte/s", "(limits.MIN_BANDWIDTH)"),
        ({"bandwidth": 1e-300}, "serving.kv_link_bandwidth: 1e-300 byte/s", "(limits.MIN_BANDWIDTH)"),
        ({"flops": 1e-300}, "hardware.slowpoke.peak_flops.bf16: 1e-300 FLOP/s", "at least 1000 FLOP/s (limits.MIN_FLOPS)"),
        ({"simulate": 2000}, "serving: simulate = 2,000 requests at arrival_rate 1e-06 request/s span 2e+09 s",
         "at most 1e+09 s (limits.MAX_SIMULATED_SPAN_S)"),
    ],
)  # fmt: skip
def test_an_input_that_would_overflow_a_time_is_refused_naming_key_value_and_range(
    change: dict[str, object], key: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_config(**change))
    line = next(s for s in str(caught.value).splitlines() if key in s)
    assert allowed in line


def test_the_extremes_accepted_give_times_or_nulls(tmp_path: Path) -> None:
    """ttft_slo_s = 1e-9, every bandwidth and peak at its floor and the slowest rate: a pool
    with no prefill replica wrote an inf TTFT (an M/D/1 queue with no server); now null."""
    result = run_to_folder(parse_config(_config()), tmp_path)
    assert folder_bad_times(result.folder) == []
    pools = pl.read_parquet(result.folder / "pools.parquet")
    none = pools.filter(
        pl.col("prefill_replicas").is_null() & (pl.col("pool_mode") == "disaggregated")
    )
    assert none.height > 0
    assert none["ttft_s"].null_count() == none.height
    assert not pools["feasible"].any()  # no plan meets a TTFT of a nanosecond
    prefix = pl.read_parquet(result.folder / "prefix.parquet")
    slow = prefix.filter((pl.col("kv_tier") == "slow") & (pl.col("prefix_hit_rate") == 0.5))
    reload = slow["reload_time_s"].to_numpy()
    assert np.isfinite(reload).all()
    assert (reload > 1e3).all()  # megabytes over a kilobyte a second: finite, and long


def test_the_slowest_rate_simulated_resolves_every_step(tmp_path: Path) -> None:
    """200 requests at 1e-6 request/s span 2e8 s: each request's TTFT, TPOT and latency are
    its own, as at 1 request/s where it runs alone (at 1e-300 they all came out 0)."""
    sweep = parse_config(_config(slo=2.0, simulate=200))
    result = run_to_folder(sweep, tmp_path, hooks=post_steps(sweep))
    assert folder_bad_times(result.folder) == []
    simulated = pl.read_parquet(result.folder / "simulated.parquet")
    slow = simulated.filter(pl.col("arrival_rate") == limits.MIN_RATE)
    assert slow.height > 0
    for name in ("ttft_p50_s", "tpot_p50_s", "latency_p50_s"):
        assert (slow[name] > 1e-4).all(), name
    manifest = json.loads((result.folder / "manifest.json").read_text())
    assert manifest["rows"]["simulated"] == simulated.height
    assert manifest["columns"]["simulated"]["ttft_p50_s"]["unit"] == "s"


def test_a_statistic_with_nothing_to_measure_is_null_with_its_reason(tmp_path: Path) -> None:
    """Three requests of one output token: no TPOT, no confidence interval of 20 batch
    means; each null in simulated.parquet, and the manifest says which and why."""
    sweep = parse_config(_config(slo=2.0, simulate=3, output=1))
    result = run_to_folder(sweep, tmp_path, hooks=post_steps(sweep))
    assert folder_bad_times(result.folder) == []
    simulated = pl.read_parquet(result.folder / "simulated.parquet")
    assert simulated.height > 0
    assert simulated["tpot_p50_s"].null_count() == simulated.height
    assert simulated["ttft_mean_ci_s"].null_count() == simulated.height
    assert (simulated["ttft_mean_s"] > 0).all()
    nulls = json.loads((result.folder / "manifest.json").read_text())["nulls"]["simulated"]
    assert nulls["tpot_p50_s"]["rows"] == simulated.height
    assert "second token (O = 1)" in nulls["tpot_p50_s"]["reasons"][0]
    assert "fewer than 40 requests for 20 batch means" in nulls["ttft_mean_ci_s"]["reasons"]


def test_a_time_the_clock_did_not_resolve_is_null_not_zero() -> None:
    """A timeline whose every request took no time (the clock far past its steps): every time
    statistic null, each with its reason."""
    n = 50
    timeline = Timeline(
        arrival=np.full(n, 1e300), admit=np.full(n, 1e300), first=np.full(n, 1e300),
        done=np.full(n, 1e300), prompt=np.full(n, 512), output=np.full(n, 8),
        replica=np.zeros(n, int), makespan=np.array([1e300]), busy=np.array([1.0]),
        steps=np.array([n]),
    )  # fmt: skip
    stats = summarize(timeline)
    times = [k for k in stats if k.split("_")[0] in ("ttft", "tpot", "latency")]
    assert len(times) == 15
    for name in times:
        assert math.isnan(stats[name]), name
        assert "not resolved" in stats[NULL_REASONS][name]


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The adversary of the check itself: a table with an inf, a NaN, a negative and a 0
    time is caught on each; a 0 where the part may be absent, and a null, are not."""
    path = tmp_path / "t.parquet"
    frame = pl.DataFrame(
        {
            "ttft_s": [1.0, math.inf, None],
            "tpot_s": [1.0, math.nan, 2.0],
            "latency_s": [-1.0, 1.0, 2.0],
            "step_s": [0.0, 1.0, 1.0],
            "reload_time_s": [0.0, 1.0, None],
            "tokens": [0.0, 1.0, 2.0],
        }
    )
    units = {c: {"unit": "s", "description": c} for c in frame.columns}
    units["tokens"] = {"unit": "token", "description": "not a time"}
    write_with_units(frame, path, units)
    found = bad_times(path)
    assert found == [
        "t.parquet: ttft_s: 1 row(s) inf",
        "t.parquet: tpot_s: 1 row(s) NaN (not null)",
        "t.parquet: latency_s: 1 row(s) negative",
        "t.parquet: step_s: 1 row(s) exactly 0",
    ]
