"""Serving on expected step times (issue 43 item 5): the expected steps against the composed
step, the named schedulers' expected closed forms against the simulator replaying the same
expected step costs, and no expected figure better than the bound's.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import sweeps
from sweeps.catalog import load_catalog
from sweeps.measured.database import OPERATIONS, parse
from sweeps.studies.expected.composed import COMPOSED, priced
from sweeps.studies.expected.priced import prompt_counts, prompts_a_step
from sweeps.studies.expected.step import Config, step
from sweeps.studies.expected.steps import ExpectedSteps, expected_steps, grid
from sweeps.studies.serving.simulate import backlog, simulate, step_time, summarize

pytest.importorskip("aiconfigurator_core")

CATALOG = load_catalog()
TOLERANCE = 1e-3
"""The expected closed forms against the simulator on the same expected steps: measured at
0.063 % at most on requests/s and 0.036 % on TPOT over these points, every scheduler
(docs/expected.md)."""

# (model, device, tp, B, I, O, tau): the serving check point, a budget-limited chunked point,
# slots freeing in groups (B > O - 1), B = 1, MoE at tp 8
POINTS = [
    ("llama-3.1-8b", "h100-sxm", 1, 64, 2048, 256, 2048),
    ("llama-3.1-8b", "h100-sxm", 1, 256, 512, 64, 2048),
    ("llama-3.1-8b", "h100-sxm", 1, 16, 512, 128, 2048),
    ("llama-3.1-8b", "b200", 1, 1, 2048, 256, 2048),
    ("qwen3-235b-a22b", "h100-sxm", 8, 128, 1024, 128, 4096),
]


def _config(model: str, device: str, tp: int) -> Config:
    m, d = CATALOG.models[model], CATALOG.hardware[device]
    peak = d.peak_flops["bf16"]
    return Config(m, d, tp, m.kv_heads, "bf16", "bf16", 2.0, 2.0, peak, peak, parse("vllm"))


@cache
def _steps(case: tuple) -> ExpectedSteps:  # type: ignore[type-arg]
    model, device, tp, b, i, o, _ = case
    return expected_steps(_config(model, device, tp), b, i + o, b * (i + 1), prompt_counts(b, o))


def test_a_decode_step_on_the_grid_is_the_composed_step_exactly() -> None:
    config = _config("llama-3.1-8b", "h100-sxm", 1)
    steps = expected_steps(config, 64, 4096, 64 * 4097)
    contexts = np.array([s for s in (512, 1024, 2048, 4096) if s in grid(4096)])
    composed = step(config, np.array([64]), contexts).total()[0]
    assert steps.decode(64, contexts) == pytest.approx(composed, rel=1e-12)
    alone = step(config, np.array([1]), np.array([2048]), prefill=True)
    # a prompt alone: the same operations, the LM head at min(T, B) rows, not one (weight-bound)
    ops = [op for op in OPERATIONS if op != "lm_head"]
    own = sum(float(alone.expected[op][0, 0]) for op in ops)
    head = float(step(config, np.array([64]), np.array([2])).expected["lm_head"][0, 0])
    assert steps.prefills(1, 2048) == pytest.approx(own + head, rel=0.01)  # T interpolated


def test_the_step_costs_price_a_step_as_the_expected_steps_do() -> None:
    config = _config("llama-3.1-8b", "h100-sxm", 1)
    steps = expected_steps(config, 64, 2304, 64 * 2049, (1, 3))
    costs = steps.step_costs(2304, 64 * 2049, 1, prompts=3)
    contexts = np.full(64, 2100)
    assert step_time(costs, contexts) == pytest.approx(float(steps.decode(64, 2100)), rel=1e-9)
    whole = step_time(costs, [], [(0, 2048, 2048)] * 3)
    assert whole == pytest.approx(float(steps.prefills(3, 2048)), rel=1e-9)
    # three prompts together: each prompt's attention is the measured three's over three (at a
    # point of the tables' grid: the longest prompt)
    three = step(config, np.array([3]), np.array([2304]), prefill=True).expected["attention"]
    assert float(steps.prompt(2304, 3)) * 3 == pytest.approx(float(three[0, 0]), rel=1e-9)
    # a chunk pays its increment of the prompt's attention: the chunks of one prompt sum to it
    alone = steps.step_costs(2304, 64 * 2049, 1)
    first = step_time(alone, [], [(0, 1024, 2048)]) - float(steps.linear(1024))
    second = step_time(alone, [], [(1024, 1024, 2048)]) - float(steps.linear(1024))
    assert first + second == pytest.approx(float(steps.prompt(2048)), rel=1e-9)


def test_a_device_without_data_has_no_steps_and_says_why() -> None:
    steps = expected_steps(_config("llama-3.1-8b", "mi300x", 1), 8, 1024, 8192)
    assert steps.reason == "device 'mi300x' not in the database"
    assert np.isnan(priced("serial-prefill", steps, 512.0, 64.0)["rate"])


@pytest.mark.parametrize("case", POINTS, ids=lambda c: f"{c[0]}-{c[3]}-{c[4]}-{c[5]}")
@pytest.mark.parametrize("scheduler", list(COMPOSED))
def test_each_expected_closed_form_matches_the_simulator_on_expected_steps(
    scheduler: str,
    case: tuple,  # type: ignore[type-arg]
) -> None:
    _, _, tp, b, i, o, tau = case
    steps = _steps(case)
    figures = priced(scheduler, steps, np.array(float(i)), np.array(float(o)), float(tau))
    n = max(12 * b, 1200)
    timeline = simulate(
        steps.step_costs(i + o, b * (i + 1), tp, prompts_a_step(scheduler, b, o)), scheduler, b,
        arrivals=backlog(n, b),
        requests=n, prompt=i, output=o, budget=tau if scheduler.startswith("chunked") else 0,
    )  # fmt: skip
    s = summarize(timeline)
    assert s["requests_per_s"] == pytest.approx(float(figures["rate"]), rel=TOLERANCE)
    assert s["tpot_mean_s"] == pytest.approx(float(figures["tpot"]), rel=TOLERANCE)


@cache
def _tables() -> dict[str, pl.DataFrame]:
    """A generated grid (seeded): two models, two devices with data and one without, two tp,
    batches, prompts and outputs drawn at random."""
    rng = np.random.default_rng(43)
    batch = sorted({int(b) for b in rng.integers(1, 257, 4)})
    prompt = sorted({int(p) for p in rng.integers(64, 4097, 3)})
    output = sorted({1, *(int(o) for o in rng.integers(2, 513, 2))})
    ds = sweeps.run({
        "sweep": {"name": "expected-serving"},
        "axes": {"model": ["llama-3.1-8b", "qwen3-32b"], "hardware": ["h100-sxm", "b200", "mi300x"],
                 "tp": [1, 2], "batch": batch, "context": [1024], "kv_heads": ["native"],
                 "kv_dtype": ["bf16"], "weight_dtype": ["bf16"], "engine": ["vllm"]},
        "options": {"attention_flops": True},
        "serving": {"prompt_tokens": prompt, "output_tokens": output, "arrival_rate": [5.0],
                    "chunk_tokens": 8192},
    })  # fmt: skip
    from sweeps.export import frames

    return frames(ds)


KEYS = ["model", "hardware", "tp", "batch", "kv_heads", "kv_dtype", "weight_dtype"]
WORKLOAD = [*KEYS, "prompt_tokens", "output_tokens"]


def test_no_expected_figure_beats_the_bound_on_generated_cases() -> None:
    tables = _tables()
    expected = tables["serving_expected"].filter(pl.col("reason") == "")
    assert expected.height > 0
    bound = (
        tables["serving"]
        .filter(pl.col("mode").cast(pl.String) == "bound")
        .select(*WORKLOAD, "ttft_s", "tpot_s", "output_tokens_per_s_per_device")
    )
    both = expected.join(bound, on=WORKLOAD, how="inner")
    assert both.height == expected.height
    assert (both["expected_ttft_s"] >= both["ttft_s"]).all()
    tpot = both.filter(pl.col("output_tokens") > 1)
    assert (tpot["expected_tpot_s"] >= tpot["tpot_s"]).all()
    rate = both["expected_output_tokens_per_s_per_device"]
    assert (rate <= both["output_tokens_per_s_per_device"]).all()


def test_the_expected_table_has_no_bound_row_and_nulls_with_their_reason() -> None:
    tables = _tables()
    expected = tables["serving_expected"]
    assert "bound" not in set(expected["mode"].cast(pl.String))
    assert not set(expected.columns) & {"ttft_s", "tpot_s", "output_tokens_per_s_per_device"}
    mi300x = expected.filter(pl.col("hardware") == "mi300x")
    assert mi300x["expected_ttft_s"].null_count() == mi300x.height
    assert set(mi300x["reason"]) == {"device 'mi300x' not in the database"}
    greedy = expected.filter(
        (pl.col("mode").cast(pl.String) == "chunked-greedy") & (pl.col("hardware") != "mi300x")
    )
    assert greedy["expected_ttft_s"].null_count() == 0  # priced, as every named scheduler


def test_a_yes_or_no_about_an_expectation_is_null_where_there_is_none() -> None:
    tables = _tables()
    checks = {  # table: (its yes/no column, a column null exactly where there is no expectation)
        "serving_expected": ("expected_meets_slo", "expected_ttft_s"),
        "expected": ("below_bound", "expected_step_time_s"),
        "pools_expected": ("expected_slot_bound", "expected_devices"),
    }
    for table, (flag, value) in checks.items():
        frame = tables[table]
        assert frame[flag].dtype == pl.Boolean
        assert frame.filter(pl.col(value).is_null())[flag].null_count() > 0, table
        assert (frame[flag].is_null() == frame[value].is_null()).all(), table  # never false
        assert frame.filter(pl.col(value).is_not_null())[flag].null_count() == 0, table
    mi300x = tables["serving_expected"].filter(pl.col("hardware") == "mi300x")
    assert mi300x["expected_meets_slo"].null_count() == mi300x.height
    assert tables["serving_expected"]["expected_meets_slo"].drop_nulls().len() > 0


def test_without_an_engine_there_is_no_expected_serving_table() -> None:
    ds = sweeps.run({
        "sweep": {"name": "no-engine"},
        "axes": {"model": ["llama-3.1-8b"], "hardware": ["h100-sxm"], "tp": [1], "batch": [8],
                 "context": [1024]},
        "serving": {"prompt_tokens": [512], "output_tokens": [64], "arrival_rate": [1.0]},
    })  # fmt: skip
    assert not any(str(name).startswith("expected_") for name in ds.data_vars)


def test_no_expected_plan_needs_fewer_devices_than_the_roofline_plan_of_its_scheduler() -> None:
    tables = _tables()
    plan = ["model", "kv_heads", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens"]
    roofline = (
        tables["pools"]
        .filter(
            pl.col("feasible"),
            pl.col("pool_mode").cast(pl.String) != "disaggregated",
        )
        .select(
            *plan,
            "arrival_rate",
            pl.col("decode_hardware").cast(pl.String).alias("hardware"),
            pl.col("decode_tp").alias("tp"),
            pl.col("pool_mode").cast(pl.String).alias("mode"),
            "devices",
        )
    )
    expected = (
        tables["pools_expected"]
        .filter(
            pl.col("expected_devices").is_not_null(),
            pl.col("pool_mode").cast(pl.String) != "disaggregated",
        )
        .with_columns(pl.col("hardware").cast(pl.String), pl.col("pool_mode").cast(pl.String))
        .rename({"pool_mode": "mode"})
    )
    assert expected.height > 0
    both = expected.join(roofline, on=[*plan, "arrival_rate", "hardware", "tp", "mode"])
    assert both.height == expected.height  # a plan by expectation has one on roofline steps
    assert (both["expected_devices"] >= both["devices"]).all()


def test_the_plans_say_the_devices_by_expectation_beside_the_roofline_plans() -> None:
    from sweeps.views.plans import cheapest_plans
    from sweeps.views.plans_expected import NO_EXPECTED, expected_plans

    tables = _tables()
    plans = expected_plans(tables["pools"], tables["pools_expected"])
    assert plans.height == cheapest_plans(tables["pools"]).height  # one engine
    found = plans.filter(pl.col("expected_devices").is_not_null())
    assert found.height > 0
    assert (found["expected_devices"] >= found["fewest_devices"]).all()
    assert set(found["expected_hardware"].cast(pl.String)) <= {"h100-sxm", "b200"}
    missing = plans.filter(pl.col("expected_devices").is_null())
    assert set(missing["expected_reason"]) <= {NO_EXPECTED}


CONFIG = """
[sweep]
name = "expected-serving"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm", "mi300x"]
tp = [1]
batch = [16, 64]
context = [1024]
engine = ["vllm"]
[options]
attention_flops = true
[serving]
prompt_tokens = [512]
output_tokens = [128]
{load}
chunk_tokens = 2048
simulate = 300
"""
CLOSED_LOOP_TOLERANCE = 0.02
"""A closed loop's expected rate (Little's law's fixed point on the expected figures) against
the simulator replaying the plan on expected step costs: 0.09 % apart at 16 clients over 400
requests; 2 % leaves room for a 300-request run's noise."""


