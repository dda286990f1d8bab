"""The pools table and the Pareto flag through the grid, and bad ``[serving]`` inputs at the CLI.

Replica counts are checked as the smallest that meet the objectives (one fewer fails), from the
grid's own prefill, decode and serving tables; the M/D/1 TTFT against a seeded discrete-event
simulation with Poisson arrivals; the Pareto flag against a pairwise reference.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import xarray as xr
from click.testing import CliRunner

import sweeps
from sweeps import physics
from sweeps.cli.main import cli
from sweeps.schedulers import SCHEDULERS

TTFT_SLO, TPOT_SLO, LINK = 0.5, 0.05, 50e9
PROMPT, OUTPUT = 2048, 256
RATES = [1.0, 30.0]
HARDWARE = ["h100-sxm", "h200", "mi300x"]  # mi300x has no catalog price
TP = [1, 2, 4]


@pytest.fixture(scope="module")
def grid() -> xr.Dataset:
    # Llama-3 70B in bf16 does not fit one H100 (141 GB of weights): its tp-1 prefill cannot run
    return sweeps.run(
        {
            "sweep": {"name": "pools-test"},
            "axes": {
                "model": ["llama-3-70b"],
                "hardware": HARDWARE,
                "tp": TP,
                "batch": {"start": 1, "stop": 512, "geometric": True},
                "context": [PROMPT],
                "prompt": [PROMPT],
                "kv_heads": ["native"],
                "kv_dtype": ["bf16"],
                "weight_dtype": ["bf16"],
            },
            "options": {"attention_flops": True},
            "serving": {
                "prompt_tokens": [PROMPT],
                "output_tokens": [OUTPUT],
                "arrival_rate": RATES,
                "ttft_slo_s": TTFT_SLO,
                "tpot_slo_s": TPOT_SLO,
                "kv_link_bandwidth": LINK,
            },
        }
    )


@pytest.fixture(scope="module")
def pools(grid: xr.Dataset) -> pl.DataFrame:
    return sweeps.export.frames(grid)["pools"]


def value(ds: xr.Dataset, name: str, **where: Any) -> float:
    return float(ds[name].sel(where).squeeze())


def md1_wait(rate: float, service: float, replicas: float) -> float:
    """Mean M/D/1 wait at ``rho = rate service / replicas`` [s] (inf when unstable)."""
    rho = rate * service / replicas
    return math.inf if rho >= 1 else rho * service / (2 * (1 - rho))


def prefill_service(ds: xr.Dataset, hardware: str, tp: int) -> float:
    return value(ds, "ttft_s", hardware=hardware, tp=tp, batch=1, prompt=PROMPT)


def handoff(ds: xr.Dataset, tp: int) -> float:
    """Each decode device's shard of the prompt's cache over its own link."""
    cache = value(ds, "kv_bytes_per_sequence_device", tp=tp, context=PROMPT)
    return cache / LINK


def p90_wait(rate: float, service: float, replicas: Any) -> Any:
    """The 0.9 quantile of the M/D/1 wait at ``rho = rate service / replicas`` [s] (a float,
    or an array over an array of replica counts)."""
    wait = physics.md1_wait_quantile(0.9, rate * service / replicas, service)
    return float(wait) if np.ndim(wait) == 0 else wait


def decode_plan(ds: xr.Dataset, hardware: str, tp: int) -> tuple[float, float]:
    """The largest batch that fits and meets the TPOT objective, and its steady step."""
    serving = ds.sel(hardware=hardware, tp=tp, mode="bound").squeeze()
    steady = serving["step_time_steady_s"].values
    ok = serving["serving_feasible"].values & (steady <= TPOT_SLO)
    batches = serving["batch"].values
    if not ok.any():
        return math.nan, math.nan
    best = int(np.flatnonzero(ok)[-1])
    return float(batches[best]), float(steady[best])


def test_disaggregated_counts_are_the_fewest_that_meet_the_objectives(
    grid: xr.Dataset, pools: pl.DataFrame
) -> None:
    rows = pools.filter(pl.col("pool_mode") == "disaggregated")
    assert rows.height == len(RATES) * (len(HARDWARE) * len(TP)) ** 2
    checked = 0
    # the single-prompt M/D/1 pools (the batched ones: tests/test_pools_plans.py)
    serial = rows.filter(pl.col("feasible"), pl.col("scheduler") == "serial-prefill")
    for row in serial.iter_rows(named=True):
        rate, hw_p, tp_p = row["arrival_rate"], row["prefill_hardware"], row["prefill_tp"]
        hw_d, tp_d = row["decode_hardware"], row["decode_tp"]
        service, t_kv = prefill_service(grid, hw_p, tp_p), handoff(grid, tp_d)
        assert row["kv_handoff_s"] == pytest.approx(t_kv, rel=1e-12)
        n = row["prefill_replicas"]
        assert isinstance(n, int)
        # the objective holds at its quantile (0.9); one replica fewer misses it (the
        # tabulated inverse is within 0.1 % of the exact quantile)
        assert service + t_kv + p90_wait(rate, service, n) <= TTFT_SLO * (1 + 1e-3)
        assert n == 1 or service + t_kv + p90_wait(rate, service, n - 1) > TTFT_SLO * (1 - 1e-3)
        assert row["ttft_p90_s"] == pytest.approx(
            service + t_kv + p90_wait(rate, service, n), rel=1e-3
        )
        batch, steady = decode_plan(grid, hw_d, tp_d)
        assert row["decode_batch"] == batch
        assert row["tpot_s"] == pytest.approx(steady, rel=1e-12)
        assert row["decode_replicas"] == math.ceil(rate / (batch / (255 * steady)) - 1e-9)
        assert row["devices"] == n * tp_p + row["decode_replicas"] * tp_d
        checked += 1
    assert checked >= 10


def colocated_candidates(
    grid: xr.Dataset, hw: str, tp: int, rate: float, modes: tuple[str, ...] = SCHEDULERS
) -> list[tuple[int, str, int, float]]:
    """Every (devices, scheduler, batch, TTFT p90) a colocated plan may take, by brute force:
    the fewest replicas meeting TTFT at its 0.9 quantile (the M/D/1 wait at the scheduler's
    prefill of one prompt, plus half a step in flight) with the slots at most 0.9 busy."""
    out = []
    for mode in modes:
        row = grid.sel(hardware=hw, tp=tp, mode=mode).squeeze()
        for i, batch in enumerate(row["batch"].values):
            at = row.isel(batch=i)
            tpot = float(at["tpot_s"])
            if not bool(at["serving_feasible"]) or not tpot <= TPOT_SLO:
                continue
            capacity = float(at["output_tokens_per_s_per_device"]) * tp / OUTPUT
            step = float(at["step_time_steady_s"])
            if mode.startswith("chunked"):
                service = PROMPT * step / float(at["chunk_tokens"])
            else:
                service = prefill_service(grid, hw, tp)
            ahead = float(at["serving_ttft_s"]) + step / 2
            # every replica count from 1 to 399 at once (the M/D/1 quantile is vectorized):
            # the fewest that meet both, with no assumption that the conditions are monotone
            n = np.arange(1, 400)
            ttft = ahead + p90_wait(rate, service, n)
            meets = np.flatnonzero((ttft <= TTFT_SLO) & (rate / n <= 0.9 * capacity))
            if meets.size == 0:
                continue
            fewest = int(n[meets[0]])
            out.append((fewest * tp, mode, int(batch), float(ttft[meets[0]])))
    return out


def test_each_schedulers_plan_takes_the_fewest_devices_over_its_batches(
    grid: xr.Dataset, pools: pl.DataFrame
) -> None:
    rows = pools.filter(pl.col("pool_mode") != "disaggregated")
    assert rows.height == len(RATES) * len(HARDWARE) * len(TP) * len(SCHEDULERS)
    assert (rows["prefill_hardware"] == rows["decode_hardware"]).all()
    for row in rows.iter_rows(named=True):
        rate, hw, tp = row["arrival_rate"], row["decode_hardware"], row["decode_tp"]
        mode = str(row["pool_mode"])
        candidates = colocated_candidates(grid, hw, tp, rate, (mode,))
        if not row["feasible"]:
            assert not candidates
            assert row["devices"] is None  # null, never NaN
            continue
        fewest = min(c[0] for c in candidates)
        # the tabulated M/D/1 inverse may round one replica either way at the boundary
        assert abs(row["devices"] - fewest) <= tp
        assert row["decode_replicas"] == row["prefill_replicas"] == row["devices"] // tp
        assert row["scheduler"] == mode
        assert row["requests_per_s"] == rate
        if row["devices"] == fewest:  # the smallest batch of those (one price per device, tp)
            assert row["decode_batch"] == min(c[2] for c in candidates if c[0] == fewest)
        assert row["ttft_p90_s"] <= TTFT_SLO * (1 + 1e-3)
        assert row["ttft_p50_s"] <= row["ttft_p90_s"] <= row["ttft_p99_s"]
        assert row["kv_handoff_s"] is None


def test_a_smaller_batch_wins_and_more_batches_never_make_a_plan_bigger() -> None:
    """Llama-3 8B on an H200, 2048/256 at 100 requests/s, TTFT 50 ms: the plan over batches
    16-256 takes a batch below 64, on fewer devices than the plan of batch 64 alone; adding
    batches to the axis can only keep or shrink a plan."""

    def plan(batches: list[int]) -> dict[str, Any]:
        ds = sweeps.run(
            {
                "sweep": {"name": "smaller"},
                "axes": {"model": ["llama-3-8b"], "hardware": ["h200"], "batch": batches},
                "serving": {
                    "prompt_tokens": [2048],
                    "output_tokens": [256],
                    "arrival_rate": [100.0],
                    "ttft_slo_s": 0.05,
                    "tpot_slo_s": 0.05,
                },
            }
        )
        frame = sweeps.export.frames(ds)["pools"]
        one_pool = frame.filter(pl.col("pool_mode") != "disaggregated", pl.col("feasible"))
        if one_pool.height == 0:
            return {"feasible": False}
        return one_pool.sort("devices").row(0, named=True)

    alone, wide = plan([64]), plan([16, 32, 64, 128, 256])
    assert wide["feasible"]
    assert wide["decode_batch"] < 64
    assert wide["devices"] < alone["devices"]
    for batches in ([16], [16, 64], [64, 256], [32, 64, 128]):
        narrow = plan(batches)
        if narrow["feasible"]:
            assert wide["devices"] <= narrow["devices"]


def test_md1_ttft_against_a_poisson_simulation(grid: xr.Dataset, pools: pl.DataFrame) -> None:
    # the busiest prefill pool of the table: replicas fed at random, Lindley's recursion each
    rows = pools.filter(
        pl.col("pool_mode") == "disaggregated",
        pl.col("feasible"),
        pl.col("scheduler") == "serial-prefill",
    )
    rows = rows.with_columns(
        (pl.col("arrival_rate") / pl.col("prefill_replicas")).alias("per_replica")
    )
    row = rows.sort("ttft_s", descending=True).row(0, named=True)
    service = prefill_service(grid, row["prefill_hardware"], row["prefill_tp"])
    t_kv = handoff(grid, row["decode_tp"])
    rho = row["per_replica"] * service
    assert rho > 0.2  # a queue that waits
    rng = np.random.default_rng(12)
    count, replicas = 60_000, int(row["prefill_replicas"])
    arrivals = np.cumsum(rng.exponential(1 / row["arrival_rate"], count))
    chosen = rng.integers(0, replicas, count)
    free = np.zeros(replicas)
    waits = np.empty(count)
    for n in range(count):
        k = chosen[n]
        start = max(arrivals[n], free[k])
        waits[n] = start - arrivals[n]
        free[k] = start + service
    ttft = waits[2_000:] + service + t_kv
    for stat, pinned in ((np.mean, "ttft_s"), (lambda t: np.quantile(t, 0.9), "ttft_p90_s")):
        parts = np.array([stat(part) for part in ttft.reshape(58, -1)])  # batch statistics
        half_width = 3.5 * parts.std(ddof=1) / math.sqrt(parts.size)
        assert abs(stat(ttft) - row[pinned]) < half_width, pinned


def test_pareto_front_of_the_serving_table(grid: xr.Dataset) -> None:
    frame = sweeps.export.frames(grid)["serving"]
    groups = frame.partition_by(["model", "prompt_tokens", "output_tokens"])
    assert groups
    for group in groups:
        x = group["output_tokens_per_s_per_device"].to_numpy()
        y = group["tokens_per_s_per_user"].to_numpy()
        ok = group["meets_slo"].to_numpy()
        on = group["on_pareto_front"].to_numpy()
        assert not (on & ~ok).any()  # only points meeting the objectives
        xo, yo = x[ok], y[ok]
        dominated = (
            (xo[None, :] >= xo[:, None])
            & (yo[None, :] >= yo[:, None])
            & ((xo[None, :] > xo[:, None]) | (yo[None, :] > yo[:, None]))
        ).any(axis=1)
        np.testing.assert_array_equal(on[ok], ~dominated)
        assert on.sum() >= 2
        assert dominated.sum() > on.sum()


# --- bad [serving] inputs at the CLI --------------------------------------------------------

GOOD = """
[sweep]
name = "bad-serving"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 64]
context = [2048]
kv_heads = ["native"]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
[serving]
"""

GOOD_SERVING = {
    "prompt_tokens": "[2048]",
    "output_tokens": "[256]",
    "arrival_rate": "[1.0]",
    "ttft_slo_s": "2.0",
    "chunk_tokens": "2048",
}


@pytest.mark.parametrize(
    ("key", "bad", "expected"),
    [
        ("arrival_rate", "[1.0, -2.0]", r"serving\.arrival_rate\[1\]: .*greater than 0.*-2\.0"),
        ("output_tokens", "[0, 256]", r"serving\.output_tokens\[0\]: .*greater than 0 \(got 0\)"),
        ("ttft_slo_s", "0", r"serving\.ttft_slo_s: .*greater than 0 \(got 0\)"),
        ("chunk_tokens", "32", r"serving\.chunk_tokens: 32 is not larger than the largest batch"),
        ("burst", "3", r"serving\.burst: unknown key; allowed: arrival_rate, chunk_tokens"),
    ],
)
def test_bad_serving_inputs_exit_2_named_and_write_nothing(
    tmp_path: Path, key: str, bad: str, expected: str
) -> None:
    table = {**GOOD_SERVING, key: bad}
    path = tmp_path / "serving.toml"
    path.write_text(GOOD + "".join(f"{k} = {v}\n" for k, v in table.items()))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert lines
    assert str(path) in lines[0]
    assert re.search(expected, lines[0])
    assert not out.exists()


def test_the_good_serving_config_runs(tmp_path: Path) -> None:
    path = tmp_path / "serving.toml"
    path.write_text(GOOD + "".join(f"{k} = {v}\n" for k, v in GOOD_SERVING.items()))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = {p.name for p in (out / "bad-serving").iterdir()}
    assert {"serving.parquet", "pools.parquet"} <= written


def test_more_load_never_needs_fewer_devices(pools: pl.DataFrame) -> None:
    plan = ["prefill_hardware", "prefill_tp", "decode_hardware", "decode_tp", "pool_mode"]
    wide = pools.pivot(on="arrival_rate", index=plan, values="devices")
    low, high = wide[str(RATES[0])].to_numpy(), wide[str(RATES[1])].to_numpy()
    both = ~np.isnan(low) & ~np.isnan(high)
    assert both.sum() > 50
    assert (high[both] >= low[both]).all()
    assert (high[both] > low[both]).any()
    # a plan that cannot meet the objectives at a light load cannot at a heavy one
    assert not (np.isnan(low) & ~np.isnan(high)).any()
