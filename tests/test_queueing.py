"""The M/D/1 waiting-time distribution against hand values and a plain Lindley simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from sweeps import physics

from .test_physics import check_duck_typed


def test_hand_values() -> None:
    # the atom P(W = 0) = 1 - rho; P(W <= D) = (1 - rho) e^rho (the k = 1 term vanishes there)
    for rho in (0.3, 0.9):
        assert physics.md1_wait_cdf(0.0, rho) == pytest.approx(1 - rho)
        assert physics.md1_wait_cdf(1.0, rho) == pytest.approx((1 - rho) * math.exp(rho))
    # P(W <= 1.5 D) = (1 - rho) (e^{1.5 rho} - 0.5 rho e^{0.5 rho})
    rho = 0.7
    by_hand = (1 - rho) * (math.exp(1.5 * rho) - 0.5 * rho * math.exp(0.5 * rho))
    assert physics.md1_wait_cdf(1.5, rho) == pytest.approx(by_hand)
    assert physics.md1_wait_quantile(0.5, 0.3, 0.02) == 0.0  # in the atom
    assert physics.md1_wait_quantile(0.9, 1.0, 0.02) == np.inf
    # the tail rate solves rho (e^g - 1) = g
    g = physics.md1_tail_rate(np.array([0.05, 0.5, 0.99]))
    np.testing.assert_allclose(np.array([0.05, 0.5, 0.99]) * np.expm1(g), g, rtol=1e-12)


def test_the_tail_continues_the_series() -> None:
    """Just inside the cut the series and the exponential tail anchored on it agree."""
    for rho in (0.3, 0.7, 0.95):
        at_cut = physics.md1_wait_cdf(physics.CUT, rho)
        inside = physics.md1_wait_cdf(physics.CUT - 2, rho)
        tail = 1 - (1 - at_cut) * math.exp(2 * physics.md1_tail_rate(rho))
        assert inside == pytest.approx(tail, abs=1e-6)


def lindley(rho: float, n: int, seed: int) -> np.ndarray:
    """Waits of ``n`` Poisson arrivals at one server of service 1, ``W' = max(W + 1 - A, 0)``."""
    gaps = np.random.default_rng(seed).exponential(1 / rho, n).tolist()
    waits, w = [], 0.0
    for gap in gaps:
        waits.append(w)
        w = max(w + 1.0 - gap, 0.0)
    return np.asarray(waits)


@pytest.mark.parametrize("rho", [0.3, 0.7, 0.9])
def test_mean_and_percentiles_match_a_simulation(rho: float) -> None:
    waits = lindley(rho, 300_000, seed=7)[10_000:]
    batches = np.array_split(waits, 30)  # batch means: a confidence interval for each figure
    for stat, closed in (
        (np.mean, physics.md1_waiting_time(rho, 1.0)),
        (lambda w: np.quantile(w, 0.9), physics.md1_wait_quantile(0.9, rho, 1.0)),
        (lambda w: np.quantile(w, 0.99), physics.md1_wait_quantile(0.99, rho, 1.0)),
    ):
        values = np.array([stat(b) for b in batches])
        half = 2.05 * values.std(ddof=1) / math.sqrt(values.size)  # t(29) at 95 %
        assert abs(stat(waits) - closed) <= max(half, 1e-9), (rho, stat(waits), closed, half)


def test_on_scalars_numpy_and_xarray() -> None:
    check_duck_typed(physics.md1_wait_quantile, (0.9, [0.3, 0.9], 0.02))
    ds = physics.md1_wait_quantile(0.99, xr.DataArray([0.3, 0.9], dims="rate"), 0.02)
    assert ds.dims == ("rate",)
