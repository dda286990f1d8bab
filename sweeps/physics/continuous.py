"""Continuous batching (``docs/serving.md`` sections 2 and 3): steady state, in closed form.

Colocated: ``B`` slots always full, each new prompt prefilled alone while the decodes wait.
Chunked: one token budget ``tau`` a step, decodes first, the rest a chunk of one prompt. Both
run every slot at the mean context of a request's life, where the batch totals of FLOPs and
bytes are exact (the costs are affine in the context). Every function broadcasts.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where
from sweeps.physics.serving import time_per_output_token


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


def colocated_tpot(
    batch: Array, output: Array, step_time_steady: Array, prefill_time: Array
) -> Array:
    """TPOT with the prefill stalls, ``t_steady + B t_p(1, I) / (O - 1)``; NaN at ``O = 1``.

    While one request decodes its ``O - 1`` tokens, about ``B`` others are admitted, each
    prefill stalling it.

    Parameters
    ----------
    batch : Decode slots, ``B`` [sequence]
    output : Output tokens of a request, ``O >= 1`` [token]
    step_time_steady : Decode step at the mean context [s]
    prefill_time : Prefill of one prompt, ``t_p(1, I)`` [s]

    Returns
    -------
    TPOT [s]
    """
    return step_time_steady + time_per_output_token(batch * prefill_time, output)


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


def chunk_tokens(batch: Array, prompt: Array, output: Array, budget: Array) -> Array:
    """Prompt tokens a mixed step carries, ``c = min(B I / (O - 1), tau - B)``, never below 0.

    Decodes go first; what the token budget ``tau`` leaves is the chunk.

    Parameters
    ----------
    batch : Decode slots, ``B`` [sequence]
    prompt : Prompt tokens of a request, ``I`` [token]
    output : Output tokens of a request, ``O >= 1`` [token]
    budget : Tokens a step may carry, ``tau`` [token]

    Returns
    -------
    Chunk length, ``c`` [token]
    """
    room = np.maximum(budget - batch, 0)
    return np.minimum(balanced_chunk(batch, prompt, output), room)


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


def chunked_step_flops(
    decode_flops: Array, prompt_flops: Array, prompt: Array, chunk: Array
) -> Array:
    """FLOPs of a mixed step: the decodes plus ``c / I`` of one prompt's prefill.

    Over its ``I / c`` chunks a prompt pays its whole prefill, ``t_p``'s FLOPs for ``B = 1``:
    ``2 (P_act - E)`` a token, the lm_head once, and causal attention; a chunk against a prefix
    of mean ``I/2`` tokens (itself included) is ``c I / 2`` of the prompt's ``I**2 / 2`` pairs.

    Parameters
    ----------
    decode_flops : FLOPs of the ``B`` decodes at the mean context [FLOP]
    prompt_flops : Prefill FLOPs of one whole prompt [FLOP]
    prompt : Prompt tokens, ``I`` [token]
    chunk : Prompt tokens in the step, ``c`` [token]

    Returns
    -------
    Mixed-step FLOPs [FLOP]
    """
    return decode_flops + prompt_flops * chunk / prompt


def chunked_step_bytes(
    weights_read: Array, decode_kv_bytes: Array, prefix_kv_bytes: Array
) -> Array:
    """Bytes of a mixed step: weights once for both phases, the decode caches, the prefix.

    Parameters
    ----------
    weights_read : Weight bytes the step reads (for ``B + c`` tokens) [byte]
    decode_kv_bytes : Caches of the ``B`` decodes at the mean context [byte]
    prefix_kv_bytes : Cached prefix of the chunked prompt, mean ``I/2`` tokens, re-read by every
        chunk (the cost of small chunks) [byte]

    Returns
    -------
    Mixed-step bytes [byte]
    """
    return weights_read + decode_kv_bytes + prefix_kv_bytes


def chunked_ttft(prompt: Array, chunk: Array, step_time: Array) -> Array:
    """Time to first token with chunked prefill, ``ceil(I / c) t_mix`` (inf at ``c = 0``).

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
    return where(has_room, np.ceil(prompt / where(has_room, chunk, 1)) * step_time, np.inf)


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
