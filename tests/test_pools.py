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
from sweeps.cli.main import cli

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
    cache = value(ds, "kv_bytes_per_sequence_device", tp=tp, context=PROMPT)
    return cache / LINK


def decode_plan(ds: xr.Dataset, hardware: str, tp: int) -> tuple[float, float]:
    """The largest batch that fits and meets the TPOT objective, and its steady step."""
    serving = ds.sel(hardware=hardware, tp=tp, mode="serial-prefill").squeeze()
    steady = serving["step_time_steady_s"].values
    ok = serving["fits_at_peak"].values & (steady <= TPOT_SLO)
    batches = serving["batch"].values
    if not ok.any():
        return math.nan, math.nan
    best = int(np.flatnonzero(ok)[-1])
    return float(batches[best]), float(steady[best])


def price(ds: xr.Dataset, hardware: str) -> float:
    p = ds["price_per_hour"].sel(hardware=hardware).values
    return math.nan if p is None or (isinstance(p, float) and math.isnan(p)) else float(p)


def test_disaggregated_counts_are_the_fewest_that_meet_the_objectives(
    grid: xr.Dataset, pools: pl.DataFrame
) -> None:
    rows = pools.filter(pl.col("pool_mode") == "disaggregated")
    assert rows.height == len(RATES) * (len(HARDWARE) * len(TP)) ** 2
    checked = 0
    for row in rows.iter_rows(named=True):
        rate, hw_p, tp_p = row["arrival_rate"], row["prefill_hardware"], row["prefill_tp"]
        hw_d, tp_d = row["decode_hardware"], row["decode_tp"]
        fits = value(grid, "max_batch", hardware=hw_p, tp=tp_p, context=PROMPT) >= 1
        batch, steady = decode_plan(grid, hw_d, tp_d)
        service, t_kv = prefill_service(grid, hw_p, tp_p), handoff(grid, tp_p)
        n_p, n_d = row["prefill_replicas"], row["decode_replicas"]
        if not fits or service + t_kv >= TTFT_SLO or math.isnan(batch):
            assert not row["feasible"]
            assert row["devices"] is None
            assert row["cost_per_million_output_tokens_usd"] is None or math.isnan(
                row["cost_per_million_output_tokens_usd"]
            )
            continue
        assert row["feasible"]
        ttft = md1_wait(rate, service, n_p) + service + t_kv
        assert row["ttft_s"] == pytest.approx(ttft, rel=1e-12)
        assert ttft <= TTFT_SLO * (1 + 1e-12)
        assert n_p == 1 or md1_wait(rate, service, n_p - 1) + service + t_kv > TTFT_SLO
        assert row["decode_batch"] == batch
        assert row["tpot_s"] == pytest.approx(steady, rel=1e-12)
        mu = batch / ((OUTPUT - 1) * steady)
        assert n_d * mu >= rate * (1 - 1e-12)
        assert (n_d - 1) * mu < rate
        devices = n_p * tp_p + n_d * tp_d
        assert row["devices"] == devices
        assert row["goodput_tokens_per_s_per_device"] == pytest.approx(rate * OUTPUT / devices)
        fleet = n_p * tp_p * price(grid, hw_p) + n_d * tp_d * price(grid, hw_d)
        cost = row["cost_per_million_output_tokens_usd"]
        if math.isnan(fleet):  # no price known: null, never zero
            assert cost is None or math.isnan(cost)
        else:
            assert cost == pytest.approx(1e6 * fleet / (3600 * rate * OUTPUT), rel=1e-12)
        assert row["decode_time_share"] == pytest.approx(n_d * tp_d / devices)
        checked += 1
    assert checked > 50
    # the weights of a 70B model in bf16 do not fit one H100: no prefill pool there
    h100 = rows.filter(pl.col("prefill_hardware") == "h100-sxm", pl.col("prefill_tp") == 1)
    assert h100["prefill_replicas"].null_count() == h100.height
    assert not h100["feasible"].any()
    # more load, more replicas somewhere
    assert rows.filter(pl.col("arrival_rate") == 30.0)["prefill_replicas"].max() > 1


