"""Closed-loop load (``docs/serving.md`` section 4): the rate ``C`` clients send, by Little's law.

Each of ``C`` clients sends its next request when its last one ends (no think time), so the
fleet holds ``C`` requests at every moment and Little's law gives the rate, ``lambda = C /
E2E``. The end-to-end latency grows with the rate (the prompts wait for the prefill server),
so the rate is the fixed point of ``lambda = C / (fixed + W(lambda))``: ``fixed`` the latency
without any wait (the prefill, the hand-off, the ``O - 1`` decode tokens), ``W`` the mean M/D/1
wait of a prompt at ``rho = lambda D / N``, and at most ``cap`` (the slots' capacity: past it
the extra clients wait for a slot and the rate stays at the cap). ``lambda (fixed + W)`` is
increasing in ``lambda``, so the fixed point is unique and bisection finds it, vectorized over
the whole grid. Every function broadcasts.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where
from sweeps.physics.pools import md1_waiting_time

HALVINGS = 64
"""Bisection steps of ``closed_loop_rate``: the bracket shrinks to ``2^-64`` of its width."""


def closed_loop_rate(
    clients: Array, fixed: Array, service_time: Array, replicas: Array, cap: Array
) -> Array:
    """The rate of a closed loop, ``lambda = min(cap, C / (fixed + W(lambda)))`` [request/s].

    Parameters
    ----------
    clients : Closed-loop clients, ``C`` [request]
    fixed : End-to-end latency without queueing: prefill, hand-off, decode [s]
    service_time : Prefill server's deterministic service of one prompt, ``D`` [s]
    replicas : Prefill servers the prompts are spread over, ``N`` [replica]
    cap : Largest rate the fleet's slots carry [request/s]

    Returns
    -------
    Requests per second of the fleet; NaN where an input is
    """
    hi = np.minimum(cap, clients / fixed)
    lo = 0.0 * hi

    def excess(rate: Array) -> Array:
        wait = md1_waiting_time(rate * service_time / replicas, service_time)
        return rate * (fixed + wait) - clients

    capped = excess(hi) <= 0  # the cap binds, or no wait at all
    for _ in range(HALVINGS):
        mid = (lo + hi) / 2
        below = excess(mid) <= 0
        lo, hi = where(below, mid, lo), where(below, hi, mid)
    return where(capped, np.minimum(cap, clients / fixed), lo)


def closed_loop_ttft(clients: Array, rate: Array, decode_time: Array) -> Array:
    """Mean TTFT of a closed loop by Little's law, ``C / lambda - decode_time`` [s].

    Parameters
    ----------
    clients : Closed-loop clients, ``C`` [request]
    rate : The loop's rate, ``closed_loop_rate`` [request/s]
    decode_time : Time of a request's ``O - 1`` decode tokens, ``(O - 1) TPOT`` [s]

    Returns
    -------
    Mean time from sending a request to its first token [s]
    """
    return clients / rate - decode_time
