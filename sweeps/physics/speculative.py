"""Speculative decoding: ``k`` draft tokens verified in one step of the target.

Leviathan et al. 2023, Chen et al. 2023 (the specification: beyond-the-step section 1, copied
into ``docs/speculative.md``). A verification step runs the target on ``B`` sequences of
``k + 1`` query tokens at context ``S``: row ``j`` (``0..k``) is the token at context
``S + j``, as a plain decode step at that context would be, and the step reads the weights and
every sequence's cache once. With independent acceptance ``alpha`` per draft token it yields
``E = (1 - alpha^(k+1)) / (1 - alpha)`` tokens on average. ``k = 0`` is a plain decode step
exactly: every function here reduces to the decode physics there.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def expected_tokens(draft_tokens: Array, acceptance: Array) -> Array:
    """Expected tokens a verification step yields, ``E = (1 - a^(k+1)) / (1 - a)``.

    The accepted prefix of the ``k`` drafts plus the target's own token at the first
    rejection (or after the last draft): ``k + 1`` at ``a = 1``, 1 at ``a = 0``.

    Parameters
    ----------
    draft_tokens : Draft tokens per verification, ``k >= 0`` [token]
    acceptance : Per-token acceptance probability, ``0 <= a <= 1`` [1]

    Returns
    -------
    Expected tokens per verification step [token]
    """
    below = acceptance < 1
    safe = where(below, acceptance, 0.0)
    return where(below, (1 - safe ** (draft_tokens + 1)) / (1 - safe), draft_tokens + 1)


def verify_attended_layer_tokens(
    context: Array, draft_tokens: Array, layers: Array, local_layers: Array, window: Array
) -> Array:
    """Token-layers the ``k + 1`` rows attend over together: ``sum_j`` cache at ``S + j``.

    Full layers: ``(k + 1) S + k (k + 1) / 2``; a local layer's row ``j`` sees
    ``min(S + j, w)``, summed exactly (``w`` may be ``inf``). ``k = 0`` gives
    ``kv_cached_layer_tokens(S)``.

    Parameters
    ----------
    context : Tokens in the cache at the first row, ``S`` (an integer) [token]
    draft_tokens : Draft tokens ``k`` (an integer) [token]
    layers : Transformer layers [1]
    local_layers : Layers with a sliding window [1]
    window : Sliding-window length, an integer or ``inf`` [token]

    Returns
    -------
    Attended token-layers summed over the rows [token]
    """
    rows = draft_tokens + 1
    full = rows * context + draft_tokens * rows / 2
    cap = np.minimum(window, context + draft_tokens)  # keeps inf out: no row sees more
    growing = np.minimum(np.maximum(cap - context + 1, 0), rows)  # rows with S + j <= cap
    local = growing * context + growing * (growing - 1) / 2 + (rows - growing) * cap
    return (layers - local_layers) * full + local_layers * local


def verify_cached_layer_tokens(
    context: Array, draft_tokens: Array, layers: Array, local_layers: Array, window: Array
) -> Array:
    """Token-layers of cache the verify step touches once: the union of its rows' windows.

    A full layer holds ``S + k`` tokens at the last row; a local layer's rows see the
    ``min(S + j, w)`` latest tokens, whose union is ``min(S + k, w + k)``. ``k = 0`` gives
    ``kv_cached_layer_tokens(S)``, the bytes of a plain decode step's cache.

    Parameters
    ----------
    context : Tokens in the cache at the first row, ``S`` [token]
    draft_tokens : Draft tokens ``k`` [token]
    layers : Transformer layers [1]
    local_layers : Layers with a sliding window [1]
    window : Sliding-window length, or ``inf`` [token]

    Returns
    -------
    Cached token-layers read or written [token]
    """
    last = context + draft_tokens
    return (layers - local_layers) * last + local_layers * np.minimum(last, window + draft_tokens)


def verify_flops_per_sequence(
    draft_tokens: Array, linear_flops_per_token: Array, attention_flops: Array
) -> Array:
    """FLOPs one sequence costs in a verification step: ``(k + 1) F_lin + F_att``.

    ``F_lin = 2 (P_act - lookup)`` counts the logits of every row (the lm_head is in
    ``P_act``); ``F_att`` is the attention of the ``k + 1`` rows, ``attention_on 2 H d_att``
    times ``verify_attended_layer_tokens``. At ``k = 0`` it is ``decode_flops_per_sequence``
    term for term; the step is ``decode_flops(B, ...)`` of it.

    Parameters
    ----------
    draft_tokens : Draft tokens ``k`` [token]
    linear_flops_per_token : Linear-layer FLOPs of one token, logits included [FLOP]
    attention_flops : Attention FLOPs of the ``k + 1`` rows against their caches (0 with
        attention FLOPs off) [FLOP]

    Returns
    -------
    Verify FLOPs per sequence [FLOP]
    """
    return (draft_tokens + 1) * linear_flops_per_token + attention_flops


def verify_bytes(weights_read: Array, batch: Array, cache_bytes: Array) -> Array:
    """Bytes of a verification step: the weights once, each sequence's cache once.

    Parameters
    ----------
    weights_read : Weight bytes read for the ``B (k + 1)`` tokens (MoE: the experts they
        touch; the embedding rows they gather) [byte]
    batch : Sequences verified together [sequence]
    cache_bytes : KV bytes one sequence's rows touch, ``verify_cached_layer_tokens`` [byte]

    Returns
    -------
    Verify-step bytes [byte]
    """
    return weights_read + batch * cache_bytes


def speculative_time_per_token(verify_time: Array, draft_time: Array, expected: Array) -> Array:
    """Time per output token of one sequence, ``(t_verify + t_draft) / E``.

    Parameters
    ----------
    verify_time : Time of the verification step [s]
    draft_time : Time the draft takes to propose ``k`` tokens [s]
    expected : Expected tokens per verification, ``E`` [token]

    Returns
    -------
    Time per output token [s/token]
    """
    return (verify_time + draft_time) / expected


def speculative_speedup(
    decode_time: Array, verify_time: Array, draft_time: Array, expected: Array
) -> Array:
    """Speedup over plain decode, ``t_d E / (t_verify + t_draft)``.

    Parameters
    ----------
    decode_time : Plain decode step at the same batch and context [s]
    verify_time : Time of the verification step [s]
    draft_time : Time the draft takes [s]
    expected : Expected tokens per verification [token]

    Returns
    -------
    Speedup (above 1: speculation pays) [1]
    """
    return decode_time * expected / (verify_time + draft_time)


def useful_share(expected: Array, draft_tokens: Array) -> Array:
    """Share of the verified rows that become output, ``E / (k + 1)``.

    Parameters
    ----------
    expected : Expected tokens per verification [token]
    draft_tokens : Draft tokens ``k`` [token]

    Returns
    -------
    Useful share, 0..1 [1]
    """
    return expected / (draft_tokens + 1)


def first_batch_at_most(speedup: Array, batch: Array, axis: int, threshold: float = 1.0) -> Array:
    """The first batch along ``axis`` whose speedup is at most ``threshold``; NaN if none.

    The break-even batch of speculation: beyond it the verify step is compute-bound and the
    rejected rows cost real FLOPs. ``batch`` holds the axis values in order (ascending in a
    sweep), broadcast against ``speedup``. A NaN speedup (a point that does not fit) is never
    the break-even.

    Parameters
    ----------
    speedup : Speedup over plain decode, any shape [1]
    batch : Batch values along ``axis``, broadcastable to ``speedup`` [sequence]
    axis : The batch axis of ``speedup`` [1]
    threshold : Speedup at or below which speculation stops paying [1]

    Returns
    -------
    Break-even batch, the batch axis removed [sequence]
    """
    hit = np.asarray(speedup) <= threshold
    values = np.broadcast_to(np.asarray(batch, dtype=float), hit.shape)
    first = np.argmax(hit, axis=axis)
    found = np.take_along_axis(hit, np.expand_dims(first, axis), axis).squeeze(axis)
    chosen = np.take_along_axis(values, np.expand_dims(first, axis), axis).squeeze(axis)
    return np.where(found, chosen, np.nan)


def mtp_layer_params(params: Array, embedding_params: Array, layers: Array) -> Array:
    """Parameters of one multi-token-prediction head, taken as the model's mean layer.

    DeepSeek-V3's MTP module is one transformer layer (its own MoE block and attention) that
    shares the embedding and the lm_head of the model: ``(P - E) / L``, all experts counted
    for ``P`` and the active ones for ``P_act``.

    Parameters
    ----------
    params : Parameters (all, or active per token) [1]
    embedding_params : Embedding parameters ``E`` of the model [1]
    layers : Transformer layers [1]

    Returns
    -------
    Parameters of one head [1]
    """
    return (params - embedding_params) / layers


def mtp_pass_flops(
    batch: Array, layer_active_params: Array, logit_params: Array, attention_flops: Array
) -> Array:
    """FLOPs of one MTP draft pass: one layer and the logits for ``B`` tokens.

    Parameters
    ----------
    batch : Sequences drafted together [sequence]
    layer_active_params : Active parameters of the head's layer [1]
    logit_params : lm_head parameters, ``V h_m`` [1]
    attention_flops : Attention FLOPs of one token against one layer's cache [FLOP]

    Returns
    -------
    Pass FLOPs [FLOP]
    """
    return batch * (2 * (layer_active_params + logit_params) + attention_flops)


def mtp_pass_bytes(
    layer_weights_read: Array, logit_bytes: Array, batch: Array, layer_cache_bytes: Array
) -> Array:
    """Bytes of one MTP draft pass: its layer's weights, the lm_head, one layer of each cache.

    Parameters
    ----------
    layer_weights_read : Weight bytes of the head's layer read for ``B`` tokens [byte]
    logit_bytes : Bytes of the lm_head, read again for the draft's logits [byte]
    batch : Sequences drafted together [sequence]
    layer_cache_bytes : KV bytes of one sequence in the head's layer [byte]

    Returns
    -------
    Pass bytes [byte]
    """
    return layer_weights_read + logit_bytes + batch * layer_cache_bytes


def expected_square_tokens(draft_tokens: Array, acceptance: Array) -> Array:
    """Second moment of the tokens one verification yields, ``E[X^2]``.

    ``X`` is ``j`` with probability ``a^(j-1) (1 - a)`` for ``j <= k`` and ``k + 1`` with
    ``a^k``; ``E[X^2] = sum_{j=1}^{k+1} (2 j - 1) a^(j-1)``, ``(k + 1)^2`` at ``a = 1``.

    Parameters
    ----------
    draft_tokens : Draft tokens per verification, ``k >= 0`` [token]
    acceptance : Per-token acceptance probability, ``0 <= a <= 1`` [1]

    Returns
    -------
    ``E[X^2]`` [token**2]
    """
    rows = draft_tokens + 1
    below = acceptance < 1
    a = where(below, acceptance, 0.0)
    weighted = (1 - (rows + 1) * a**rows + rows * a ** (rows + 1)) / (1 - a) ** 2
    square = 2 * weighted - expected_tokens(draft_tokens, a)
    return where(below, square, rows * rows)


def verify_steps(tokens: Array, draft_tokens: Array, acceptance: Array) -> Array:
    """Verification steps one sequence takes, on average, to produce ``n`` tokens.

    Each step yields ``X`` tokens (``expected_tokens``), the last one cut to what the sequence
    still needs, so the steps are the renewal count ``(n + overshoot) / E`` with the mean
    overshoot ``E[X (X - 1)] / (2 E)`` of the lattice renewal theorem (exact on average over
    ``n``; its error falls geometrically in ``n`` for ``0 < a < 1``). ``k = 0`` or ``a = 0``:
    ``n`` exactly; ``a = 1``: ``ceil(n / (k + 1))`` exactly, every step ``k + 1`` tokens (the
    lattice's own period, where the renewal mean is off by up to ``k / (2 (k + 1))``); 0 at
    ``n = 0``.

    Parameters
    ----------
    tokens : Tokens to produce, ``n >= 0`` (``O - 1`` of a request) [token]
    draft_tokens : Draft tokens per verification, ``k >= 0`` [token]
    acceptance : Per-token acceptance probability, ``0 <= a <= 1`` [1]

    Returns
    -------
    Verification steps [1]
    """
    e = expected_tokens(draft_tokens, acceptance)
    overshoot = (expected_square_tokens(draft_tokens, acceptance) - e) / (2 * e)
    whole = np.ceil(tokens / (draft_tokens + 1))  # a = 1: k + 1 tokens every step
    return where(tokens > 0, where(acceptance < 1, (tokens + overshoot) / e, whole), 0.0)


def random_stalls(batch: Array, steps: Array, after_share: Array) -> Array:
    """Prefills of other requests a slot's decode sees when slots finish at random steps.

    With speculation a request takes a random number of verify steps (mean ``n``,
    ``verify_steps``), so the ``B`` slots do not free in fixed groups: each other slot
    finishes at a given step with probability about ``1 / n``, independently. Over a life of
    ``n - 1`` steps after its first it sees ``(B - 1)(n - 1) / n`` of the others' prefills, and
    of the ``(B - 1) / n`` that finished with its own predecessor the share ``after_share``
    prefilled after it (``1/2`` one prompt a step; 0 prefilled together):
    ``(B - 1)(1 - (1 - after_share) / n)``.

    Parameters
    ----------
    batch : Slots, ``B`` [sequence]
    steps : Verify steps of a request, ``n > 0`` [1]
    after_share : Share of the prompts admitted at its own step prefilled after it [1]

    Returns
    -------
    Prefills seen per request [1]
    """
    return (batch - 1) * (1 - (1 - after_share) / steps)
