"""The bound over every scheduler with ``B`` slots and a token budget (``docs/serving.md`` s. 2).

Over many requests a schedule of steps runs at least ``n_steps = max((O - 1) / B,
(I + O - 1) / tau)`` steps per request (``B`` decodes, ``tau`` tokens a step at most), and each
step reads the weights once. A request's own work (its FLOPs, its cache traffic) is the same
under every schedule; the weights it is charged are at least the larger of two chords of the
concave ``W(T)`` (weight bytes of a step of ``T`` tokens). A sum of maxima is at least the
maximum of the sums, so ``t_req = max(F_req / peak, (weights + Q_req) / bandwidth)`` is a lower
bound on a replica's time per request. Every function broadcasts.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array
from sweeps.physics.roofline import roofline_time


def steps_per_request(batch: Array, prompt: Array, output: Array, budget: Array) -> Array:
    """Fewest steps per request over many requests, ``max((O - 1) / B, (I + O - 1) / tau)``.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    prompt : Prompt tokens, ``I`` [token]
    output : Output tokens, ``O >= 1`` [token]
    budget : Tokens a step may carry, ``tau`` (``inf``: no budget) [token]

    Returns
    -------
    Steps per request [1]
    """
    return np.maximum((output - 1) / batch, (prompt + output - 1) / budget)


def weights_per_request(
    batch: Array,
    prompt: Array,
    output: Array,
    budget: Array,
    at_batch: Array,
    at_batch_chunk: Array,
    chunk: Array,
    at_zero: Array,
    at_largest: Array,
    largest: Array,
) -> Array:
    """Weight bytes a request is charged at least, the larger of two chords of ``W(T)``.

    ``(O - 1) / B W(B) + I (W(B + c) - W(B)) / c`` with ``c = max(tau, B I)`` (the most prompt
    tokens a step beside ``B`` decodes carries: a paced scheduler prefills ahead), and
    ``n_steps W(0) + (I + O - 1) (W(T_max) - W(0)) / T_max`` with ``T_max`` the largest step
    (``tau``, or ``B I`` without a budget). For a dense model both are ``n_steps W``.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    prompt : Prompt tokens, ``I`` [token]
    output : Output tokens, ``O >= 1`` [token]
    budget : Tokens a step may carry, ``tau`` (``inf``: no budget) [token]
    at_batch : ``W(B)`` [byte]
    at_batch_chunk : ``W(B + c)`` [byte]
    chunk : ``c = max(tau, B I)`` [token]
    at_zero : ``W(0)``, the weights every step reads whatever its tokens [byte]
    at_largest : ``W(T_max)`` [byte]
    largest : ``T_max`` [token]

    Returns
    -------
    Weight bytes per request [byte]
    """
    decode_chord = (output - 1) / batch * at_batch + prompt * (at_batch_chunk - at_batch) / chunk
    steps = steps_per_request(batch, prompt, output, budget)
    step_chord = steps * at_zero + (prompt + output - 1) * (at_largest - at_zero) / largest
    return np.maximum(decode_chord, step_chord)


def bound_request_time(
    flops: Array, weights: Array, traffic: Array, peak_flops: Array, bandwidth: Array
) -> Array:
    """A replica's time per request under any scheduler, ``max(F_req / peak, (W + Q) / bw)``.

    Parameters
    ----------
    flops : The request's FLOPs, ``F_req``: its prefill and its ``O - 1`` decodes [FLOP]
    weights : Weight bytes it is charged (``weights_per_request``) [byte]
    traffic : Its other bytes, ``Q_req``: KV writes and decode reads, no prefix re-reads [byte]
    peak_flops : Peak throughput, efficiency applied [FLOP/s]
    bandwidth : Memory bandwidth, efficiency applied [byte/s]

    Returns
    -------
    ``t_req`` [s]
    """
    return roofline_time(flops, weights + traffic, peak_flops, bandwidth)
