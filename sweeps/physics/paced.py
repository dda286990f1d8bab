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


def log_factorial(x: Array) -> Array:
    """``log x! = lgamma(x + 1)`` for ``x >= 0``: Stirling's series at ``x + 9``, shifted back
    by the eight logs between (error below 1e-15 plus rounding) [1].

    Parameters
    ----------
    x : Argument, ``x >= 0`` [1]

    Returns
    -------
    ``log x!`` [1]
    """
    z = x + 9.0
    series = (
        (z - 0.5) * np.log(z) - z + 0.5 * np.log(2 * np.pi)
        + 1 / (12 * z) - 1 / (360 * z**3) + 1 / (1260 * z**5) - 1 / (1680 * z**7)
        + 1 / (1188 * z**9) - 691 / (360360 * z**11) + 1 / (156 * z**13)
    )  # fmt: skip
    return series - sum(np.log(x + i) for i in range(1, 9))


def binomial_pmf(count: Array, share: Array, m: Array) -> Array:
    """``P(M = m)`` for ``M ~ Bin(count, share)``, in logs (no underflow at large ``N``); 0
    outside ``0 <= m <= N``.

    Parameters
    ----------
    count : Trials, ``N >= 0`` [1]
    share : Success probability, ``0 <= q < 1`` [1]
    m : Successes [1]

    Returns
    -------
    Probability [1]
    """
    q = np.clip(share, 0.0, 1.0 - 1e-15)
    inside = (m >= 0) & (m <= count)
    hits = np.maximum(m, 0)
    rest = np.maximum(count - hits, 0)
    log_choose = log_factorial(count) - log_factorial(hits) - log_factorial(rest)
    log_weight = log_choose + hits * np.log(np.maximum(q, 1e-300)) + rest * np.log1p(-q)
    return where(inside & ((hits == 0) | (q > 0)), np.exp(log_weight), 0.0)
