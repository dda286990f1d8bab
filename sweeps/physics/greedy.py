"""``chunked-greedy`` with speculation: slots freeing at random steps (``docs/speculative.md``).

With random acceptance (``k > 0``, ``0 < a < 1``) a request's verify steps ``N`` are random
(mean ``n``, ``sweeps.physics.verify_steps``), so ``chunked-greedy``'s slots do not free in
the fixed groups of ``sweeps.physics.greedy_cycle``. Where each freed slot's prompt is
prefilled whole in the step after (its leftover budget holds them), a slot's life is a renewal
cycle of ``1 + N`` steps, one prefilling and ``N`` verifying, independent of the other slots'.
In the stationary state a slot prefills at a given step with probability ``p = 1 / (n + 1)``,
independently of the others, so the prompts a step carries are ``m ~ Binomial(B, p)``; a
decoding request sees ``Binomial(B - 1, p)`` others prefilling beside it, and a prefilling one
``1 + Binomial(B - 1, p)`` prompts in its own step. The analysis prices the step at each
``m`` (its decodes at the mean context) and averages it with these weights; the functions here
give the weights and the rate, TPOT and spill of that schedule. Every function broadcasts.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def prefilling_share(steps: Array) -> Array:
    """Probability that a slot prefills at a given step, ``p = 1 / (n + 1)``.

    Parameters
    ----------
    steps : A request's mean verify steps, ``n >= 0`` [1]

    Returns
    -------
    ``p`` [1]
    """
    return 1 / (steps + 1)


def binomial_log_first(trials: Array, share: Array) -> Array:
    """``log P(m = 0) = B log(1 - p)`` for ``m ~ Binomial(B, p)``: the start of
    ``binomial_log_next``'s recurrence (in logs: no underflow at thousands of slots).

    Parameters
    ----------
    trials : Trials, ``B >= 0`` [1]
    share : Success probability, ``0 < p < 1`` [1]

    Returns
    -------
    Log probability [1]
    """
    return trials * np.log1p(-share)


def binomial_log_next(log_pmf: Array, count: Array, trials: Array, share: Array) -> Array:
    """``log P(m = j + 1)`` from ``log P(m = j)``, ``m ~ Binomial(B, p)``:
    ``+ log((B - j) / (j + 1)) + log(p / (1 - p))``; ``-inf`` past ``B``.

    Parameters
    ----------
    log_pmf : ``log P(m = j)`` [1]
    count : ``j >= 0`` [1]
    trials : Trials, ``B`` [1]
    share : Success probability, ``0 < p < 1`` [1]

    Returns
    -------
    Log probability [1]
    """
    left = trials - count
    ratio = np.log(where(left > 0, left, 1.0) / (count + 1)) + np.log(share / (1 - share))
    return where(left > 0, log_pmf + ratio, -np.inf)


def fitting_prompts(batch: Array, prompt: Array, rows: Array, budget: Array) -> Array:
    """The most prompts a step carries whole beside its decodes, ``(tau - B r) / (I - r)``.

    A step with ``m`` prompts prefilling has ``B - m`` decodes of ``r`` rows each; its prompts
    fit whole where ``(B - m) r + m I <= tau``. Not floored: compare ``m`` with it. Prompts of
    at most ``r`` tokens: every ``m`` (``inf``) where ``B r <= tau``, none (``-inf``) beyond.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    prompt : Prompt tokens a prefill computes, ``I > r`` [token]
    rows : Rows a decode slot runs a step, ``r = k + 1`` [token]
    budget : Tokens a step may carry, ``tau`` [token]

    Returns
    -------
    Prompts [1]
    """
    room = budget - batch * rows
    longer = prompt > rows
    return where(
        longer, room / where(longer, prompt - rows, 1.0), where(room >= 0, np.inf, -np.inf)
    )


def random_greedy_rate(batch: Array, share: Array, mean_step: Array) -> Array:
    """Requests per second where slots free at random: ``B p / E[t(m)]``.

    A slot finishes a request every ``n + 1`` steps on average, so ``B p`` requests a step;
    a step lasts ``E[t(m)]``, ``m ~ Binomial(B, p)`` (renewal reward over the steps).

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    share : A slot's prefilling probability, ``p`` (``prefilling_share``) [1]
    mean_step : The step time averaged over ``m ~ Binomial(B, p)`` [s]

    Returns
    -------
    Request rate [request/s]
    """
    return batch * share / mean_step


def random_greedy_tpot(steps: Array, output: Array, decode_step: Array) -> Array:
    """Mean TPOT where slots free at random: ``n E[t(m')] / (O - 1)``.

    A request's ``N`` verify steps each see ``m' ~ Binomial(B - 1, p)`` others prefilling,
    independent of its own draws: by Wald's identity its decode lasts ``n E[t(m')]`` on
    average. NaN at ``O = 1``.

    Parameters
    ----------
    steps : A request's mean verify steps, ``n`` [1]
    output : Output tokens, ``O >= 1`` [token]
    decode_step : The step time averaged over ``m' ~ Binomial(B - 1, p)`` [s]

    Returns
    -------
    TPOT [s]
    """
    tokens = output - 1
    return where(tokens > 0, steps * decode_step / where(tokens > 0, tokens, 1), np.nan)


def spill_share(mean_spill: Array, batch: Array, share: Array) -> Array:
    """Share of the prompts that do not fit whole in the step after their slot frees,
    ``E[(m - m_fit)+] / (B p)`` (each waits a step more, the schedule's only departure from
    the renewal cycle above) [1].

    Parameters
    ----------
    mean_spill : Prompts a step beyond those that fit, ``E[(m - m_fit)+]`` [1]
    batch : Slots, ``B`` [sequence]
    share : A slot's prefilling probability, ``p`` [1]

    Returns
    -------
    Share [1]
    """
    return mean_spill / (batch * share)


def balanced_headroom(batch: Array, decoders: Array) -> Array:
    """Free slots of a budget-paced ``chunked-greedy`` in standard deviations of its decodes,
    ``(B - 1 - n_d) / sqrt(n_d)``.

    Paced by its budget the scheduler keeps ``n_d`` decodes on average (``balanced_decoders``)
    and one prompt prefilling; with random verify steps the decodes wander around ``n_d``
    (by at most a Poisson count's ``sqrt(n_d)``), and where they reach the ``B`` slots a step
    runs short of its budget, off the balanced state. ``inf`` at ``n_d = 0``.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    decoders : Balanced decodes, ``n_d`` [sequence]

    Returns
    -------
    Headroom [1]
    """
    some = decoders > 0
    return where(some, (batch - 1 - decoders) / np.sqrt(where(some, decoders, 1.0)), np.inf)
