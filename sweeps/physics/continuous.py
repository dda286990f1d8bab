"""Continuous batching (``docs/serving.md`` sections 2 and 3): steady state, in closed form.

Colocated: ``B`` slots always full, each new prompt prefilled alone while the decodes wait.
Chunked: one token budget ``tau`` a step, decodes first, the rest a chunk of one prompt. Both
run every slot at the mean context of a request's life, where the batch totals of FLOPs and
bytes are exact (the costs are affine in the context). Every function broadcasts.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def mean_context(prompt: Array, output: Array) -> Array:
    """Mean cached tokens of a full layer over a request's decode steps, ``I + O/2``.

    The mean of ``I + j`` over ``j = 1 .. O-1``; the cost is affine in it, so batch totals at the
    mean are exact.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    output : Output tokens, ``O`` [token]

    Returns
    -------
    Mean context [token]
    """
    return prompt + output / 2


def mean_local_context(prompt: Array, output: Array, window: Array) -> Array:
    """Mean of ``min(I + j, w)`` over ``j = 1 .. O-1``: a local layer's mean cached tokens.

    With ``n = O - 1`` steps and ``m = clip(w - I, 0, n)`` of them below the window:
    ``(m I + m (m + 1) / 2 + (n - m) w) / n``. NaN at ``O = 1`` (no decode step).

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` (an integer) [token]
    output : Output tokens, ``O >= 1`` (an integer) [token]
    window : Sliding window, an integer; ``inf`` for none [token]

    Returns
    -------
    Mean local context [token]
    """
    steps = output - 1
    cap = np.minimum(window, prompt + steps)
    below = np.minimum(np.maximum(cap - prompt, 0), steps)
    total = below * prompt + below * (below + 1) / 2 + (steps - below) * cap
    return where(steps > 0, total / where(steps > 0, steps, 1), np.nan)


def mean_cached_layer_tokens(
    prompt: Array, output: Array, layers: Array, local_layers: Array, window: Array
) -> Array:
    """Mean token-layers a slot holds: ``kv_cached_layer_tokens`` over a request's decode steps.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    output : Output tokens, ``O >= 2`` [token]
    layers : Transformer layers [1]
    local_layers : Layers with a sliding window [1]
    window : Sliding window, an integer; ``inf`` for none [token]

    Returns
    -------
    Mean cached token-layers, for ``kv_bytes_per_sequence`` and attention FLOPs [token]
    """
    full = (layers - local_layers) * mean_context(prompt, output)
    return full + local_layers * mean_local_context(prompt, output, window)


# --- colocated (section 2) ------------------------------------------------------------------


def _decode_share(batch: Array, output: Array, step_time: Array) -> Array:
    """Decode time one request costs its replica, ``(O - 1) t_steady / B``; 0 at ``O = 1`` [s]."""
    steps = output - 1
    return where(steps > 0, steps * step_time / batch, 0.0)


def colocated_request_rate(
    batch: Array, output: Array, step_time_steady: Array, prefill_time: Array
) -> Array:
    """Requests per second of one colocated replica, ``1 / ((O-1) t_steady / B + t_p(1, I))``.

    ``B`` slots always full, a finished request's slot refilled at once, each new prompt
    prefilled alone while the decodes wait.

    Parameters
    ----------
    batch : Decode slots, ``B`` [sequence]
    output : Output tokens of a request, ``O >= 1`` [token]
    step_time_steady : Decode step at the mean context, ``t_d(B, S_mean)`` [s]
    prefill_time : Prefill of one prompt, ``t_p(1, I)`` [s]

    Returns
    -------
    Request rate, ``r`` [request/s]
    """
    return 1 / (_decode_share(batch, output, step_time_steady) + prefill_time)


def output_tokens_per_s_per_device(rate: Array, output: Array, tp: Array) -> Array:
    """Output throughput of a replica per device, ``r O / tp``.

    Parameters
    ----------
    rate : Requests per second of one replica [request/s]
    output : Output tokens of a request [token]
    tp : Devices of one replica (tensor-parallel degree) [device]

    Returns
    -------
    Output tokens per second per device [token/s]
    """
    return rate * output / tp


def tokens_per_s_per_user(tpot: Array) -> Array:
    """Speed one user sees, ``1 / tpot``.

    Parameters
    ----------
    tpot : Time per output token [s]

    Returns
    -------
    Tokens per second per user [token/s]
    """
    return 1 / tpot


def prefill_time_share(rate: Array, prefill_time: Array) -> Array:
    """Share of a colocated replica's time spent in prefill, ``r t_p(1, I)``.

    Parameters
    ----------
    rate : Requests per second of the replica [request/s]
    prefill_time : Prefill of one prompt [s]

    Returns
    -------
    Prefill share of device time, 0..1 [1]
    """
    return rate * prefill_time


# --- chunked prefill (section 3) ---------------------------------------------------------------


def balanced_chunk(batch: Array, prompt: Array, output: Array) -> Array:
    """Prompt tokens a step must carry to keep ``B`` slots fed, ``B I / (O - 1)``; inf at ``O = 1``.

    Parameters
    ----------
    batch : Decode slots, ``B`` [sequence]
    prompt : Prompt tokens of a request, ``I`` [token]
    output : Output tokens of a request, ``O >= 1`` [token]

    Returns
    -------
    Prompt tokens per step in steady state [token]
    """
    steps = output - 1
    return where(steps > 0, batch * prompt / where(steps > 0, steps, 1), np.inf)


def budget_limited(batch: Array, prompt: Array, output: Array, budget: Array) -> Array:
    """True where the budget cuts the chunk, ``B + B I / (O - 1) > tau``.

    There prefill cannot keep the slots full: fewer than ``B`` sequences decode at a time.

    Parameters
    ----------
    batch : Decode slots, ``B`` [sequence]
    prompt : Prompt tokens of a request, ``I`` [token]
    output : Output tokens of a request, ``O >= 1`` [token]
    budget : Tokens a step may carry, ``tau`` [token]

    Returns
    -------
    Budget-limited flag [bool]
    """
    return batch + balanced_chunk(batch, prompt, output) > budget


def chunked_ttft(prompt: Array, chunk: Array, step_time: Array) -> Array:
    """TTFT of a chunked scheduler, ``(1 + (I - 1) / c) t_mix``: the steps a prompt spans.

    The prompts stream through the steps' ``c`` prompt tokens; a prompt of ``I`` tokens is cut
    by ``(I - 1) / c`` step ends on average, so it spans one more step than that; its first
    token comes out at the end of the last. Inf at ``c = 0``.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    chunk : Prompt tokens a step, ``c`` [token]
    step_time : Mixed-step time, ``t_mix`` [s]

    Returns
    -------
    TTFT [s]
    """
    has_room = chunk > 0
    return where(has_room, (1 + (prompt - 1) / where(has_room, chunk, 1)) * step_time, np.inf)


def chunked_request_rate(prompt: Array, chunk: Array, step_time: Array) -> Array:
    """Requests per second of one replica, ``c / (I t_mix)``.

    Prompts are admitted at ``c / I`` a step. When the budget does not bind, ``c = B I / (O-1)``
    and this is ``B / ((O - 1) t_mix)``; when it binds, prefill is the limit and the slots
    cannot all stay full, so ``B / ((O - 1) t_mix)`` would count requests never admitted.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    chunk : Prompt tokens a step, ``c`` [token]
    step_time : Mixed-step time, ``t_mix`` [s]

    Returns
    -------
    Request rate [request/s]
    """
    return chunk / (prompt * step_time)
