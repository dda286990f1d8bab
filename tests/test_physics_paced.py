"""``sweeps.physics.paced``: chunked-paced's held slots, by hand and against plain loops.

- The prefill steps and the slot's prefilling share by hand.
- The binomial mean against ``math.comb`` summed term by term (hypothesis), exactly the mean
  ``N q`` for ``f(m) = m``; large ``N`` in logs without underflow; ``m > N`` weighs nothing.
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


def _plain(values: list[float], count: int, share: float) -> float:
    weights = [
        math.comb(count, m) * share**m * (1 - share) ** (count - m) for m in range(count + 1)
    ]
    return sum(w * v for w, v in zip(weights, values, strict=False)) / sum(weights[: len(values)])


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 60),
    st.floats(0.0, 0.95),
    st.lists(st.floats(-5.0, 5.0), min_size=61, max_size=61),
)
def test_binomial_mean_is_the_sum_over_m(count: int, share: float, values: list[float]) -> None:
    got = physics.binomial_mean(values[: count + 1], count, share)
    assert got == pytest.approx(_plain(values[: count + 1], count, share), rel=1e-9, abs=1e-9)
    # values past N weigh nothing
    assert physics.binomial_mean(values, count, share) == pytest.approx(got, rel=1e-9, abs=1e-9)


def test_binomial_mean_of_m_is_n_q_and_large_counts_stay_finite() -> None:
    for count, share in ((32, 0.05), (2000, 0.5), (4096, 0.02), (1, 0.5), (0, 0.3)):
        reach = physics.binomial_reach(count, share)
        assert reach <= count
        mean = physics.binomial_mean([float(m) for m in range(reach + 1)], count, share)
        assert mean == pytest.approx(count * share, rel=1e-12, abs=1e-12)
    assert physics.binomial_reach(32, 0.05) == math.ceil(1.6 + 10 * math.sqrt(1.6 * 0.95) + 10)
    assert physics.binomial_reach(np.array([8, 32]), 0.5) == 32  # each capped at its count


def test_binomial_mean_broadcasts() -> None:
    counts, shares = np.array([4.0, 16.0, 64.0]), np.array([[0.1], [0.3]])
    values = [np.full((2, 3), float(m)) ** 2 for m in range(65)]
    got = physics.binomial_mean(values, counts, shares)
    expected = counts * shares * (1 - shares) + (counts * shares) ** 2  # E m^2
    np.testing.assert_allclose(got, expected, rtol=1e-10)
