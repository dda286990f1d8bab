"""Serving on expected steps with the techniques and the parallel layouts together (issue 43):
a sweep with the speculative and prefix studies and the parallel one writes serving_expected,
pools_expected and the technique tables with every dim; at ``k = 0``, ``h = 0`` the rows are
the run with the layouts alone, at ``ep = pp = 1`` the run with the techniques alone, bit for
bit; on a layout the steady step at ``k`` is speculative_expected's verify step and draft there
and a prefill at ``h`` prefix_expected's hit prefill there; the expectations below the bound
are flagged and counted; the closed form holds against the replay of its plan at a layout with
both techniques. And at ``O = 1`` the modes the bound prices there are priced on expected
steps, every null row saying why.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import copy
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

PROMPT, OUTPUT = 1960, 128
CONTEXT = PROMPT + OUTPUT // 2  # the mean context, a point of the expected steps' grid
BASE: dict[str, Any] = {
    "sweep": {"name": "xboth"},
    "axes": {"model": ["qwen3-235b-a22b"], "hardware": ["h100-sxm"], "tp": [1],
             "batch": [1, 4, 32], "context": [PROMPT, CONTEXT], "kv_dtype": ["fp8"],
             "weight_dtype": ["fp8"], "engine": ["vllm"]},
    "options": {"attention_flops": True},
    "serving": {"prompt_tokens": [PROMPT], "output_tokens": [OUTPUT], "arrival_rate": [20.0],
                "chunk_tokens": 2048},
}  # fmt: skip
"""Qwen3-235B-A22B FP8 on the H100 under vLLM, three batches, one workload (the contexts:
its prompt, prefix_expected's, and its mean context, speculative_expected's)."""
LAYOUTS = {"ep": [1, 4], "dp_attention": [True], "pp": [1, 2]}
TECHNIQUES = {"spec_tokens": [0, 2], "spec_acceptance": [0.7], "spec_draft": ["mtp"],
              "prefix_hit_rate": [0.0, 0.5], "kv_tier": ["hbm"]}  # fmt: skip
LAYOUT = ["ep", "dp_attention", "pp"]
SPEC = ["spec_tokens", "spec_acceptance", "spec_draft"]
PREFIX = ["prefix_hit_rate", "kv_tier"]
CONFIG = ["model", "hardware", "tp", "batch", "kv_heads", "kv_dtype", "weight_dtype", "engine"]
WORKLOAD = [*CONFIG, "prompt_tokens", "output_tokens", "mode"]


@cache
def _tables(layouts: bool, techniques: bool) -> dict[str, pl.DataFrame]:
    from sweeps.export import frames

    config = copy.deepcopy(BASE)
    config["axes"].update({**(LAYOUTS if layouts else {}), **(TECHNIQUES if techniques else {})})
    return frames(sweeps.run(config))


def _both() -> dict[str, pl.DataFrame]:
    return _tables(True, True)


def _text(frame: pl.DataFrame) -> pl.DataFrame:
    """Enum columns as text (joins and compares across runs)."""
    return frame.with_columns(pl.col(pl.Enum).cast(pl.String))


def test_a_sweep_with_both_writes_every_table_with_every_dim() -> None:
    tables = _both()
    for name in ("serving_expected", "pools_expected", "speculative_expected", "prefix_expected"):
        assert name in tables, name
    for name in ("serving_expected", "pools_expected"):
        assert {*LAYOUT, *SPEC, *PREFIX} <= set(tables[name].columns), name
        alone = _tables(False, False)[name]
        assert tables[name].height == 4 * 2 * 2 * alone.height, name  # layouts, k, h
    served = tables["serving_expected"]
    dims = served.columns[: served.columns.index("prompt_tokens")]
    assert dims[-len(LAYOUT) :] == LAYOUT  # the techniques' dims, then the layouts'
    named = served.filter(pl.col("mode").cast(pl.String) != "bound")
    missing = named.filter(pl.col("expected_ttft_s").is_null())
    assert (missing["reason"] != "").all()  # every null says why
    # what stays null: chunked-greedy at random acceptance (its slots freed at random, the
    # prompts queueing for the budget), as the serving table's, on every layout
    assert set(missing["mode"].cast(pl.String)) == {"chunked-greedy"}
    assert (missing["spec_tokens"] > 0).all()
    found = named.filter(pl.col("expected_ttft_s").is_not_null())
    assert (found["reason"] == "").all()
    assert (found["basis"] != "").all()


@pytest.mark.parametrize("name", ["serving_expected", "pools_expected"])
def test_k0_and_h0_are_the_layouts_run_bit_for_bit(name: str) -> None:
    base, spread = _text(_tables(True, False)[name]), _text(_both()[name])
    plain = spread.filter(pl.col("spec_tokens") == 0, pl.col("prefix_hit_rate") == 0.0)
    assert plain.height == base.height
    keys = [c for c in base.columns if c in {*WORKLOAD, *LAYOUT, "pool_mode", "arrival_rate"}]
    assert plain.select(base.columns).sort(keys).equals(base.sort(keys))


@pytest.mark.parametrize("name", ["serving_expected", "pools_expected"])
def test_at_ep_1_and_pp_1_the_rows_are_the_techniques_run_bit_for_bit(name: str) -> None:
    base, spread = _text(_tables(False, True)[name]), _text(_both()[name])
    flat = spread.filter(pl.col("ep") == 1, pl.col("pp") == 1)
    assert flat.height == base.height
    keys = [c for c in base.columns if c in {*WORKLOAD, *SPEC, *PREFIX, "pool_mode"}]
    keys += [c for c in ("arrival_rate",) if c in base.columns]
    assert flat.select(base.columns).sort(keys).equals(base.sort(keys))


def test_on_a_layout_the_steady_step_is_the_verify_step_and_draft_there() -> None:
    tables = _both()
    serving = _text(tables["serving_expected"]).filter(
        pl.col("mode") == "serial-prefill", pl.col("prefix_hit_rate") == 0.0,
        pl.col("spec_tokens") > 0,
    )  # fmt: skip
    spec = _text(tables["speculative_expected"]).filter(pl.col("context") == CONTEXT)
    both = serving.join(spec, on=["batch", *SPEC, *LAYOUT])
    assert both.height == serving.height == 3 * 4
    for row in both.iter_rows(named=True):
        k, alpha = row["spec_tokens"], row["spec_acceptance"]
        per_token = physics.verify_steps(OUTPUT - 1, k, alpha) / (OUTPUT - 1)
        spent = row["expected_verify_time_s"] + row["expected_draft_time_s"]
        assert row["expected_step_time_steady_s"] == pytest.approx(spent * per_token, rel=1e-12)
    # each layout its own: at batch 32 the verify step on 8 devices is not the one on 1
    steady = both.filter(pl.col("batch") == 32)["expected_step_time_steady_s"]
    assert steady.n_unique() == steady.len() == 4


@pytest.mark.parametrize(
    ("mode", "batch"), [("serial-prefill", None), ("static", 4), ("static", 32)]
)
def test_on_a_layout_a_prefill_at_h_is_the_prefix_tables_hit_prefill(
    mode: str, batch: int | None
) -> None:
    """serial-prefill's TTFT is one prompt's prefill (prefix_expected at batch 1), static's
    its batch's ``B`` prompts' (at batch ``B``): from HBM no reload, the better of the hit and
    recomputing, and here the hit."""
    tables = _both()
    serving = _text(tables["serving_expected"]).filter(
        pl.col("mode") == mode, pl.col("spec_tokens") == 0
    )
    serving = serving.filter(pl.col("batch") == (1 if batch is None else batch))
    own = serving.filter(pl.col("prefix_hit_rate") == 0.0).select(
        "batch", *LAYOUT, pl.col("expected_ttft_s").alias("own")
    )
    hit = _text(tables["prefix_expected"]).filter(
        pl.col("batch") == (batch or 1), pl.col("context") == PROMPT
    )
    hit = hit.select(*LAYOUT, "prefix_hit_rate", pl.col("expected_hit_prefill_s").alias("hit"))
    rows = serving.filter(pl.col("prefix_hit_rate") > 0)
    joined = rows.join(own, on=["batch", *LAYOUT]).join(hit, on=[*LAYOUT, "prefix_hit_rate"])
    assert joined.height == rows.height == 4
    expected = np.minimum(joined["hit"].to_numpy(), joined["own"].to_numpy())
    assert np.array_equal(joined["expected_ttft_s"].to_numpy(), expected)
    assert (joined["expected_ttft_s"] == joined["hit"]).all()
    assert joined["hit"].n_unique() == 4  # each layout its own


BELOW = 0
"""The expectations below the bound's TTFT or TPOT at the same point in this sweep (counted:
the test fails when the count moves)."""


def test_an_expectation_below_the_bound_is_flagged_and_counted() -> None:
    tables = _both()
    expected = _text(tables["serving_expected"])
    point = [*CONFIG[:-1], *SPEC, *PREFIX, *LAYOUT, "prompt_tokens", "output_tokens"]
    bound = (
        _text(tables["serving"])
        .filter(pl.col("mode") == "bound")
        .select(*point, "ttft_s", "tpot_s")
    )
    both = expected.join(bound, on=point)
    assert both.height == expected.height
    below = (pl.col("expected_ttft_s") < pl.col("ttft_s")) | (
        pl.col("expected_tpot_s") < pl.col("tpot_s")
    )
    known = both.filter(pl.col("expected_ttft_s").is_not_null()).with_columns(below.alias("mine"))
    assert (known["below_bound"] == known["mine"]).all()
    assert int(known["below_bound"].sum()) == BELOW


REPLAY = """
[sweep]
name = "replay"
[axes]
model = ["qwen3-235b-a22b"]
hardware = ["h100-sxm"]
tp = [1]
batch = [16]
context = [1024]
kv_dtype = ["fp8"]
weight_dtype = ["fp8"]
engine = ["vllm"]
ep = [4]
dp_attention = [true]
pp = [2]
spec_tokens = [2]
spec_acceptance = [1.0]
spec_draft = ["mtp"]
prefix_hit_rate = [0.5]
kv_tier = ["hbm"]
[options]
attention_flops = true
[serving]
prompt_tokens = [512]
output_tokens = [128]
concurrency = [16]
simulate = 400
schedulers = ["serial-prefill"]
[outputs]
charts = []
"""
REPLAY_TOLERANCE = 0.01
"""The closed loop's expected rate against the replay of its plan at ep 4, pp 2 with k = 2 and
h = 0.5: 0.35 % apart (the replay prices a hit prefill as its chunks, the verify step as its
rows spread over the layout; the closed form the whole sequences)."""


def test_the_replay_runs_the_plan_at_its_layout_with_its_techniques(
    write_config: Any, tmp_path: Path
) -> None:
    row, rate = replayed_plan(write_config(REPLAY), tmp_path / "out")
    plan = (row["ep"], row["pp"], row["spec_tokens"], row["prefix_hit_rate"])
    assert plan == (4, 2, 2, 0.5)
    assert row["requests_per_s"] == pytest.approx(rate, rel=REPLAY_TOLERANCE)


@cache
def _one_token() -> dict[str, pl.DataFrame]:
    """The plain sweep with ``O = 1`` beside the workload and a second prompt."""
    from sweeps.export import frames

    config = copy.deepcopy(BASE)
    config["serving"].update(prompt_tokens=[512, PROMPT], output_tokens=[1, OUTPUT])
    return {k: _text(v) for k, v in frames(sweeps.run(config)).items()}


def test_at_one_output_token_the_modes_the_bound_prices_are_priced() -> None:
    """At ``O = 1`` batched-prefill is one group of ``B`` (its larger group of ``B + 1``
    weighs nothing) and a chunked step carries at most the budget: the steps' grid reaches
    both (``served._reach``; null with an empty reason before). Priced wherever the serving
    table prices the mode, never below its bound; batched-prefill's TTFT is static's,
    ``t_p(B, I)``."""
    tables = _one_token()
    point = ["batch", "prompt_tokens", "output_tokens"]
    expected = tables["serving_expected"].filter(pl.col("mode") != "bound")
    served = tables["serving"].select(*point, "mode", "ttft_s")
    both = expected.join(served, on=[*point, "mode"])
    assert both.height == expected.height == 3 * 2 * 2 * 5
    assert (both["expected_ttft_s"].is_null() == both["ttft_s"].is_null()).all()
    assert both["expected_ttft_s"].null_count() == 0
    assert (both["reason"] == "").all()
    assert not both["below_bound"].any()
    one = expected.filter(pl.col("output_tokens") == 1)
    static = one.filter(pl.col("mode") == "static").select(*point, pl.col("expected_ttft_s"))
    grouped = one.filter(pl.col("mode") == "batched-prefill").join(
        static, on=point, suffix="_static"
    )
    assert grouped.height == 3 * 2
    ttft, own = grouped["expected_ttft_s"].to_numpy(), grouped["expected_ttft_s_static"]
    np.testing.assert_allclose(ttft, own.to_numpy(), rtol=1e-12)


def test_a_plain_point_without_an_expected_figure_says_why() -> None:
    from sweeps.studies.expected.composed import ONE_TOKEN, UNPRICED
    from sweeps.studies.expected.priced import NOT_PRICED
    from sweeps.studies.expected.served import _plain_reasons

    ttft = np.array([[[np.nan, np.nan, 1.0], [np.nan, 2.0, np.nan]]])  # (prompt, output, mode)
    why = _plain_reasons(ttft, ["bound", "static", "chunked-paced"], np.array([1, 64]))
    assert why.tolist() == [
        [[NOT_PRICED["bound"], ONE_TOKEN, ""], [NOT_PRICED["bound"], "", UNPRICED]]
    ]
