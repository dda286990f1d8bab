"""The M/D/1 waiting-time distribution (``docs/serving.md`` section 4): percentiles, vectorized.

A prompt that arrives at rate ``lambda`` to a server of deterministic service ``D`` waits
``W``, whose distribution depends on ``rho = lambda D`` alone in units of ``D``. Erlang's
formula (Crommelin 1932) gives it exactly,

    P(W <= x D) = (1 - rho) sum_{k=0}^{floor(x)} e^{rho (x - k)} (rho (k - x))^k / k!,

an alternating series that loses about ``2 rho x / ln 10`` digits to cancellation; it is used up
to ``x = CUT`` (at most 9 of 16 digits lost), and beyond it the tail is the exact exponential
rate of the M/G/1 workload, ``P(W > t) ~ C e^{-gamma t}`` with ``rho (e^{gamma D} - 1) =
gamma D``, anchored on the series at ``CUT``. Every function broadcasts.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from sweeps.physics._array import Array, where

CUT = 10.0
"""Where the exact series hands over to its exponential tail [service times]."""

_TERMS = int(CUT) + 1


def md1_wait_cdf(x: Array, utilization: Array) -> Array:
    """``P(W <= x D)`` of an M/D/1 queue, by Erlang's series (for ``0 <= x <= CUT``).

    Parameters
    ----------
    x : Wait in service times, ``t / D`` [1]
    utilization : ``rho = lambda D < 1`` [1]

    Returns
    -------
    Probability [1]
    """
    rho = utilization
    total = 0.0 * x * rho
    for k in range(_TERMS):
        term = np.exp(rho * (x - k)) * (rho * (k - x)) ** k / math.factorial(k)
        total = total + where(k <= np.floor(x), term, 0.0)
    return np.minimum(np.maximum((1 - rho) * total, 0.0), 1.0)


def md1_tail_rate(utilization: Array) -> Array:
    """The decay rate of the M/D/1 wait's tail in service times, ``g = gamma D``.

    The positive root of ``rho (e^g - 1) = g`` (Cramér-Lundberg), by Newton's method from
    the right, where the convex function is positive: monotone convergence.

    Parameters
    ----------
    utilization : ``rho < 1`` [1]

    Returns
    -------
    ``g`` [1]
    """
    rho = utilization
    g = 2 * np.log(1 / rho) + 2
    for _ in range(60):
        g = g - (rho * np.expm1(g) - g) / (rho * np.exp(g) - 1)
    return g


def md1_wait_quantile(quantile: Array, utilization: Array, service_time: Array) -> Array:
    """The ``quantile`` of the M/D/1 waiting time [s]; inf at ``rho >= 1``.

    Zero where the quantile falls in the atom ``P(W = 0) = 1 - rho``; else Erlang's series
    inverted by bisection (60 halvings) up to ``CUT`` service times, the exponential tail past it.

    Parameters
    ----------
    quantile : Probability, ``0 < p < 1`` (0.5 the median) [1]
    utilization : ``rho = lambda D`` [1]
    service_time : Deterministic service time, ``D`` [s]

    Returns
    -------
    Wait not exceeded with probability ``quantile`` [s]
    """
    p, rho = quantile, utilization
    stable = (rho < 1) & (rho > 0)
    r = where(stable, rho, 0.5)
    at_cut = md1_wait_cdf(CUT, r)
    lo, hi = 0.0 * p * r, 0.0 * p * r + CUT
    for _ in range(60):
        mid = (lo + hi) / 2
        below = md1_wait_cdf(mid, r) < p
        lo, hi = where(below, mid, lo), where(below, hi, mid)
    with np.errstate(divide="ignore"):
        tail = CUT + np.log((1 - at_cut) / (1 - p)) / md1_tail_rate(r)
    x = where(p <= 1 - r, 0.0, where(p <= at_cut, hi, tail))
    return where(stable, x * service_time, where(rho <= 0, 0.0 * service_time, np.inf))


@cache
def md1_quantile_table(quantile: float, points: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """The ``quantile`` of the M/D/1 wait in service times over utilizations in ``(0, 1)``.

    Spaced evenly in ``log(1 - rho)`` from ``rho = 1e-4`` to ``1 - 1e-4``, where the wait grows
    fastest; ``numpy.interp`` on it gives the quantile at any utilization, or (the table is
    increasing) the utilization at which it reaches a slack. Computed once per ``(quantile,
    points)``: every sweep with a serving table asks for the same few, so the arrays returned
    are cached and read-only.

    Parameters
    ----------
    quantile : Probability, ``0 < p < 1`` [1]
    points : Table size [1]

    Returns
    -------
    ``(rho, wait)``: utilizations [1] and the waits there [service times]
    """
    rho = 1 - np.geomspace(1 - 1e-4, 1e-4, points)
    wait = np.asarray(md1_wait_quantile(quantile, rho, 1.0))
    rho.flags.writeable = wait.flags.writeable = False  # cached: shared by every caller
    return rho, wait


def md1_quantile_wait(
    table: tuple[np.ndarray, np.ndarray], utilization: np.ndarray, service_time: np.ndarray
) -> np.ndarray:
    """The tabulated quantile of the wait at ``utilization`` [s]; inf at ``rho >= 1``.

    Parameters
    ----------
    table : ``md1_quantile_table`` of the quantile
    utilization : ``rho`` [1]
    service_time : ``D`` [s]

    Returns
    -------
    Wait [s]
    """
    rho, wait = table
    x = np.interp(utilization, rho, wait, left=0.0)
    return np.where(utilization < rho[-1], x * service_time, np.inf)


def md1_max_utilization(table: tuple[np.ndarray, np.ndarray], slack: np.ndarray) -> np.ndarray:
    """The largest utilization whose tabulated quantile wait stays within ``slack`` service
    times; NaN where the slack is negative.

    Parameters
    ----------
    table : ``md1_quantile_table`` of the quantile
    slack : Wait allowed, in service times [1]

    Returns
    -------
    ``rho`` [1]
    """
    rho, wait = table
    return np.where(slack >= 0, np.interp(slack, wait, rho, left=0.0), np.nan)
