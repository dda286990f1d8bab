"""Named schedulers, saturated (``docs/serving.md`` section 3), and the bound over all (section 2).

Every scheduler has ``B`` slots always busy (a backlog of requests). In steady state the slots
free in groups: over a cycle of ``n`` steps, ``B`` slots free in ``n`` groups, ``r = B mod n`` of
``q + 1`` and ``n - r`` of ``q`` (``q = B // n``), each group's requests admitted together.
The functions here take a group's cost at ``q + 1`` and at ``q`` (the analysis prices those
steps from the per-step physics) and return the rates, TPOT and TTFT of the schedule. Every
function broadcasts; times per replica.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def slot_groups(batch: Array, cycle: Array) -> tuple[Array, Array]:
    """Sizes of the groups in which ``B`` slots free over a cycle of ``n`` steps.

    ``q = B // n`` and ``r = B mod n``: ``r`` groups of ``q + 1`` slots and ``n - r`` of ``q``
    (``n`` below 1 counts as 1: every slot in one group).

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    cycle : Steps of a cycle, ``n`` [1]

    Returns
    -------
    ``(q, r)``: the smaller group size [sequence] and how many groups are one larger [1]
    """
    n = np.maximum(cycle, 1)
    small = np.floor(batch / n)
    return small, batch - small * n


def grouped(batch: Array, cycle: Array, large: Array, small: Array) -> tuple[Array, Array]:
    """A per-group cost summed over a cycle, and its mean as one request sees its own group.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    cycle : Groups (steps) of a cycle, ``n`` [1]
    large : The cost of a group of ``q + 1`` [s]
    small : The cost of a group of ``q`` (0 for an empty group) [s]

    Returns
    -------
    ``(total, own)``: the cycle's sum ``r large + (n - r) small`` [s], and the mean over
    requests of their own group's cost ``(r (q + 1) large + (n - r) q small) / B`` [s]
    """
    n = np.maximum(cycle, 1)
    q, r = slot_groups(batch, cycle)
    total = r * large + (n - r) * small
    own = (r * (q + 1) * large + (n - r) * q * small) / batch
    return total, own


def serial_prefill_tpot(
    batch: Array, output: Array, step_time_steady: Array, prefill_time: Array
) -> Array:
    """Mean TPOT of ``serial-prefill``: ``t_ss + (B - 1/2 - sum m^2 / 2B) t_p(1, I) / (O - 1)``.

    A prompt is prefilled alone when its slot frees; the ``B`` slots free in ``O - 1`` groups
    of sizes ``m``. A request's decode sees every prefill of the other groups and, on average,
    half of its own group's others: ``B - m/2 - 1/2`` stalls, averaged over requests. Where
    ``B <= O - 1`` every group holds one slot: ``B - 1``. NaN at ``O = 1``.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    output : Output tokens of a request, ``O >= 1`` [token]
    step_time_steady : Decode step at the mean context, ``t_d(B, S_mean)`` [s]
    prefill_time : Prefill of one prompt, ``t_p(1, I)`` [s]

    Returns
    -------
    TPOT [s]
    """
    steps = output - 1
    q, r = slot_groups(batch, steps)
    squares = r * (q + 1) ** 2 + (np.maximum(steps, 1) - r) * q**2
    stalls = batch - 0.5 - squares / (2 * batch)
    return where(
        steps > 0, step_time_steady + stalls * prefill_time / where(steps > 0, steps, 1), np.nan
    )


def batched_prefill_rate(
    batch: Array, output: Array, step_time_steady: Array, prefills: Array
) -> Array:
    """Requests per second of ``batched-prefill``, ``B / ((O - 1) t_ss + sum_g t_p(m_g, I))``.

    The waiting prompts with a free slot are prefilled together, one step per group.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    output : Output tokens of a request, ``O >= 1`` [token]
    step_time_steady : Decode step at the mean context [s]
    prefills : The cycle's prefill steps, ``sum_g t_p(m_g, I)`` (``grouped``'s total) [s]

    Returns
    -------
    Request rate [request/s]
    """
    return batch / ((output - 1) * step_time_steady + prefills)


def batched_prefill_tpot(
    output: Array, step_time_steady: Array, prefills: Array, own_prefill: Array
) -> Array:
    """Mean TPOT of ``batched-prefill``: ``t_ss + (sum_g t_p(m_g) - own) / (O - 1)``.

    A request's decode is stalled by every other group's prefill step, not its own; NaN at
    ``O = 1``.

    Parameters
    ----------
    output : Output tokens of a request, ``O >= 1`` [token]
    step_time_steady : Decode step at the mean context [s]
    prefills : The cycle's prefill steps (``grouped``'s total) [s]
    own_prefill : The request's own group's prefill, its mean (``grouped``'s own) [s]

    Returns
    -------
    TPOT [s]
    """
    steps = output - 1
    stalls = (prefills - own_prefill) / where(steps > 0, steps, 1)
    return where(steps > 0, step_time_steady + stalls, np.nan)


def greedy_prefill_steps(batch: Array, prompt: Array, budget: Array) -> Array:
    """Steps ``chunked-greedy`` takes to prefill one prompt beside ``B - 1`` decodes,
    ``k = ceil(I / (tau - B + 1))``.

    Parameters
    ----------
    batch : Slots, ``B`` (the prefilling request holds one) [sequence]
    prompt : Prompt tokens, ``I`` [token]
    budget : Tokens a step may carry, ``tau > B`` [token]

    Returns
    -------
    Steps [1]
    """
    return np.ceil(prompt / (budget - batch + 1))


def greedy_slot_bound(batch: Array, output: Array, prefill_steps: Array) -> Array:
    """True where ``chunked-greedy``'s slots, not its budget, pace it: one prompt at a time.

    A slot's cycle is ``O - 1 + k`` steps (``k`` prefilling, ``O - 1`` decoding); the ``B``
    slots' prefills fit in it one after another where ``B k <= O - 1 + k``. Otherwise the
    prompts queue for the budget and the scheduler fills every step (``balanced_decoders``).

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    output : Output tokens, ``O >= 1`` [token]
    prefill_steps : Steps a prompt's prefill takes, ``k`` (``greedy_prefill_steps``) [1]

    Returns
    -------
    Slot-bound flag [bool]
    """
    return batch * prefill_steps <= output - 1 + prefill_steps


def greedy_cycle(
    batch: Array, output: Array, cycle: Array, own_prefill: Array
) -> tuple[Array, Array, Array]:
    """Rate, TPOT and TTFT of ``chunked-greedy`` where its slots pace it.

    Over a cycle (``cycle`` seconds) every slot's prompt is prefilled once (``own_prefill``,
    its own steps) and decoded ``O - 1`` times over the cycle's other steps.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    output : Output tokens of a request, ``O >= 1`` [token]
    cycle : The cycle's step times summed [s]
    own_prefill : A request's own prefill steps, their mean over requests [s]

    Returns
    -------
    ``(rate, tpot, ttft)`` [request/s, s, s]; TPOT NaN at ``O = 1``
    """
    steps = output - 1
    tpot = where(steps > 0, (cycle - own_prefill) / where(steps > 0, steps, 1), np.nan)
    return batch / cycle, tpot, own_prefill


def balanced_decoders(batch: Array, prompt: Array, output: Array, budget: Array) -> Array:
    """Sequences decoding a step in a chunked scheduler's balanced state, ``n_d``.

    Not budget-limited (``B + B I / (O - 1) <= tau``): all ``B``. Budget-limited: prompts are
    admitted as fast as the budget allows and the decodes balance them,
    ``n_d = tau (O - 1) / (I + O - 1)``. At ``O = 1`` none.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    prompt : Prompt tokens, ``I`` [token]
    output : Output tokens, ``O >= 1`` [token]
    budget : Tokens a step may carry, ``tau`` [token]

    Returns
    -------
    Decoding sequences a step [sequence]
    """
    steps = output - 1
    return np.minimum(batch, budget * steps / (prompt + steps))


def paced_chunk(decoders: Array, prompt: Array, output: Array, budget: Array) -> Array:
    """Prompt tokens a balanced chunked step carries, ``c = n_d I / (O - 1)``; ``tau`` at ``O = 1``.

    Budget-limited, ``n_d I / (O - 1) = tau - n_d``: the chunk fills the budget.

    Parameters
    ----------
    decoders : Decoding sequences a step, ``n_d`` (``balanced_decoders``) [sequence]
    prompt : Prompt tokens, ``I`` [token]
    output : Output tokens, ``O >= 1`` [token]
    budget : Tokens a step may carry, ``tau`` [token]

    Returns
    -------
    Chunk, ``c`` [token]
    """
    steps = output - 1
    return where(steps > 0, decoders * prompt / where(steps > 0, steps, 1), budget)


def serial_prefill_tpot_quantile(
    quantile: Array, batch: Array, output: Array, step_time_steady: Array, prefill_time: Array
) -> Array:
    """A quantile of the requests' TPOT in ``serial-prefill``, saturated [s].

    A request's decode sees every other group's prefills and those of its own group prefilled
    after it: ``B - 1 - k`` stalls at position ``k`` of its group. Over the ``n = O - 1``
    groups of a cycle ``n`` requests hold each position below ``q`` and ``r`` position ``q``,
    so the smallest TPOT that ``quantile`` of the requests do not exceed has
    ``k = min(q, floor((1 - p) B / n))``. One value where ``B <= O - 1`` (every group one
    slot: ``B - 1`` stalls each); NaN at ``O = 1``.

    Parameters
    ----------
    quantile : Probability, ``0 < p < 1`` [1]
    batch, output, step_time_steady, prefill_time : As ``serial_prefill_tpot`` [sequence,
        token, s, s]

    Returns
    -------
    TPOT [s]
    """
    steps = output - 1
    n = np.maximum(steps, 1)
    q, _ = slot_groups(batch, steps)
    k = np.minimum(q, np.floor((1 - quantile) * batch / n))
    stalls = batch - 1 - k
    return where(steps > 0, step_time_steady + stalls * prefill_time / n, np.nan)


def batched_prefill_tpot_quantile(
    quantile: Array,
    batch: Array,
    output: Array,
    step_time_steady: Array,
    prefills: Array,
    large: Array,
    small: Array,
) -> Array:
    """A quantile of the requests' TPOT in ``batched-prefill``, saturated [s].

    A request's decode is stalled by every group's prefill step but its own's: the
    ``r (q + 1)`` requests of the larger groups by ``prefills - large``, the others by
    ``prefills - small`` (one value where every group has one size); NaN at ``O = 1``.

    Parameters
    ----------
    quantile : Probability, ``0 < p < 1`` [1]
    batch : Slots, ``B`` [sequence]
    output : Output tokens of a request, ``O >= 1`` [token]
    step_time_steady : Decode step at the mean context [s]
    prefills : The cycle's prefill steps (``grouped``'s total) [s]
    large : The prefill of a group of ``q + 1``, ``t_p(q + 1, I)`` [s]
    small : The prefill of a group of ``q``, ``t_p(q, I)`` (0 for none) [s]

    Returns
    -------
    TPOT [s]
    """
    steps = output - 1
    n = np.maximum(steps, 1)
    q, r = slot_groups(batch, steps)
    in_large = r * (q + 1) / batch  # share of requests in the larger groups
    low, high = prefills - large, prefills - where(q > 0, small, large)
    seen = where(quantile <= in_large, np.minimum(low, high), np.maximum(low, high))
    return where(steps > 0, step_time_steady + seen / n, np.nan)