def test_colocated_rows_are_on_the_diagonal_and_minimal(
    grid: xr.Dataset, pools: pl.DataFrame
) -> None:
    rows = pools.filter(pl.col("pool_mode") == "colocated")
    assert rows.height == len(RATES) * len(HARDWARE) * len(TP)
    assert (rows["prefill_hardware"] == rows["decode_hardware"]).all()
    assert (rows["prefill_tp"] == rows["decode_tp"]).all()
    for row in rows.filter(pl.col("feasible")).iter_rows(named=True):
        rate, hw, tp = row["arrival_rate"], row["decode_hardware"], row["decode_tp"]
        serving = grid.sel(hardware=hw, tp=tp, mode="serial-prefill").squeeze()
        tpot = serving["tpot_s"].values
        t_p = prefill_service(grid, hw, tp)
        slack = TTFT_SLO - t_p - serving["step_time_steady_s"].values
        ok = serving["fits_at_peak"].values & (tpot <= TPOT_SLO) & (slack > 0)
        best = int(np.flatnonzero(ok)[-1])
        assert row["decode_batch"] == serving["batch"].values[best]
        steady = float(serving["step_time_steady_s"].values[best])
        r = float(serving["output_tokens_per_s_per_device"].values[best]) * tp / OUTPUT
        n = row["prefill_replicas"]
        assert row["decode_replicas"] == n
        assert row["devices"] == n * tp

        def meets(replicas: float) -> bool:
            queued = t_p + steady + md1_wait(rate, t_p, replicas)  # noqa: B023
            return replicas * r >= rate * (1 - 1e-12) and queued <= TTFT_SLO * (1 + 1e-12)  # noqa: B023

        assert meets(n)
        assert n == 1 or not meets(n - 1)
        assert row["ttft_s"] == pytest.approx(t_p + steady + md1_wait(rate, t_p, n), rel=1e-12)
        assert row["tpot_s"] == pytest.approx(tpot[best], rel=1e-12)
        assert row["decode_time_share"] == pytest.approx(1 - r * t_p, rel=1e-12)
    assert rows["feasible"].sum() >= 6


def test_a_colocated_plan_takes_a_batch_that_leaves_ttft_room() -> None:
    # t_p(1, 2048) is 30 ms for Llama-3 8B on an H100; with TTFT within 45 ms and a loose TPOT
    # the largest batches meet TPOT but their step in flight leaves the prompt no time
    ds = sweeps.run(
        {
            "sweep": {"name": "ttft-room"},
            "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"], "batch": [16, 64, 128]},
            "serving": {
                "prompt_tokens": [2048],
                "output_tokens": [256],
                "arrival_rate": [5.0],
                "ttft_slo_s": 0.045,
                "tpot_slo_s": 1.0,
                "chunk_tokens": 0,
            },
        }
    )
    colocated = ds.sel(mode="serial-prefill").squeeze()
    steady = colocated["step_time_steady_s"].values
    ttft = colocated["serving_ttft_s"].values + steady  # t_p(1, I) + the step in flight
    assert ttft[-1] > 0.045 > ttft[1]  # batch 128 fits but leaves no room, batch 64 does
    assert bool(colocated["serving_feasible"].values[-1])
    assert (colocated["tpot_s"].values <= 1.0).all()
    row = (
        sweeps.export.frames(ds)["pools"]
        .filter(pl.col("pool_mode") == "colocated")
        .row(0, named=True)
    )
    assert row["feasible"]
    assert row["decode_batch"] == 64
    assert row["ttft_s"] <= 0.045
    assert steady[1] < steady[2]


def test_md1_ttft_against_a_poisson_simulation(grid: xr.Dataset, pools: pl.DataFrame) -> None:
    # the busiest prefill pool of the table: replicas fed at random, Lindley's recursion each
    rows = pools.filter(pl.col("pool_mode") == "disaggregated", pl.col("feasible"))
    rows = rows.with_columns(
        (pl.col("arrival_rate") / pl.col("prefill_replicas")).alias("per_replica")
    )
    row = rows.sort("ttft_s", descending=True).row(0, named=True)
    service = prefill_service(grid, row["prefill_hardware"], row["prefill_tp"])
    t_kv = handoff(grid, row["prefill_tp"])
    rho = row["per_replica"] * service
    assert rho > 0.5  # a queue that waits
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
    means = ttft.reshape(58, -1).mean(axis=1)  # batch means: nearly independent
    half_width = 3.5 * means.std(ddof=1) / math.sqrt(means.size)
    assert abs(ttft.mean() - row["ttft_s"]) < half_width


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
