"""``sweeps.physics.paced``: chunked-paced's held slots, by hand and against plain loops.

- The prefill steps and the slot's prefilling share by hand.
- The binomial weights against ``math.comb`` term by term (hypothesis), 0 outside
  ``0 <= m <= N``; their mean ``N q``; large ``N`` in logs without underflow; ``log x!``
  against ``math.lgamma``.
- The rate ``B / ((p + n) t)`` by hand; numpy broadcasting.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps import physics


def test_prefill_steps_and_share_by_hand() -> None:
    # B = 32, I = 1024, n = 43.78 verify steps (k = 3, alpha = 0.8, O = 129): pace 748.5 -> 2
    pace = 32 * 1024 / 43.78
    assert physics.held_prefill_steps(1024, pace) == 2
    assert physics.held_prefill_steps(1024, 1024.0) == 1
    assert physics.held_prefill_steps(1025, 1024.0) == 2
    assert physics.held_prefill_steps(1024, math.inf) == 1  # O = 1: the whole prompt at once
    assert physics.held_share(2, 38.0) == pytest.approx(2 / 40)
    # 32 slots, 40 steps a cycle, 10 ms a step: 32 / 0.4 s = 80 requests/s
    assert physics.held_request_rate(32, 2, 38.0, 0.010) == pytest.approx(80.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 80), st.floats(0.0, 0.95))
def test_binomial_pmf_is_math_comb_term_by_term(count: int, share: float) -> None:
    m = np.arange(-2, count + 3, dtype=np.float64)
    got = physics.binomial_pmf(count, share, m)
    expected = [
        math.comb(count, j) * share**j * (1 - share) ** (count - j) if 0 <= j <= count else 0.0
        for j in range(-2, count + 3)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-200)  # q floored at 1e-300


def test_log_factorial_by_hand() -> None:
    x = np.array([0.0, 1.0, 2.0, 5.0, 20.0, 170.0, 1e4])
    expected = [math.lgamma(v + 1) for v in x]
    np.testing.assert_allclose(physics.log_factorial(x), expected, rtol=1e-14, atol=1e-13)


def test_binomial_mean_of_m_is_n_q_and_large_counts_stay_finite() -> None:
    for count, share in ((32, 0.05), (2000, 0.5), (4096, 0.02), (1, 0.5), (0, 0.3)):
        m = np.arange(physics.binomial_reach(count, share) + 1, dtype=np.float64)
        assert m[-1] <= count
        weights = physics.binomial_pmf(count, share, m)
        assert weights.sum() == pytest.approx(1.0, rel=1e-10)  # logs of ~1e3 at N = 4096
        assert (weights * m).sum() == pytest.approx(count * share, rel=1e-10, abs=1e-12)
    assert physics.binomial_reach(32, 0.05) == math.ceil(1.6 + 10 * math.sqrt(1.6 * 0.95) + 10)
    assert physics.binomial_reach(np.array([8, 32]), 0.5) == 32  # each capped at its count


def test_binomial_pmf_broadcasts() -> None:
    counts, shares = np.array([4.0, 16.0, 64.0]), np.array([[0.1], [0.3]])
    m = np.arange(65, dtype=np.float64)[:, None, None]
    weights = physics.binomial_pmf(counts, shares, m)
    assert weights.shape == (65, 2, 3)
    expected = counts * shares * (1 - shares) + (counts * shares) ** 2  # E m^2
    np.testing.assert_allclose((weights * m**2).sum(axis=0), expected, rtol=1e-10)
