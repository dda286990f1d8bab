"""The serving tables on expected steps on parallel layouts (issue 43): ``serving_expected``
and ``pools_expected`` take the ``ep``, ``dp_attention`` and ``pp`` dims; at ``ep = pp = 1``
they are the run without the axes; the steady step is expected.parquet's at the layout; the
plans take whole replicas of ``tp x ep x pp`` devices; no expectation sits below its bound;
the simulator on expected steps holds the closed forms at a layout; ``simulated_expected``
replays a plan at its layout.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import sweeps
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.studies.expected.composed import COMPOSED, priced
from sweeps.studies.expected.priced import prompt_counts, prompts_a_step
from sweeps.studies.expected.steps import expected_steps, grid
from sweeps.studies.serving.simulate import backlog, simulate, summarize

from .test_expected_parallel import _config

pytest.importorskip("aiconfigurator_core")

ON_GRID = 2024
"""A point of the expected steps' grid (``steps.grid``): the mean context ``I + O / 2`` of
the first workload, so its steady step is read where the tables hold it exactly."""
assert ON_GRID in grid(4096)
OUTPUT = 128

PLAIN: dict[str, Any] = {
    "sweep": {"name": "xsrvpar"},
    "axes": {"model": ["qwen3-235b-a22b"], "hardware": ["h100-sxm"], "tp": [1],
             "batch": [1, 4, 32], "context": [576, ON_GRID], "kv_dtype": ["fp8"],
             "weight_dtype": ["fp8"], "engine": ["vllm"]},
    "options": {"attention_flops": True},
    "serving": {"prompt_tokens": [ON_GRID - OUTPUT // 2, 512], "output_tokens": [1, OUTPUT],
                "arrival_rate": [20.0], "chunk_tokens": 2048},
}  # fmt: skip
"""A MoE model on H100 under vLLM: three batches, two prompt lengths (mean contexts 2024, on
the tables' grid, and 576, off it), the contexts of expected.parquet those mean contexts."""
LAYOUTS = {"ep": [1, 4], "dp_attention": [True, False], "pp": [1, 2]}


@cache
def _tables(layouts: bool) -> dict[str, pl.DataFrame]:
    from sweeps.export import frames

    config = copy.deepcopy(PLAIN)
    if layouts:
        config["axes"].update(LAYOUTS)
    return frames(sweeps.run(config))


def _parallel() -> dict[str, pl.DataFrame]:
    return _tables(True)


def _text(frame: pl.DataFrame) -> pl.DataFrame:
    """Enum columns as text (joins across runs)."""
    return frame.with_columns(pl.col(pl.Enum).cast(pl.String))


def test_the_serving_tables_take_the_parallel_dims_and_compose_every_layout() -> None:
    tables, plain = _parallel(), _tables(False)
    for name in ("serving_expected", "pools_expected"):
        assert set(PARALLEL_DIMS) <= set(tables[name].columns), name
        assert tables[name].height == 8 * plain[name].height, name  # 2 x 2 x 2 layouts
    served = tables["serving_expected"]
    assert (served["reason"] == "").all()  # the H100's tables hold every layout of the MoE
    # every point is priced, at O = 1 too (batched-prefill one group of B, a chunked step at
    # most the budget: the steps' grid reaches them), as the serving table prices them
    assert served["expected_ttft_s"].null_count() == 0


@pytest.mark.parametrize("name", ["serving_expected", "pools_expected"])
def test_at_ep_1_and_pp_1_the_tables_are_the_run_without_the_axes(name: str) -> None:
    plain = _text(_tables(False)[name])
    layered = _text(_parallel()[name])
    keys = [c for c in plain.columns if plain[c].dtype in (pl.String, pl.Int64)]
    for dp in ("true", "false"):  # data-parallel attention means nothing at ep 1
        rows = layered.filter(pl.col("ep") == 1, pl.col("pp") == 1, pl.col("dp_attention") == dp)
        rows = rows.drop(*PARALLEL_DIMS).select(plain.columns)
        assert rows.sort(keys).equals(plain.sort(keys)), (name, dp)  # bit for bit, nulls too


OFF_GRID = 2e-4
"""The steady step against expected.parquet's step where they are not read at the same
points: at a mean context off the tables' grid (576, between 528 and 581) measured at 1.8e-5
at most over these layouts and batches; static's, the mean of its steps at ``I + j``, at
7.2e-5 (on the grid all others are within 2.2e-16)."""


def test_the_steady_step_is_expected_parquets_step_at_the_layout() -> None:
    tables = _parallel()
    layout = ["batch", *PARALLEL_DIMS]
    step = _text(tables["expected"]).select(*layout, "context", "expected_step_time_s")
    served = _text(tables["serving_expected"]).filter(pl.col("output_tokens") == OUTPUT)
    served = served.with_columns((pl.col("prompt_tokens") + OUTPUT // 2).alias("context"))
    both = served.join(step, on=[*layout, "context"])
    assert both.height == served.height
    for mode in ("serial-prefill", "batched-prefill"):  # t_d(B, I + O/2), the mean context
        rows = both.filter(pl.col("mode") == mode)
        on = rows.filter(pl.col("context") == ON_GRID)
        assert on.height == 24  # 3 batches x 8 layouts
        np.testing.assert_allclose(
            on["expected_step_time_steady_s"], on["expected_step_time_s"], rtol=1e-12
        )
        off = rows.filter(pl.col("context") != ON_GRID)
        np.testing.assert_allclose(
            off["expected_step_time_steady_s"], off["expected_step_time_s"], rtol=OFF_GRID
        )
    # static: the mean of its steps at I + j, j = 1 .. O - 1: the step at the mean context
    static = both.filter(pl.col("mode") == "static")
    np.testing.assert_allclose(
        static["expected_step_time_steady_s"], static["expected_step_time_s"], rtol=OFF_GRID
    )


def test_the_expected_plans_take_whole_replicas_and_no_fewer_devices_than_the_bound() -> None:
    tables = _parallel()
    plans = _text(tables["pools_expected"]).filter(pl.col("expected_devices").is_not_null())
    assert plans.height > 0
    # the 235 GB of FP8 weights fit on 4 and 8 devices (ep 4), not on 1 or 2 (ep 1)
    assert set(plans["ep"]) == {4}
    assert set(plans["pp"]) == {1, 2}
    replica = plans["tp"] * plans["ep"] * plans["pp"]  # a replica's devices
    assert (plans["expected_devices"] % replica == 0).all()
    colocated = plans.filter(pl.col("pool_mode") != "disaggregated")
    each = colocated["tp"] * colocated["ep"] * colocated["pp"]
    assert (colocated["expected_devices"] == colocated["expected_replicas"] * each).all()
    keys = ["kv_heads", "prompt_tokens", "output_tokens", "arrival_rate", *PARALLEL_DIMS]
    bound = (
        _text(tables["pools"])
        .filter(pl.col("feasible"), pl.col("pool_mode") != "disaggregated")
        .select(*keys, pl.col("decode_tp").alias("tp"), "pool_mode", "devices")
    )
    both = colocated.join(bound, on=[*keys, "tp", "pool_mode"])
    assert both.height == colocated.height  # a plan by expectation has one on roofline steps
    assert (both["expected_devices"] >= both["devices"]).all()


def test_no_expectation_on_a_layout_sits_below_its_bound() -> None:
    tables = _parallel()
    keys = ["batch", "prompt_tokens", "output_tokens", *PARALLEL_DIMS]
    bound = _text(tables["serving"]).select(
        *keys, "mode", "ttft_s", "tpot_s", "step_time_steady_s", "output_tokens_per_s_per_device"
    )
    served = _text(tables["serving_expected"]).filter(pl.col("expected_ttft_s").is_not_null())
    same = served.join(bound, on=[*keys, "mode"])  # each mode against its own bound
    assert same.height == served.height
    below = {
        "ttft": same.filter(pl.col("expected_ttft_s") < pl.col("ttft_s")),
        "tpot": same.filter(pl.col("expected_tpot_s") < pl.col("tpot_s")),
        "steady": same.filter(pl.col("expected_step_time_steady_s") < pl.col("step_time_steady_s")),
        "rate": same.filter(
            pl.col("expected_output_tokens_per_s_per_device")
            > pl.col("output_tokens_per_s_per_device")
        ),
    }
    assert {name: frame.height for name, frame in below.items()} == dict.fromkeys(below, 0)
    # and against the bound mode, which no scheduler beats
    floor = bound.filter(pl.col("mode") == "bound").drop("mode")
    under = served.join(floor, on=keys).filter(
        (pl.col("expected_ttft_s") < pl.col("ttft_s"))
        | (pl.col("expected_tpot_s") < pl.col("tpot_s"))
        | (
            pl.col("expected_output_tokens_per_s_per_device")
            > pl.col("output_tokens_per_s_per_device")
        )
    )
    assert under.height == 0


TOLERANCE = 1e-3
"""The expected closed forms against the simulator on the same expected steps at a layout, as
tests/test_expected_serving.py holds them: measured at 2.4e-5 at most on requests/s and TPOT
over five layouts, three workloads and every scheduler (docs/expected.md)."""
CASE = (16, 512, 128, 2048)  # B, I, O, tau


@pytest.mark.parametrize("scheduler", list(COMPOSED))
def test_each_expected_closed_form_matches_the_simulator_at_a_layout(scheduler: str) -> None:
    b, i, o, tau = CASE
    config = _config("qwen3-235b-a22b", "h100-sxm", "vllm", 1, 4, True, 2)  # 8 devices
    steps = expected_steps(config, b, i + o, b * (i + 1), prompt_counts(b, o))
    figures = priced(scheduler, steps, np.array(float(i)), np.array(float(o)), float(tau))
    chunked = scheduler.startswith("chunked")
    costs = steps.step_costs(i + o, b * (i + 1), 8, prompts_a_step(scheduler, b, o), not chunked)
    n = 1200
    timeline = simulate(
        costs, scheduler, b, arrivals=backlog(n, b), requests=n, prompt=i, output=o,
        budget=tau if chunked else 0,
    )  # fmt: skip
    s = summarize(timeline)
    assert s["requests_per_s"] == pytest.approx(float(figures["rate"]), rel=TOLERANCE)
    assert s["tpot_mean_s"] == pytest.approx(float(figures["tpot"]), rel=TOLERANCE)
    # the whole prompts cross the stages at once: a prefill step costs more than its tokens
    # spread as a decode step's (the chunked schedulers' pieces are)
    assert float(steps.prefills(1, i)) > float(steps.linear(i) + steps.prompt(i))


def test_a_layout_not_composed_says_why() -> None:
    dense = expected_steps(
        _config("llama-3.1-8b", "h100-sxm", "vllm", 1, 4, True, 1), 8, 1024, 8192
    )
    assert dense.reason == "ep 4: llama-3.1-8b has no routed experts to split"
    stages = expected_steps(
        _config("qwen3-235b-a22b", "h100-sxm", "vllm", 1, 1, True, 4), 8, 1024, 8192
    )
    assert stages.reason == "pp 4 does not divide the 94 layers: not composed"
    assert np.isnan(priced("serial-prefill", stages, 512.0, 64.0)["rate"])


CONFIG = """
[sweep]
name = "xsrvpar"
[axes]
model = ["qwen3-235b-a22b"]
hardware = ["h100-sxm"]
tp = [1]
batch = [4, 16]
context = [1024]
kv_dtype = ["fp8"]
weight_dtype = ["fp8"]
engine = ["vllm"]
ep = [4]
dp_attention = [true, false]
pp = [1, 2]
[options]
attention_flops = true
[serving]
prompt_tokens = [512]
output_tokens = [128]
arrival_rate = [20.0]
chunk_tokens = 2048
simulate = 200
"""


def test_a_run_replays_the_expected_plan_at_its_layout(
    write_config: Callable[..., Path], tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from sweeps.cli.main import cli

    result = CliRunner().invoke(cli, ["run", str(write_config(CONFIG)), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "xsrvpar"
    replayed = pl.read_parquet(folder / "simulated_expected.parquet")
    pools = _text(pl.read_parquet(folder / "pools_expected.parquet"))
    assert replayed.height == 1
    row = replayed.row(0, named=True)
    plan = pools.filter(
        pl.col("pool_mode") == row["scheduler"],
        pl.col("expected_decode_batch") == row["batch"],
        pl.col("ep") == row["ep"],
        pl.col("pp") == row["pp"],
        pl.col("dp_attention") == str(row["dp_attention"]),
    )
    assert plan.height == 1
    one_pool = pools.filter(pl.col("pool_mode") != "disaggregated")
    fewest = one_pool["expected_devices"].drop_nulls().min()
    assert plan["expected_devices"][0] == fewest
    devices = row["replicas"] * row["tp"] * row["ep"] * row["pp"]
    assert devices == fewest  # the replicas of the plan's layout, tp x ep x pp each
    assert row["tpot_mean_s"] > 0


def test_the_plans_view_says_the_expected_plans_layout() -> None:
    from sweeps.views.plans_expected import expected_plans

    tables = _parallel()
    plans = expected_plans(tables["pools"], tables["pools_expected"])
    found = plans.filter(pl.col("expected_devices").is_not_null())
    assert found.height > 0
    pools = _text(tables["pools_expected"])
    for row in found.iter_rows(named=True):  # the plan with the fewest devices, at its layout
        same = pools.filter(
            pl.col("prompt_tokens") == row["prompt_tokens"],
            pl.col("output_tokens") == row["output_tokens"],
            pl.col("pool_mode") == str(row["expected_scheduler"]),
            pl.col("ep") == row["expected_ep"],
            pl.col("pp") == row["expected_pp"],
            pl.col("dp_attention") == str(row["expected_dp_attention"]),
        )
        assert row["expected_devices"] in set(same["expected_devices"])
    assert (
        "expected_ep"
        not in expected_plans(*(_tables(False)[n] for n in ("pools", "pools_expected"))).columns
    )
