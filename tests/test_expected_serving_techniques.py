"""Serving on expected steps with speculation and prefix caching (issue 43): the plain points
are the run without the axes bit for bit, the steady step is speculative_expected's verify step
and draft, serial-prefill's TTFT is prefix_expected's hit prefill (or recomputing), expected
figures below the bound are flagged and counted, a hit never lengthens TTFT and full
acceptance never lengthens TPOT.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import sweeps
from sweeps import physics
from tests.techniques import replayed_plan

pytest.importorskip("aiconfigurator_core")

# mean contexts I + O/2 of 640 and 2024 are points of the expected steps' context grid
# (steps.grid), where a table reads the composed step itself
PROMPTS, OUTPUTS = [512, 1960], [128, 256]
ON_GRID = {(512, 256): 640, (1960, 128): 2024}
TECHNIQUES = {
    "spec_tokens": [0, 4],
    "spec_acceptance": [0.5, 1.0],
    "spec_draft": ["mtp"],
    "prefix_hit_rate": [0.0, 0.5, 0.9],
    "kv_tier": ["hbm", "nvme"],
}
CONFIG = ["model", "hardware", "tp", "batch", "kv_heads", "kv_dtype", "weight_dtype", "engine"]
WORKLOAD = [*CONFIG, "prompt_tokens", "output_tokens", "mode"]
SPEC = ["spec_tokens", "spec_acceptance", "spec_draft"]
PREFIX = ["prefix_hit_rate", "kv_tier"]
POINT = [*CONFIG[:-1], *SPEC, *PREFIX, "prompt_tokens", "output_tokens"]


@cache
def _tables(techniques: bool) -> dict[str, pl.DataFrame]:
    """Llama-3.1-8B on the H100, vLLM, batches 1-32, two prompts and two outputs; with or
    without the technique axes."""
    from sweeps.export import frames

    axes: dict[str, Any] = {
        "model": ["llama-3.1-8b"], "hardware": ["h100-sxm"], "tp": [1], "batch": [1, 8, 32],
        "context": sorted(ON_GRID.values()), "prompt": PROMPTS, "engine": ["vllm"],
    }  # fmt: skip
    if techniques:
        axes.update(TECHNIQUES)
    ds = sweeps.run({
        "sweep": {"name": "serving-techniques"},
        "axes": axes,
        "options": {"attention_flops": True},
        "serving": {"prompt_tokens": PROMPTS, "output_tokens": OUTPUTS, "arrival_rate": [20.0],
                    "chunk_tokens": 2048},
    })  # fmt: skip
    return frames(ds)


def _plain(frame: pl.DataFrame) -> pl.DataFrame:
    """The points at the techniques' plain values (k 0, h 0), their dims dropped."""
    plain = frame.filter(pl.col("spec_tokens") == 0, pl.col("prefix_hit_rate") == 0.0)
    return plain.unique([c for c in frame.columns if c not in (*SPEC, *PREFIX)], keep="first")


@pytest.mark.parametrize("table", ["serving_expected", "pools_expected"])
def test_k0_and_h0_are_the_run_without_the_axes_bit_for_bit(table: str) -> None:
    base, spread = _tables(False)[table], _tables(True)[table]
    named = {*CONFIG, "prompt_tokens", "output_tokens", "mode", "pool_mode", "arrival_rate"}
    keys = [c for c in base.columns if c in named]
    plain = spread.filter(pl.col("spec_tokens") == 0, pl.col("prefix_hit_rate") == 0.0)
    # every acceptance, draft and tier at k 0, h 0 is the plain row itself
    assert plain.height == base.height * 2 * 2
    for (_, _, _), group in plain.group_by(["spec_acceptance", "spec_draft", "kv_tier"]):
        mine = group.select(base.columns).sort(keys)
        assert mine.equals(base.sort(keys)), table  # nulls and values, bit for bit


