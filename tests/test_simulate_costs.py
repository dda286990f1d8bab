"""The simulator's step costs equal the grid's own per-step bounds, to rounding.

A step of ``B`` decodes at one context must cost the decode table's ``step_time_s``, a step of
``m`` whole prompts the prefill table's ``ttft_s`` at batch ``m``, for dense and MoE models,
windows, tp 1 and 2; the compiled loop must price its steps as ``step_time`` does; chunks of a
prompt must add up to its whole prefill's FLOPs.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import sweeps
from sweeps.studies.serving.simulate import backlog, simulate, step_time

from .simulation import costs, point

RTOL = 1e-12
CASES = [
    ("llama-3-8b", "h100-sxm", 1),
    ("mixtral-8x7b", "h200", 2),
    ("gpt-oss-20b", "h100-sxm", 1),
]
BATCHES = [1, 3, 64, 256]
CONTEXTS = [17, 129, 2176]
PROMPTS = [16, 200, 2048]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def grid(request: pytest.FixtureRequest) -> tuple[tuple[str, str, int], xr.Dataset]:
    model, hardware, tp = request.param
    ds = sweeps.run(
        {
            "sweep": {"name": "simulate-costs"},
            "axes": {
                "model": [model], "hardware": [hardware], "tp": [tp], "batch": BATCHES,
                "context": CONTEXTS, "prompt": PROMPTS, "kv_heads": ["native"],
                "kv_dtype": ["bf16"], "weight_dtype": ["bf16"],
            },
            "options": {"attention_flops": True},
        }
    )  # fmt: skip
    return request.param, ds


def test_a_decode_step_costs_the_decode_tables_step(
    grid: tuple[tuple[str, str, int], xr.Dataset],
) -> None:
    case, ds = grid
    c = costs(*case)
    for b in BATCHES:
        for s in CONTEXTS:
            expected = float(ds["step_time_s"].sel(batch=b, context=s).squeeze())
            assert step_time(c, [s] * b) == pytest.approx(expected, rel=RTOL)


def test_a_prefill_step_costs_the_prefill_tables_ttft(
    grid: tuple[tuple[str, str, int], xr.Dataset],
) -> None:
    case, ds = grid
    c = costs(*case)
    for b in BATCHES:
        for i in PROMPTS:
            expected = float(ds["ttft_s"].sel(batch=b, prompt=i).squeeze())
            assert step_time(c, [], [(0, i, i)] * b) == pytest.approx(expected, rel=RTOL)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_compiled_loop_prices_each_step_as_step_time(case: tuple[str, str, int]) -> None:
    # a static batch of B prompts of I tokens, O = 3: one prefill step, then two decode steps
    b, i = 8, 300
    tl = simulate(point(*case), "static", b, arrivals=backlog(b), requests=b, prompt=i, output=3)
    c = costs(*case)
    prefill = step_time(c, [], [(0, i, i)] * b)
    first, second = step_time(c, [i + 1] * b), step_time(c, [i + 2] * b)
    assert np.all(tl.first == prefill)
    np.testing.assert_array_equal(tl.done, (prefill + first) + second)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_prompts_chunks_add_up_to_its_whole_prefill(case: tuple[str, str, int]) -> None:
    c, prompt = costs(*case), 2048
    bounds = [0, 1, 500, 1024, 2047, 2048]
    chunks = list(zip(bounds[:-1], np.diff(bounds), strict=True))
    flops = (
        sum(c.token_flops * n + c.pair_flops * (c.pairs[p + n] - c.pairs[p]) for p, n in chunks)
        + c.logit_flops
    )
    whole = c.token_flops * prompt + c.pair_flops * c.pairs[prompt] + c.logit_flops
    assert flops == pytest.approx(whole, rel=RTOL)
    # each chunk reads its prefix and writes its own KV: cache[p + n] in all, never less
    assert all(c.cache[p + n] >= c.cache[p] for p, n in chunks)


def test_moe_weights_grow_with_the_steps_tokens_and_less_than_linearly() -> None:
    w = costs("mixtral-8x7b", "h200", 2).weights
    steps = np.diff(w[:4096])
    assert np.all(steps >= 0)
    assert np.all(np.diff(steps) <= 1e-6 * w[0])