@pytest.mark.parametrize("load", ["arrival_rate = [8.0]", "concurrency = [16]"])
def test_a_run_replays_the_expected_plan_on_expected_step_costs(
    load: str, write_config: Callable[..., Path], tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from sweeps.cli.main import cli

    path = write_config(CONFIG.replace("{load}", load))
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "expected devices: the fewest any plan" in text
    assert "disaggregated pools on one device and tp" in text
    folder = tmp_path / "out" / "expected-serving"
    pools = pl.read_parquet(folder / "pools_expected.parquet")
    replayed = pl.read_parquet(folder / "simulated_expected.parquet")
    plain = pl.read_parquet(folder / "simulated.parquet")
    assert replayed.height == 1  # one workload, load and engine; the MI300X has no data
    row = replayed.row(0, named=True)
    assert (row["engine"], row["hardware"], row["requests"]) == ("vllm", "h100-sxm", 300)
    one_pool = pl.col("pool_mode").cast(pl.String) != "disaggregated"  # the simulator's
    fewest = pools.filter(one_pool, pl.col("expected_devices").is_not_null())
    fewest = fewest.sort("expected_devices")
    assert row["replicas"] * row["tp"] == fewest["expected_devices"][0]
    # the same plan's requests take longer a token on the measured kernels than at the roof
    same = plain.filter(pl.col("batch") == row["batch"], pl.col("scheduler") == row["scheduler"])
    if same.height:
        assert row["tpot_mean_s"] > same["tpot_mean_s"][0]
    if load.startswith("concurrency"):  # the rate the closed loop reaches, closed form and run
        plan = fewest.filter(
            pl.col("pool_mode").cast(pl.String) == row["scheduler"],
            pl.col("expected_decode_batch") == row["batch"],
        )
        rate = plan["expected_pools_request_rate"][0]
        assert row["requests_per_s"] == pytest.approx(rate, rel=CLOSED_LOOP_TOLERANCE)
    # the disaggregated plan on expected steps, open or closed loop: never below the bound's
    bound = pl.read_parquet(folder / "pools.parquet").filter(
        pl.col("pool_mode").cast(pl.String) == "disaggregated",
        pl.col("prefill_hardware") == "h100-sxm",
        pl.col("decode_hardware") == "h100-sxm",
    )
    apart = pools.filter(
        pl.col("pool_mode").cast(pl.String) == "disaggregated", pl.col("hardware") == "h100-sxm"
    )
    assert apart.height == bound.height == 1
    assert apart["expected_devices"][0] >= bound["devices"][0]
    assert apart["expected_pools_tpot_s"][0] >= bound["tpot_s"][0]


DISAGG = ["model", "kv_heads", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens"]


def _disaggregated(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The expected disaggregated rows beside the pools table's disaggregated plan on the same
    device and tp for both pools."""
    expected = tables["pools_expected"].filter(
        pl.col("pool_mode").cast(pl.String) == "disaggregated"
    )
    bound = (
        tables["pools"]
        .filter(
            pl.col("pool_mode").cast(pl.String) == "disaggregated",
            pl.col("prefill_hardware") == pl.col("decode_hardware"),
            pl.col("prefill_tp") == pl.col("decode_tp"),
        )
        .with_columns(pl.col("decode_hardware").cast(pl.String).alias("hardware"))
        .rename({"decode_tp": "tp"})
    )
    return expected.with_columns(pl.col("hardware").cast(pl.String)).join(
        bound, on=[*DISAGG, "arrival_rate", "hardware", "tp"]
    )


def test_the_expected_disaggregated_plan_is_the_pools_plan_on_expected_steps_by_hand() -> None:
    i, o, rate, slo, batches = 512, 128, 250.0, 0.2, (1, 4, 8, 32)
    ds = sweeps.run({
        "sweep": {"name": "disaggregated"},
        "axes": {"model": ["llama-3.1-8b"], "hardware": ["h100-sxm"], "tp": [1],
                 "batch": list(batches), "context": [1024], "engine": ["vllm"]},
        "options": {"attention_flops": True},
        "serving": {"prompt_tokens": [i], "output_tokens": [o], "arrival_rate": [rate],
                    "ttft_slo_s": slo, "tpot_slo_s": 0.05, "slo_quantile": 0.9},
    })  # fmt: skip
    from sweeps import physics
    from sweeps.export import frames

    row = _disaggregated(frames(ds)).row(0, named=True)
    config = _config("llama-3.1-8b", "h100-sxm", 1)
    # the steps the pass composes at each batch (served._compute's reading)
    steps = {
        b: expected_steps(config, b, i + o, b * (i + 1), prompt_counts(b, [o])) for b in batches
    }
    alone = float(steps[1].prefills(1, i))  # one prompt alone: at B = 1, its LM head one row
    handoff = row["kv_handoff_s"]  # the bound's: 2 x 32 layers x 8 heads x 128 x 2 B a token
    assert handoff == pytest.approx(i * 131072 / 50e9, rel=1e-12)
    # serial prefill: M/D/1 at D = alone, its quantile wait within the TTFT slack
    table = physics.md1_quantile_table(0.9)
    most = float(physics.md1_max_utilization(table, np.array((slo - alone - handoff) / alone)))
    serial = math.ceil(rate * alone / most)
    # batched prefill: the best m / t_p(m, I) over the m whose (1 + q) t_p leaves room, 0.9 busy
    each = {m: float(steps[m].prefills(m, i)) for m in batches}
    usable = [m for m in batches if each[m] <= (slo - handoff) / 1.9]
    best = max(usable, key=lambda m: m / each[m])
    batched = math.ceil(rate / (0.9 * best / each[best]))
    # decode: the largest batch whose step t_d(B, I + O/2) meets TPOT, as many as the rate needs
    decode = float(steps[32].decode(32, i + o / 2))
    replicas = math.ceil(rate / (32 / ((o - 1) * decode)))
    assert (usable, best, serial, batched, replicas) == ([1, 4, 8], 4, 4, 3, 8)
    assert row["expected_prefill_replicas"] == batched
    assert row["expected_replicas"] == replicas
    assert row["expected_devices"] == batched + replicas
    assert row["expected_decode_batch"] == 32
    assert row["expected_pools_tpot_s"] == pytest.approx(decode, rel=1e-12)
    assert row["expected_pools_request_rate"] == rate
    assert row["expected_slot_bound"] is False
    # the batched pool's cycle at the rate each replica sees, the chord's slope to m = 4
    cycle = physics.gated_cycle(rate / batched, alone, (each[4] - alone) / 3)
    assert row["expected_pools_ttft_s"] == pytest.approx(1.5 * cycle + handoff, rel=1e-12)
    assert row["devices"] <= row["expected_devices"]  # the bound's plan on the same device


def test_no_expected_disaggregated_plan_needs_fewer_devices_than_the_bound_plan() -> None:
    tables = _tables()
    both = _disaggregated(tables)
    assert (
        both.height
        == tables["pools_expected"]
        .filter(pl.col("pool_mode").cast(pl.String) == "disaggregated")
        .height
    )
    planned = both.filter(pl.col("expected_devices").is_not_null())
    assert planned.height > 0
    assert planned["feasible"].all()  # a plan by expectation has one on roofline steps
    # it follows from every expected step at least its bound (none of these steps is below it,
    # checked by the serving comparison above): more prefill time, a slower decode step
    assert (planned["expected_devices"] >= planned["devices"]).all()
    assert (planned["expected_prefill_replicas"] >= planned["prefill_replicas"]).all()
    assert (planned["expected_replicas"] >= planned["decode_replicas"]).all()
    assert (planned["expected_decode_batch"] <= planned["decode_batch"]).all()
    assert (planned["expected_pools_tpot_s"] >= planned["tpot_s"]).all()
    mi300x = both.filter(pl.col("hardware") == "mi300x")
    assert mi300x.height > 0
    assert mi300x["expected_devices"].null_count() == mi300x.height


def test_a_row_without_a_plan_says_why() -> None:
    from sweeps.studies.expected.pools import NO_PLAN

    frame = _tables()["pools_expected"]
    planned = frame["expected_devices"].is_not_null()
    assert (frame.filter(planned)["reason"] == "").all()
    mi300x = frame.filter(pl.col("hardware") == "mi300x")
    assert set(mi300x["reason"]) == {"device 'mi300x' not in the database"}
    others = frame.filter(~planned, pl.col("hardware") != "mi300x")
    assert set(others["reason"]) <= {NO_PLAN}
    # a TTFT objective below one prompt's prefill: steps, and no plan
    ds = sweeps.run({
        "sweep": {"name": "no-plan"},
        "axes": {"model": ["llama-3.1-8b"], "hardware": ["h100-sxm"], "tp": [1], "batch": [8],
                 "context": [1024], "engine": ["vllm"]},
        "options": {"attention_flops": True},
        "serving": {"prompt_tokens": [4096], "output_tokens": [64], "arrival_rate": [1.0],
                    "ttft_slo_s": 0.001},
    })  # fmt: skip
    from sweeps.export import frames

    tight = frames(ds)["pools_expected"]
    assert tight["expected_devices"].null_count() == tight.height
    assert set(tight["reason"]) == {NO_PLAN}
    assert "disaggregated" in set(tight["pool_mode"].cast(pl.String))
