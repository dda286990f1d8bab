"""The distribution of a request's verify steps and the slowest of a batch
(``sweeps.physics.speculative_steps``): hand values at the ends, the renewal mean at ``B = 1``,
broadcasting, and a plain Monte Carlo loop drawing each request's steps."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps import physics


def test_the_ends_are_exact() -> None:
    # k = 0 or a = 0: one token a step; a = 1: k + 1 a step, the last cut
    assert physics.max_verify_steps(128, 0, 0.8, 32) == pytest.approx(128, rel=1e-12)
    assert physics.max_verify_steps(128, 3, 0.0, 32) == pytest.approx(128, rel=1e-12)
    assert physics.max_verify_steps(128, 3, 1.0, 32) == pytest.approx(32, rel=1e-12)
    assert physics.max_verify_steps(130, 3, 1.0, 32) == pytest.approx(33, rel=1e-12)
    assert physics.max_verify_steps(0, 3, 0.8, 32) == 0.0


def test_two_tokens_by_hand() -> None:
    # n = 2, k = 1: N = 1 with a (two tokens), else 2; max of B: 2 unless all are 1
    a, b = 0.6, 3
    assert physics.verify_steps_cdf(2, 1, a)[1] == pytest.approx(a, rel=1e-12)
    assert physics.max_verify_steps(2, 1, a, b) == pytest.approx(2 - a**b, rel=1e-12)


def test_one_request_is_the_renewal_mean() -> None:
    # B = 1: the exact mean, which the renewal count approaches geometrically in n
    for k, a in ((3, 0.8), (2, 0.6), (5, 0.5)):
        exact = float(physics.max_verify_steps(128, k, a, 1))
        assert exact == pytest.approx(float(physics.verify_steps(128, k, a)), rel=1e-9)


def test_it_broadcasts() -> None:
    n, k, b = np.array([0, 5, 128]), np.array([[1], [3]]), np.array([[[1]], [[32]]])
    out = physics.max_verify_steps(n, k, 0.5, b)
    assert out.shape == (2, 2, 3)
    assert out[1, 1, 2] == pytest.approx(float(physics.max_verify_steps(128, 3, 0.5, 32)))
    assert np.all(out[1] >= out[0])  # the slowest of 32 is no faster than one


def _monte_carlo(n: int, k: int, a: float, b: int, batches: int, seed: int) -> tuple[float, float]:
    """Mean and standard error of the slowest of ``b`` requests' steps, each drawn plainly."""
    rng = np.random.default_rng(seed)
    slowest = np.empty(batches)
    for i in range(batches):
        worst = 0
        for _ in range(b):
            have, steps = 0, 0
            while have < n:
                accepted = 0
                while accepted < k and rng.random() < a:
                    accepted += 1
                have += accepted + 1
                steps += 1
            worst = max(worst, steps)
        slowest[i] = worst
    return float(slowest.mean()), float(slowest.std(ddof=1) / math.sqrt(batches))


@settings(max_examples=10, deadline=None)
@given(
    st.integers(1, 40), st.integers(1, 4), st.sampled_from([0.3, 0.6, 0.9]),
    st.sampled_from([1, 4, 16]), st.integers(0, 2**16),
)  # fmt: skip
def test_the_expected_maximum_agrees_with_a_plain_monte_carlo(
    n: int, k: int, a: float, b: int, seed: int
) -> None:
    mean, error = _monte_carlo(n, k, a, b, 300, seed)
    # a slowest count rarer than 1 in 300 batches may never be drawn, so the sample can show no
    # spread (n = 2, k = 1, alpha = 0.3, B = 16: 0.3**16 of the batches take one step, the mean is
    # 2 - 4e-9 and all 300 samples read 2): then its share of the mean is at most 3/300 x n
    # steps (the rule of three); where the sample has spread, its standard error covers it
    unseen = 3 * n / 300 if error == 0 else 1e-9
    assert float(physics.max_verify_steps(n, k, a, b)) == pytest.approx(
        mean, abs=5 * error + unseen
    )