def _spec(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    return tables["speculative_expected"].filter(pl.col("spec_draft") == "mtp")


def test_the_steady_step_is_the_verify_step_and_draft_times_the_steps_a_token() -> None:
    tables = _tables(True)
    serving = tables["serving_expected"].filter(
        pl.col("mode") == "serial-prefill", pl.col("prefix_hit_rate") == 0.0,
        pl.col("kv_tier") == "hbm", pl.col("spec_tokens") > 0,
    )  # fmt: skip
    spec = _spec(tables)
    checked = 0
    for (prompt, output), context in ON_GRID.items():
        rows = serving.filter(pl.col("prompt_tokens") == prompt, pl.col("output_tokens") == output)
        both = rows.join(
            spec.filter(pl.col("context") == context),
            on=["batch", "spec_tokens", "spec_acceptance", "spec_draft"],
        )
        assert both.height == rows.height == 3 * 2
        for row in both.iter_rows(named=True):
            k, alpha = row["spec_tokens"], row["spec_acceptance"]
            per_token = physics.verify_steps(output - 1, k, alpha) / (output - 1)
            spent = row["expected_verify_time_s"] + row["expected_draft_time_s"]
            assert row["expected_step_time_steady_s"] == pytest.approx(spent * per_token, rel=1e-9)
            checked += 1
    assert checked == 12


def test_serial_prefill_ttft_is_the_expected_hit_prefill_or_recomputing() -> None:
    tables = _tables(True)
    serving = tables["serving_expected"].filter(
        pl.col("mode") == "serial-prefill", pl.col("batch") == 1, pl.col("spec_tokens") == 0,
        pl.col("kv_tier") == "hbm",  # no reload: the prefix in HBM, as prefix_expected's
    )  # fmt: skip
    recompute = serving.filter(pl.col("prefix_hit_rate") == 0.0).select(
        "prompt_tokens", "output_tokens", "spec_acceptance", pl.col("expected_ttft_s").alias("own")
    )
    hit = (
        tables["prefix_expected"]
        .filter(pl.col("batch") == 1)
        .select(
            pl.col("context").alias("prompt_tokens"),
            "prefix_hit_rate",
            pl.col("expected_hit_prefill_s").alias("hit"),
        )
    )
    both = serving.join(recompute, on=["prompt_tokens", "output_tokens", "spec_acceptance"]).join(
        hit, on=["prompt_tokens", "prefix_hit_rate"]
    )
    assert both.height == serving.height == 2 * 2 * 2 * 3
    hits = both.filter(pl.col("prefix_hit_rate") > 0)  # h = 0: the plain prefill
    expected = np.minimum(hits["hit"].to_numpy(), hits["own"].to_numpy())
    assert np.array_equal(hits["expected_ttft_s"].to_numpy(), expected)
    assert (hits["expected_ttft_s"] == hits["hit"]).all()  # a hit is the better here
    # from NVMe the reload overlaps the hit prefill: never sooner than from HBM
    nvme = tables["serving_expected"].filter(pl.col("kv_tier") == "nvme")
    hbm = tables["serving_expected"].filter(pl.col("kv_tier") == "hbm").drop("kv_tier")
    paired = nvme.join(hbm, on=[*WORKLOAD, *SPEC, "prefix_hit_rate"], suffix="_hbm")
    known = paired.drop_nulls(["expected_ttft_s", "expected_ttft_s_hbm"])
    assert known.height > 0
    assert (known["expected_ttft_s"] >= known["expected_ttft_s_hbm"]).all()


def test_an_expectation_below_the_bound_is_flagged() -> None:
    tables = _tables(True)
    expected = tables["serving_expected"]
    bound = (
        tables["serving"]
        .filter(pl.col("mode").cast(pl.String) == "bound")
        .select(*POINT, "ttft_s", "tpot_s")
    )
    both = expected.join(bound, on=POINT)
    assert both.height == expected.height
    below = (pl.col("expected_ttft_s") < pl.col("ttft_s")) | (
        (pl.col("output_tokens") > 1) & (pl.col("expected_tpot_s") < pl.col("tpot_s"))
    )
    flagged = both.with_columns(below.alias("mine"))
    known = flagged.filter(pl.col("expected_ttft_s").is_not_null())
    assert (known["below_bound"] == known["mine"]).all()
    assert (flagged["below_bound"].is_null() == flagged["expected_ttft_s"].is_null()).all()
    # never at the plain points; counted where speculation sits below its bound
    assert not _plain(expected)["below_bound"].drop_nulls().any()
    from sweeps.pipeline.manifest import EXPECTED_TABLES

    assert EXPECTED_TABLES["serving_expected"] == "expected_ttft_s"


def _pairs(frame: pl.DataFrame, dim: str, low: Any, high: Any, value: str) -> pl.DataFrame:
    """``value`` at ``dim`` = ``low`` beside ``dim`` = ``high``, every other dim the same,
    both known."""
    keys = [c for c in (*WORKLOAD, *SPEC, *PREFIX) if c != dim]
    a = frame.filter(pl.col(dim) == low).select(*keys, pl.col(value).alias("low"))
    b = frame.filter(pl.col(dim) == high).select(*keys, pl.col(value).alias("high"))
    return a.join(b, on=keys).drop_nulls(["low", "high"])


def test_a_hit_never_lengthens_ttft_and_full_acceptance_never_lengthens_tpot() -> None:
    """A prefill is the better of the hit and recomputing: never longer with a higher hit
    rate. A chunked step has no such choice (the bound's neither): from NVMe its reload may
    outlast recomputing. chunked-paced's TTFT is set by its pace, about ``(O - 1) / B`` steps
    whatever ``h`` (the bound's rises up to 0.4 % here), each step of fewer prompt tokens,
    and the measured GEMMs are not monotone in ``m`` at small ``m`` (the body of a 24-token
    step 5.95 ms, of a 40-token one 5.75 ms): up to 2.7 % longer here, held to 5 % from
    HBM."""
    frame = _tables(True)["serving_expected"]
    rates, mode = TECHNIQUES["prefix_hit_rate"], pl.col("mode").cast(pl.String)
    prefills = frame.filter(~mode.str.starts_with("chunked"))
    greedy = frame.filter(mode == "chunked-greedy", pl.col("kv_tier") == "hbm")
    paced = frame.filter(mode == "chunked-paced", pl.col("kv_tier") == "hbm")
    for low, high in itertools.pairwise(rates):
        for part, slack in ((prefills, 1.0), (greedy, 1.0), (paced, 1.05)):
            pairs = _pairs(part, "prefix_hit_rate", low, high, "expected_ttft_s")
            assert pairs.height > 0
            assert (pairs["high"] <= slack * pairs["low"]).all(), (low, high)
    spec = frame.filter(pl.col("spec_tokens") > 0, pl.col("output_tokens") > 1)
    pairs = _pairs(spec, "spec_acceptance", 0.5, 1.0, "expected_tpot_s")
    assert pairs.height > 0
    assert (pairs["high"] < pairs["low"]).all()


def test_each_technique_point_off_its_plain_value_is_priced_or_says_why() -> None:
    frame = _tables(True)["serving_expected"]
    off = frame.filter((pl.col("spec_tokens") > 0) | (pl.col("prefix_hit_rate") > 0))
    missing = off.filter(pl.col("expected_ttft_s").is_null())
    assert (missing["reason"] != "").all()
    found = off.filter(pl.col("expected_ttft_s").is_not_null())
    assert (found["reason"] == "").all()
    assert (found["basis"] != "").all()
    # what stays null: chunked-greedy exactly where the serving table's is (its slots freed at
    # random, prompts queueing for the budget: a schedule's condition, not a step's time)
    assert set(missing["mode"].cast(pl.String)) == {"chunked-greedy"}
    bound = _tables(True)["serving"].filter(pl.col("mode").cast(pl.String) == "chunked-greedy")
    greedy = frame.filter(pl.col("mode").cast(pl.String) == "chunked-greedy").join(
        bound.select(*POINT, "ttft_s"), on=POINT
    )
    assert greedy.height == bound.height
    assert (greedy["expected_ttft_s"].is_null() == greedy["ttft_s"].is_null()).all()
    pools = _tables(True)["pools_expected"]
    assert pools.filter(pl.col("spec_tokens") == 4)["expected_devices"].drop_nulls().len() > 0


def test_an_mla_hit_prefill_is_null_with_its_reason_and_chunks_are_priced() -> None:
    """DeepSeek-V3: its hit prefill is not composed (``step.MLA_PREFIX``), so the modes that
    prefill whole prompts have no figure at all at h > 0; a chunked step prices the cached
    prefix as it prices a chunk's own (the MLA tables' increments)."""
    from sweeps.export import frames
    from sweeps.studies.expected.step import MLA_PREFIX

    ds = sweeps.run({
        "sweep": {"name": "mla"},
        "axes": {"model": ["deepseek-v3"], "hardware": ["h200"], "tp": [8], "batch": [8],
                 "context": [1024], "engine": ["vllm"], "prefix_hit_rate": [0.0, 0.5]},
        "serving": {"prompt_tokens": [1024], "output_tokens": [128], "arrival_rate": [5.0]},
    })  # fmt: skip
    frame = frames(ds)["serving_expected"].filter(pl.col("prefix_hit_rate") == 0.5)
    mode = pl.col("mode").cast(pl.String)
    whole = frame.filter(~mode.str.starts_with("chunked"))
    assert whole.height == 3
    assert (whole["reason"] == MLA_PREFIX).all()
    for column in ("expected_ttft_s", "expected_tpot_s", "expected_meets_slo", "below_bound"):
        assert whole[column].null_count() == whole.height, column
    assert (whole["basis"] == "").all()
    chunked = frame.filter(mode.str.starts_with("chunked"))
    assert chunked["expected_ttft_s"].null_count() == 0
    assert (chunked["reason"] == "").all()


def test_a_figure_below_the_bound_is_flagged_and_counted_in_the_manifest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The adversary of ``below_bound``: no expectation of the real grid is below its bound
    (0 of 1,430 above), so one is made so (serial-prefill's TPOT at k > 0 a thousandth of
    itself): exactly those rows are flagged, and the manifest counts them."""
    from sweeps.export import frames
    from sweeps.pipeline.manifest import table_counts
    from sweeps.studies.expected import composed

    real = composed.COMPOSED["serial-prefill"]

    def fast(t: composed.Composed) -> dict[str, Any]:
        got = real(t)
        if t.verify is None:  # the plain points (k = 0) go through the same table
            return got
        return {**got, "tpot": got["tpot"] * 1e-3}

    monkeypatch.setitem(composed.COMPOSED, "serial-prefill", fast)
    ds = sweeps.run({
        "sweep": {"name": "flagged"},
        "axes": {"model": ["llama-3.1-8b"], "hardware": ["h100-sxm"], "tp": [1], "batch": [8],
                 "context": [1024], "engine": ["vllm"], "spec_tokens": [0, 4],
                 "spec_acceptance": [1.0], "spec_draft": ["mtp"]},
        "serving": {"prompt_tokens": [512], "output_tokens": [128], "arrival_rate": [5.0]},
    })  # fmt: skip
    frame = frames(ds)["serving_expected"]
    made = (pl.col("spec_tokens") == 4) & (pl.col("mode").cast(pl.String) == "serial-prefill")
    assert frame.filter(made)["below_bound"].to_list() == [True]
    assert not frame.filter(~made)["below_bound"].any()
    frame.write_parquet(tmp_path / "serving_expected.parquet")
    counts = table_counts(tmp_path, ["serving_expected.parquet"], "serving_expected")
    assert counts is not None
    assert (counts["rows"], counts["below_bound"], counts["without_data"]) == (10, 1, 0)


@pytest.mark.parametrize(
    ("axes", "written"),
    [
        ("", True),
        ("ep = [1, 4]", True),
        ('spec_tokens = [0, 2]\nspec_acceptance = [0.8]\nspec_draft = ["ngram"]', True),
        ("prefix_hit_rate = [0.0, 0.5]", True),
        ('ep = [1, 4]\nspec_tokens = [0, 2]\nspec_acceptance = [0.8]\nspec_draft = ["ngram"]',
         True),
        ("pp = [1, 2]\nprefix_hit_rate = [0.0, 0.5]", True),
    ],
)  # fmt: skip
def test_the_techniques_and_the_parallel_layouts_are_composed_alone_and_together(
    axes: str, written: bool
) -> None:
    """Every sweep with an engine has the tables: the techniques on the parallel layouts too
    (tests/test_expected_serving_both.py)."""
    from sweeps.config import parse_config
    from sweeps.studies.expected.served import wanted

    sweep = parse_config(
        '[sweep]\nname = "apart"\n[axes]\nmodel = ["qwen3-235b-a22b"]\nhardware = ["h100-sxm"]\n'
        f'tp = [8]\nengine = ["vllm"]\n{axes}\n[serving]\nprompt_tokens = [512]\n'
        "output_tokens = [64]\narrival_rate = [1.0]\n"
    )
    assert wanted(sweep) is written


def test_the_expected_plan_names_its_speculation_and_tier() -> None:
    """``expected_plans`` per workload, acceptance and hit rate: the plan with the fewest
    devices by expectation says which ``k``, draft and tier it took, and pools_expected has
    that plan with those devices."""
    from sweeps.views.plans_expected import expected_plans

    tables = _tables(True)
    plans = expected_plans(tables["pools"], tables["pools_expected"])
    assert {"expected_spec_tokens", "expected_spec_draft", "expected_kv_tier"} <= set(plans.columns)
    found = plans.filter(pl.col("expected_devices").is_not_null())
    assert found.height == plans.height == 2 * 2 * 2 * 3  # I, O, alpha, h
    pools = tables["pools_expected"].with_columns(pl.col("pool_mode").cast(pl.String))
    for row in found.iter_rows(named=True):
        same = pools.filter(
            pl.col("prompt_tokens") == row["prompt_tokens"],
            pl.col("output_tokens") == row["output_tokens"],
            pl.col("spec_acceptance") == row["spec_acceptance"],
            pl.col("prefix_hit_rate") == row["prefix_hit_rate"],
            pl.col("spec_tokens") == row["expected_spec_tokens"],
            pl.col("spec_draft") == row["expected_spec_draft"],
            pl.col("kv_tier") == row["expected_kv_tier"],
            pl.col("pool_mode") == str(row["expected_scheduler"]),
        )
        assert same["expected_devices"].to_list() == [row["expected_devices"]]
        fewest = pools.filter(
            pl.col("prompt_tokens") == row["prompt_tokens"],
            pl.col("output_tokens") == row["output_tokens"],
            pl.col("spec_acceptance") == row["spec_acceptance"],
            pl.col("prefix_hit_rate") == row["prefix_hit_rate"],
        )["expected_devices"].min()
        assert row["expected_devices"] == fewest


REPLAY = """
[sweep]
name = "replay"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm"]
tp = [1]
batch = [16]
context = [1024]
engine = ["vllm"]
spec_tokens = [4]
spec_acceptance = [1.0]
spec_draft = ["mtp"]
prefix_hit_rate = [0.5]
kv_tier = ["hbm"]
[serving]
prompt_tokens = [512]
output_tokens = [128]
concurrency = [16]
simulate = 400
schedulers = ["serial-prefill"]
[outputs]
charts = []
"""
REPLAY_TOLERANCE = 0.04
"""The closed loop's expected rate against the replay of its plan with k = 4 and h = 0.5: 2.7 %
apart (k = 4 alone 0.8 %, h = 0.5 alone 1.0 %; the bound's replay 0.4 %, 0.8 %, 0.04 %): the
replay prices a hit prefill as its chunks are, ``P(I) - P(h I)`` from the tables and the body
read in ``T``, where the closed form reads ``step.hit_prefill``."""


def test_the_replay_runs_the_plans_speculation_and_hits_on_expected_steps(
    write_config: Any, tmp_path: Path
) -> None:
    row, rate = replayed_plan(write_config(REPLAY), tmp_path / "out")
    plan = (row["spec_tokens"], row["spec_draft"], row["prefix_hit_rate"], row["kv_tier"])
    assert plan == (4, "mtp", 0.5, "hbm")
    assert row["requests_per_s"] == pytest.approx(rate, rel=REPLAY_TOLERANCE)
    # the same plan at the roof: the measured kernels take longer a token
    bound = pl.read_parquet(tmp_path / "out" / "replay" / "simulated.parquet")
    assert row["tpot_mean_s"] > bound["tpot_mean_s"][0]
