"""``chunked-paced`` with slots that free at random: each prompt holds its slot from its first
chunk (``docs/serving.md`` section 3, "Random verify steps").

With random acceptance (``k > 0``, ``0 < alpha < 1``) a request's verify steps ``N`` are
random, so its slot frees at no fixed step. A prompt fed at the mean pace and prefilled ahead
would wait for a slot after its first token, inside its TPOT, in a queue that drifts nowhere;
instead a free slot takes the next prompt, which holds it while its ``p`` chunks ride the
steps. Each slot then cycles through ``p`` prefill steps and ``N`` verify steps on its own
(in steps, the slots do not interact while the budget holds every chunk), so in steady state
the number of slots prefilling at a step is binomial, ``m ~ Bin(B, p / (p + n))``, ``n = E N``,
and every rate and time is a mean over ``m`` of the step the ``m`` chunks and ``B - m``
verifies make. Every function broadcasts; times per replica.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sweeps.physics._array import Array, where


def held_prefill_steps(prompt: Array, pace: Array) -> Array:
    """Steps a held prompt's prefill rides, ``p = max(ceil(I / c), 1)``, its chunks of
    ``ceil(I / p)`` tokens (the last the rest).

    Parameters
    ----------
    prompt : Prompt tokens computed, ``I`` [token]
    pace : The paced chunk, ``c = B I / n`` (``inf``: one step) [token]

    Returns
    -------
    Prefill steps [1]
    """
    return np.maximum(np.ceil(prompt / pace), 1.0)


def held_share(prefill_steps: Array, verify_steps: Array) -> Array:
    """Share of steps a slot spends prefilling its prompt, ``q = p / (p + n)`` [1].

    Parameters
    ----------
    prefill_steps : Steps of a prompt's prefill, ``p`` [1]
    verify_steps : Mean verify (decode) steps of a request, ``n`` [1]

    Returns
    -------
    Share [1]
    """
    return prefill_steps / (prefill_steps + verify_steps)


def held_request_rate(
    batch: Array, prefill_steps: Array, verify_steps: Array, step: Array
) -> Array:
    """Requests per second of one replica, ``B / ((p + n) E[t_step])``: each slot serves one
    request a cycle of ``p + n`` steps on average.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    prefill_steps : Steps of a prompt's prefill, ``p`` [1]
    verify_steps : Mean verify steps of a request, ``n`` [1]
    step : The mean step over ``m ~ Bin(B, q)`` prefilling slots [s]

    Returns
    -------
    Request rate [request/s]
    """
    return batch / ((prefill_steps + verify_steps) * step)


def binomial_reach(count: Array, share: Array) -> int:
    """The largest ``m`` a ``Bin(count, share)`` mean needs summed: ten standard deviations
    and ten above the mean (the mass beyond is below 1e-20), at most ``count`` [1]."""
    # broadcast in the arguments' own types (DataArrays align), then bare
    mean = np.asarray(count * share, dtype=np.float64)
    variance = np.asarray(count * share * (1 - share), dtype=np.float64)
    trials = np.asarray(count + 0 * share, dtype=np.float64)
    reach = np.minimum(mean + 10 * np.sqrt(np.maximum(variance, 0.0)) + 10, trials)
    reach = np.nan_to_num(reach, nan=0.0, posinf=0.0)
    return int(np.ceil(np.max(reach, initial=0.0)))


def binomial_mean(values: Sequence[Array], count: Array, share: Array) -> Array:
    """``E f(m)`` for ``m ~ Bin(count, share)``, ``f(m)`` given for ``m = 0 .. len - 1``.

    The weights are computed in logs (``log C(N, m)`` accumulated term by term), so a large
    ``N`` does not underflow; ``m > N`` weighs nothing, and the mass past the last value
    (``binomial_reach`` makes it negligible) is left out and the rest renormalised.

    Parameters
    ----------
    values : ``f(0), f(1), ...`` [any unit]
    count : Trials, ``N >= 0`` [1]
    share : Success probability, ``0 <= q < 1`` [1]

    Returns
    -------
    The mean [the values' unit]
    """
    q = np.clip(share, 0.0, 1.0 - 1e-15)
    log_q, log_rest = np.log(np.maximum(q, 1e-300)), np.log1p(-q)
    total, mass, log_choose = 0.0 * q, 0.0 * q, 0.0 * q
    for m, value in enumerate(values):
        if m > 0:
            log_choose = log_choose + np.log(np.maximum(count - m + 1, 1e-300)) - np.log(m)
        log_weight = log_choose + m * log_q + (count - m) * log_rest
        weight = where((m <= count) & ((m == 0) | (q > 0)), np.exp(log_weight), 0.0)
        total = total + weight * where(weight > 0, value, 0.0)
        mass = mass + weight
    return total / mass
