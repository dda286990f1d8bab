"""Closed-loop load, ``[serving] concurrency``: Little's law's fixed point, against a plain
scalar solver, through the pools table, against the simulator's closed loop, and bad values at
the CLI (docs/serving.md section 4)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import sweeps
from sweeps import physics
from sweeps.cli.main import cli
from sweeps.studies.serving.simulate import closed_loop, simulate, summarize
from tests.simulation import point


def scalar_rate(clients: float, fixed: float, service: float, servers: float, cap: float) -> float:
    """``lambda = min(cap, C / (fixed + W(lambda)))`` by plain bisection on floats [request/s]."""

    def excess(rate: float) -> float:
        rho = rate * service / servers
        wait = math.inf if rho >= 1 else rho * service / (2 * (1 - rho))
        return rate * (fixed + wait) - clients

    hi = min(cap, clients / fixed)
    if excess(hi) <= 0:
        return hi
    lo = 0.0
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) <= 0 else (lo, mid)
    return lo


@settings(max_examples=30, deadline=None)
@given(
    clients=st.integers(1, 4096),
    fixed=st.floats(0.01, 100.0),
    service=st.floats(1e-4, 1.0),
    servers=st.integers(1, 64),
    cap=st.floats(0.1, 1e5),
)
def test_the_fixed_point_is_a_scalar_solvers(
    clients: int, fixed: float, service: float, servers: int, cap: float
) -> None:
    want = scalar_rate(clients, fixed, service, servers, cap)
    got = float(physics.closed_loop_rate(clients, fixed, service, servers, cap))
    assert got == pytest.approx(want, rel=1e-9)
    # it is a fixed point: Little's law holds, or the cap binds
    rho = got * service / servers
    wait = rho * service / (2 * (1 - rho))
    assert got <= cap * (1 + 1e-12)
    assert got == pytest.approx(cap, rel=1e-9) or got * (fixed + wait) == pytest.approx(clients)


def test_the_fixed_point_is_vectorized_over_a_grid() -> None:
    clients = xr.Variable("concurrency", np.array([1.0, 8.0, 64.0, 512.0]))
    fixed = xr.Variable("batch", np.array([0.5, 2.0, 8.0]))
    rate = physics.closed_loop_rate(clients, fixed, 0.03, 2.0, 60.0)
    assert rate.dims == ("concurrency", "batch")
    for i, c in enumerate(clients.values):
        for j, f in enumerate(fixed.values):
            assert float(rate.values[i, j]) == pytest.approx(scalar_rate(c, f, 0.03, 2, 60.0))


PROMPT, OUTPUT = 512, 64


def closed_grid(batch: int, clients: list[int], scheduler: str) -> xr.Dataset:
    """The one point of ``tests.simulation.config_text`` with a closed-loop ``[serving]``."""
    return sweeps.run(
        {
            "sweep": {"name": "closed"},
            "axes": {
                "model": ["llama-3-8b"],
                "hardware": ["h100-sxm"],
                "batch": [batch],
                "context": [1024],
                "kv_heads": ["native"],
                "kv_dtype": ["bf16"],
                "weight_dtype": ["bf16"],
            },
            "options": {"attention_flops": True},
            "serving": {
                "prompt_tokens": [PROMPT],
                "output_tokens": [OUTPUT],
                "concurrency": clients,
                "ttft_slo_s": 10.0,
                "tpot_slo_s": 1.0,
                "schedulers": [scheduler],
            },
        }
    )


@pytest.mark.parametrize(("scheduler", "batch", "clients"), [
    ("serial-prefill", 16, 16), ("serial-prefill", 16, 48), ("batched-prefill", 32, 32),
])  # fmt: skip
def test_the_closed_loop_against_the_simulator(scheduler: str, batch: int, clients: int) -> None:
    """``C = N B`` clients keep every slot busy (``B <= O - 1``: one slot frees a step). The
    simulated rate is Little's, ``C / E2E`` with no wait, to its confidence interval; the
    table's fixed point lies below it by the M/D/1 wait, an upper estimate for arrivals that
    completions regulate (within 0.5 % here)."""
    ds = closed_grid(batch, [clients], scheduler)
    frames = sweeps.export.frames(ds)
    row = frames["pools"].filter(pl.col("pool_mode") == scheduler).row(0, named=True)
    saturated = frames["serving"].filter(pl.col("mode") == scheduler).row(0, named=True)
    replicas = row["decode_replicas"]
    assert replicas == clients // batch
    assert row["devices"] == replicas
    assert row["decode_batch"] == batch
    no_wait = clients / (saturated["ttft_s"] + (OUTPUT - 1) * saturated["tpot_s"])
    tl = simulate(
        point(), scheduler, batch, arrivals=closed_loop(clients), requests=6000,
        prompt=PROMPT, output=OUTPUT, replicas=replicas,
    )  # fmt: skip
    stats = summarize(tl, 10.0, 1.0)
    latency, half = stats["latency_mean_s"], stats["latency_mean_ci_s"]
    simulated = clients / latency  # Little's law in the simulation
    assert stats["requests_per_s"] == pytest.approx(simulated, rel=1e-6)
    ci = simulated * half / latency + 1e-9 * simulated
    assert abs(simulated - no_wait) <= ci
    assert row["requests_per_s"] <= simulated + ci
    assert row["requests_per_s"] == pytest.approx(simulated, rel=5e-3)


def test_littles_law_holds_in_the_table() -> None:
    ds = closed_grid(16, [4, 16, 64, 256], "serial-prefill")
    pools = sweeps.export.frames(ds)["pools"].filter(pl.col("feasible"))
    assert "arrival_rate" not in pools.columns
    assert pools.height == 8  # serial-prefill and disaggregated at each concurrency
    e2e = pools["ttft_s"] + (OUTPUT - 1) * pools["tpot_s"]
    np.testing.assert_allclose((pools["requests_per_s"] * e2e).to_numpy(), pools["concurrency"])
    # more clients: more replicas and a higher rate, never fewer
    for _, group in pools.sort("concurrency").group_by("pool_mode"):
        assert np.all(np.diff(group["devices"].to_numpy()) >= 0)
        assert np.all(np.diff(group["requests_per_s"].to_numpy()) > 0)
    one = pools.filter(pl.col("pool_mode") == "serial-prefill")
    assert (one["decode_replicas"] >= np.ceil(one["concurrency"] / 16)).all()


GOOD = """
[sweep]
name = "closed-cli"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [16]
context = [512]
[serving]
prompt_tokens = [512]
output_tokens = [64]
"""


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        ("concurrency = [0]", r"serving\.concurrency\[0\]: .*greater than 0 \(got 0\)"),
        ("concurrency = [8, -2]", r"serving\.concurrency\[1\]: .*greater than 0 \(got -2\)"),
        (
            "concurrency = [8]\narrival_rate = [1.0]",
            r"serving: give either arrival_rate .* or concurrency .*, not both",
        ),
    ],
)
def test_bad_concurrency_exits_2_named_and_writes_nothing(
    tmp_path: Path, load: str, expected: str
) -> None:
    path = tmp_path / "closed.toml"
    path.write_text(GOOD + load + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert lines
    assert str(path) in lines[0]
    assert re.search(expected, lines[0])
    assert not out.exists()


def test_a_closed_loop_run_writes_its_plans(tmp_path: Path) -> None:
    path = tmp_path / "closed.toml"
    path.write_text(GOOD + "concurrency = [8, 64]\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "clients" in result.output
    pools = pl.read_parquet(out / "closed-cli" / "pools.parquet")
    assert sorted(set(pools["concurrency"].to_list())) == [8, 64]
    assert pools["requests_per_s"].null_count() == 0
