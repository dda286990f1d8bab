"""Pipeline stages run whole sequences: a step of ``B`` sequences over ``pp`` stages is
``min(B, pp)`` micro-batches of ``B / m`` whole sequences (docs/parallel.md, "Pipeline").

A lone sequence crosses its stages one after another and pays the hand-offs, so ``pp`` never
makes one sequence faster than one device serves it (issue 44: Llama-3.1 8B on an H100 at
131,072 tokens was 9.61, 7.04, 5.76 ms a token at pp 1, 2, 4). From ``B = pp`` on every stage is
busy, and a step is the device's work as before. The decode table, the serving table and the
simulator's step agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from sweeps import physics
from sweeps.config import parse_config
from sweeps.grid import build_grid
from sweeps.grid.scalar import point_inputs
from sweeps.studies.serving.simulate.costs import step_costs, step_time

LONE = """
[sweep]
name = "pp"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm"]
batch = [1, 2, 3, 4, 8]
context = [131072]
pp = [1, 2, 4]
"""


@pytest.fixture(scope="module")
def lone():  # type: ignore[no-untyped-def]
    return build_grid(parse_config(LONE, "<pp>")).squeeze()


def test_pipeline_fill_by_hand() -> None:
    assert physics.pipeline_fill(np.array([1.0, 2.0, 3.0, 4.0, 8.0]), 4.0).tolist() == [
        4.0, 2.0, 4 / 3, 1.0, 1.0,
    ]  # fmt: skip
    assert physics.pipeline_fill(0.25, 1.0) == 1.0  # a fluid step at pp = 1: no change
    assert physics.micro_batches(np.array([0.5, 3.0, 9.0]), 4.0).tolist() == [1.0, 3.0, 4.0]


def test_a_lone_sequence_is_never_faster_over_more_stages(lone) -> None:  # type: ignore[no-untyped-def]
    one = lone["step_time_s"].sel(batch=1).values
    assert np.all(np.diff(one) >= 0), one
    assert np.all(np.diff(lone["token_time_b1_s"].values) >= 0)
    # the path's work is one device's, plus the pp - 1 hand-offs of one sequence
    handoff = lone["handoff_time_s"].sel(batch=1).values
    assert one[1:] == pytest.approx(one[0] + (np.array([2, 4]) - 1) * handoff[1:], rel=1e-9)
    assert one[0] * 1e3 == pytest.approx(9.6089, abs=1e-4)


def test_from_pp_sequences_on_every_stage_is_busy(lone) -> None:  # type: ignore[no-untyped-def]
    step = lone["step_time_s"]
    # at B = pp the step is pp micro-batches of one: one sequence's path (B = 1, pp = 1)
    for pp in (2, 4):
        path = (
            step.sel(batch=1, pp=1).item()
            + (pp - 1) * lone["handoff_time_s"].sel(batch=pp, pp=pp).item()
        )
        assert step.sel(batch=pp, pp=pp).item() == pytest.approx(path, rel=1e-9)
    # throughput never falls with more stages, and B sequences share one path at B < pp
    rate = lone["tokens_per_s"]
    assert np.all(rate.diff("pp") >= -1e-9)
    assert rate.sel(batch=3, pp=4).item() == pytest.approx(3 * rate.sel(batch=1, pp=4).item())


SERVING = (
    LONE.replace("context = [131072]", "context = [4096]")
    + """
[serving]
prompt_tokens = [1024]
output_tokens = [64]
arrival_rate = [1.0]
chunk_tokens = 2048
"""
)


def test_serving_at_one_slot_is_never_faster_over_more_stages() -> None:
    """One slot, one sequence a step (``chunked-paced`` and ``bound`` may carry another
    request's prompt piece beside the decode, which fills the stages: not held here)."""
    ds = build_grid(parse_config(SERVING, "<pp>")).squeeze()
    for mode in ("static", "serial-prefill", "batched-prefill", "chunked-greedy"):
        tpot = ds["tpot_s"].sel(mode=mode, batch=1).values
        assert np.all(np.diff(tpot) >= -1e-12 * tpot[:-1]), (mode, tpot)
        ttft = ds["serving_ttft_s"].sel(mode=mode, batch=1).values
        assert np.all(np.diff(ttft) >= -1e-12 * ttft[:-1]), (mode, ttft)


def test_the_simulator_prices_a_lone_sequence_as_the_decode_table(lone) -> None:  # type: ignore[no-untyped-def]
    sweep = parse_config(LONE, "<pp>")
    for at, pp in enumerate((1, 2, 4)):
        x = point_inputs(sweep, {"pp": at})
        costs = step_costs(x, 131_073, 8)
        alone = step_time(costs, [131_072])
        handoff = lone["handoff_time_s"].sel(batch=1, pp=pp).item()
        table = lone["step_time_s"].sel(batch=1, pp=pp).item()
        assert alone + (pp - 1) * handoff == pytest.approx(table, rel=1e-9), pp
