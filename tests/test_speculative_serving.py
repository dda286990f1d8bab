"""Serving with speculation and prefix caching: ``k = 0`` and ``h = 0`` are the plain serving
tables exactly, the plans say which technique they use, and a step-by-step loop agrees."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from sweeps import physics
from sweeps.config import parse_config
from sweeps.grid.build import build_grid

from .techniques import SERVING_VARIABLES

# --- serving with speculation and prefix caching ---------------------------------------------

SERVED = """
[sweep]
name = "served"
[axes]
model = ["llama-3.1-70b"]
hardware = ["h200"]
tp = [1, 2]
batch = [1, 8, 32]
context = [2048]
weight_dtype = ["fp8"]
kv_dtype = ["fp8"]
{extra}
[serving]
prompt_tokens = [1024]
output_tokens = [129]
arrival_rate = [1.0, 8.0]
chunk_tokens = 0
"""
TECHNIQUES = (
    'spec_tokens = [0, 3]\nspec_acceptance = [0.8]\nspec_draft = ["ngram", "llama-3.1-8b"]\n'
    'prefix_hit_rate = [0.0, 0.9]\nkv_tier = ["hbm", "nvme"]'
)


@pytest.fixture(scope="module")
def served() -> tuple[xr.Dataset, xr.Dataset]:
    plain = build_grid(parse_config(SERVED.format(extra="")))
    return plain, build_grid(parse_config(SERVED.format(extra=TECHNIQUES)))


def test_k0_and_h0_reproduce_plain_serving_exactly(served: tuple[xr.Dataset, xr.Dataset]) -> None:
    plain, both = served
    for draft in ("ngram", "llama-3.1-8b"):
        for tier in ("hbm", "nvme"):
            at = both.sel(spec_tokens=0, spec_draft=draft, prefix_hit_rate=0.0, kv_tier=tier)
            for name in SERVING_VARIABLES:
                expected = plain[name]
                got = at[name]
                if "spec_acceptance" in got.dims:
                    got = got.squeeze("spec_acceptance", drop=True)
                np.testing.assert_array_equal(
                    got.transpose(*expected.dims).values, expected.values, err_msg=name
                )


def test_speculation_changes_tpot_and_a_hit_changes_ttft(
    served: tuple[xr.Dataset, xr.Dataset],
) -> None:
    _, both = served
    colocated = both.sel(
        mode="serial-prefill", prefix_hit_rate=0.0, kv_tier="hbm", spec_draft="ngram"
    )
    assert (colocated["tpot_s"].sel(spec_tokens=3) < colocated["tpot_s"].sel(spec_tokens=0)).all()
    hit = both.sel(mode="serial-prefill", spec_tokens=0, spec_draft="ngram")
    fast = hit["serving_ttft_s"].sel(prefix_hit_rate=0.9, kv_tier="hbm")
    assert (fast < hit["serving_ttft_s"].sel(prefix_hit_rate=0.0, kv_tier="hbm")).all()
    # a draft model's weights and cache lower the memory wall the serving table checks
    assert (
        both["serving_feasible"].sel(spec_draft="llama-3.1-8b", spec_tokens=3)
        <= both["serving_feasible"].sel(spec_draft="ngram", spec_tokens=3)
    ).all()
    # chunked prefill with speculation is not modelled: null, never a number
    assert "chunked" not in both["mode"].values  # chunk_tokens = 0 here


def test_cheapest_plans_say_whether_speculation_and_a_tier_are_in_the_plan(
    served: tuple[xr.Dataset, xr.Dataset],
) -> None:
    from sweeps.views.plans import cheapest_plans

    plans = cheapest_plans(served[1])
    for column in ("spec_acceptance", "prefix_hit_rate", "spec_tokens", "spec_draft", "kv_tier"):
        assert column in plans.columns
    assert "energy_per_output_token_j" in plans.columns
    assert plans.height == 2 * 2  # two rates x two hit rates, at one acceptance


def _simulate_colocated(
    batch: int, output: int, step: float, prefill: float, k: int, alpha: float, seed: int
) -> tuple[float, float]:
    """Continuous batching step by step: ``batch`` slots, each new prompt prefilled alone
    (the decodes wait), each verify step of ``step`` seconds advancing every slot by its
    accepted drafts plus one (at most ``k + 1``, at most what it still needs). Returns the
    request rate [request/s] and the mean TPOT [s]."""
    rng = np.random.default_rng(seed)
    clock = 0.0
    left = [1 + (slot * (output - 1)) // batch for slot in range(batch)]  # staggered slots
    started = [0.0] * batch
    tpots: list[float] = []
    done = 0
    while done < 6000:
        for slot in range(batch):
            if left[slot] == 0:  # refill: the prefill gives the first token
                clock += prefill
                left[slot], started[slot] = output - 1, clock
        clock += step
        for slot in range(batch):
            accepted = 0
            while accepted < k and rng.random() < alpha:
                accepted += 1
            left[slot] = max(left[slot] - (accepted + 1), 0)
            if left[slot] == 0:
                tpots.append((clock - started[slot]) / (output - 1))
                done += 1
    warm = 2 * batch  # the staggered first requests are partial
    return done / clock, float(np.mean(tpots[warm:]))


@pytest.mark.parametrize("draft", ["ngram", "llama-3.1-8b"])
def test_serving_with_speculation_agrees_with_a_step_loop(
    served: tuple[xr.Dataset, xr.Dataset], draft: str
) -> None:
    # the speculative step costs from the grid, replayed step by step with random acceptance
    # in a plain loop of its own (sweeps.studies.serving.simulate holds the closed forms to 0.5 %:
    # tests/test_simulate_techniques.py): the closed forms must agree
    _, both = served
    k, alpha, output = 3, 0.8, 129
    e = (1 - alpha ** (k + 1)) / (1 - alpha)
    for batch in (8, 32):
        at = both.sel(
            mode="serial-prefill", spec_tokens=k, spec_draft=draft, prefix_hit_rate=0.0,
            kv_tier="hbm", tp=2, batch=batch,
        ).squeeze()  # fmt: skip
        # a verify step: the token time over the verify steps per token, n / (O - 1)
        steps = float(physics.verify_steps(output - 1, k, alpha)) / (output - 1)
        token = float(at["step_time_steady_s"]) / steps / e
        prefill = float(at["serving_ttft_s"])  # serial-prefill: t_p(1, I)
        rate, tpot = _simulate_colocated(batch, output, token * e, prefill, k, alpha, seed=batch)
        closed_rate = float(at["output_tokens_per_s_per_device"]) * 2 / output
        assert rate == pytest.approx(closed_rate, rel=0.01)  # the serving tests' tolerance
        # the same loop without speculation against the plain closed form: speculation adds
        # no error of its own beyond 1 %
        plain_rate, plain_tpot = _simulate_colocated(batch, output, token, prefill, 0, 0.0, 0)
        closed_tpot = float(at["tpot_s"])
        plain_closed = float(physics.serial_prefill_tpot(batch, output, token, prefill))
        assert plain_rate == pytest.approx(
            float(physics.colocated_request_rate(batch, output, token, prefill)), rel=0.01
        )
        assert tpot / closed_tpot == pytest.approx(plain_tpot / plain_closed, rel=0.01)
        assert tpot == pytest.approx(closed_tpot, rel=0.03)
