"""Bytes and FLOPs that belong to the model: weights, KV cache, attention, MoE experts."""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def weight_bytes(params: Array, bytes_per_param: Array) -> Array:
    """Bytes of the weights, ``W = P * wb``.

    Parameters
    ----------
    params : Number of parameters [1]
    bytes_per_param : Bytes per weight, group-scale overhead included [byte]

    Returns
    -------
    Weight bytes [byte]
    """
    return params * bytes_per_param


def kv_cached_layer_tokens(
    context: Array, layers: Array, local_layers: Array, window: Array
) -> Array:
    """Token-layers held in the cache: full layers keep ``S`` tokens, windowed ones ``min(S, w)``.

    Parameters
    ----------
    context : Tokens in the context, ``S`` [token]
    layers : Transformer layers [1]
    local_layers : Layers with a sliding window (0 for none) [1]
    window : Sliding-window length; any value for models without windows [token]

    Returns
    -------
    Cached token-layers, ``(L - L_loc) * S + L_loc * min(S, w)`` [token]
    """
    return (layers - local_layers) * context + local_layers * np.minimum(context, window)


def kv_bytes_per_sequence(
    kv_elements_per_token_layer: Array, kv_bytes: Array, layer_tokens: Array
) -> Array:
    """KV-cache bytes of one sequence, ``KV_seq``.

    Parameters
    ----------
    kv_elements_per_token_layer : Cached elements per token per layer: ``2 * h * d`` for
        MHA/GQA/MQA, ``kv_lora_rank + qk_rope_head_dim`` for MLA [1]
    kv_bytes : Bytes per cached element, scale overhead included [byte]
    layer_tokens : Cached token-layers (see ``kv_cached_layer_tokens``) [token]

    Returns
    -------
    KV bytes of one sequence [byte]
    """
    return kv_elements_per_token_layer * kv_bytes * layer_tokens


def attention_flops_per_token(heads: Array, attention_dim: Array, layer_tokens: Array) -> Array:
    """Attention FLOPs of one new token against the cache: ``2 * H * (d_qk + d_v) * sum_l S_l``.

    For plain attention ``d_qk + d_v = 2 d``, which gives the ``4 * L * H * d * S`` of the cost
    model; for absorbed MLA ``d_qk = kv_lora_rank + rope``, ``d_v = kv_lora_rank``.

    Parameters
    ----------
    heads : Query heads [1]
    attention_dim : Query-key plus value dimension per head [1]
    layer_tokens : Cached token-layers attended over [token]

    Returns
    -------
    Attention FLOPs per token [FLOP]
    """
    return 2 * heads * attention_dim * layer_tokens


def mla_absorbed_attention_dim(kv_lora_rank: Array, qk_rope_head_dim: Array) -> Array:
    """Per-head width of a query-key pair in MLA's absorbed form, ``2 r + rho``.

    Scores against the latent and the rope key (``r + rho``), the weighted sum of latents
    (``r``): ``2 H (2 r + rho)`` FLOPs a pair. The up-projections are folded into the query and
    the output, once per query, so nothing is paid per cached token beyond the pair.

    Parameters
    ----------
    kv_lora_rank : Latent width of the cache, ``r`` [1]
    qk_rope_head_dim : Rope part of the query-key head, ``rho`` [1]

    Returns
    -------
    Attention dimension per head [1]
    """
    return 2 * kv_lora_rank + qk_rope_head_dim


def mla_expanded_attention_dim(
    qk_nope_head_dim: Array, qk_rope_head_dim: Array, v_head_dim: Array
) -> Array:
    """Per-head width of a query-key pair in MLA's non-absorbed form, ``d_qk + d_v``.

    ``d_qk = qk_nope + rho``: ``2 H (d_qk + d_v)`` FLOPs a pair, once the latents are
    up-projected to keys and values.

    Parameters
    ----------
    qk_nope_head_dim : Non-rope part of the query-key head [1]
    qk_rope_head_dim : Rope part of the query-key head, ``rho`` [1]
    v_head_dim : Value head, ``d_v`` [1]

    Returns
    -------
    Attention dimension per head [1]
    """
    return qk_nope_head_dim + qk_rope_head_dim + v_head_dim


def mla_attention_dim(
    kv_lora_rank: Array,
    qk_rope_head_dim: Array,
    qk_nope_head_dim: Array,
    v_head_dim: Array,
    queries_per_key: Array,
) -> Array:
    """Per-pair attention dimension of MLA in the cheaper of its two forms for a phase.

    The non-absorbed form must up-project every cached latent it attends to, ``2 H r
    (qk_nope + d_v)`` FLOPs a key, shared by the queries that see that key in the same pass;
    keys of the tokens being computed are projected by the linear layers (in ``2 P_act``). So a
    pair costs ``min(2 r + rho, d_qk + d_v + r (qk_nope + d_v) / q)`` per head, with ``q`` the
    queries a cached key serves: 1 in decode (the absorbed form wins: 1088 against 131,392 for
    DeepSeek-V3), ``inf`` in the prefill of a fresh prompt (the non-absorbed form wins: 320
    against 1088, 3.4x fewer), the chunk length for a chunk against its cached prefix.

    Parameters
    ----------
    kv_lora_rank : Latent width of the cache, ``r`` [1]
    qk_rope_head_dim : Rope part of the query-key head, ``rho`` [1]
    qk_nope_head_dim : Non-rope part of the query-key head [1]
    v_head_dim : Value head, ``d_v`` [1]
    queries_per_key : Queries that share one up-projection of a cached key (``inf`` for none
        cached) [token]

    Returns
    -------
    Attention dimension per head, for ``attention_flops_per_token`` and ``prefill_flops`` [1]
    """
    absorbed = mla_absorbed_attention_dim(kv_lora_rank, qk_rope_head_dim)
    expanded = mla_expanded_attention_dim(qk_nope_head_dim, qk_rope_head_dim, v_head_dim)
    reprojection = kv_lora_rank * (qk_nope_head_dim + v_head_dim) / queries_per_key
    return np.minimum(absorbed, expanded + reprojection)


def causal_attention_pairs(prompt: Array, window: Array) -> Array:
    """Query-key pairs of a causal prompt in one layer: ``m * (N - m / 2)``, ``m = min(N, w)``.

    Without a window (``w >= N``) this is ``N**2 / 2``, the cost model's causal count.

    Parameters
    ----------
    prompt : Prompt tokens, ``N`` [token]
    window : Sliding-window length [token]

    Returns
    -------
    Attended pairs [token**2]
    """
    m = np.minimum(prompt, window)
    return m * (prompt - m / 2)


def expected_experts_touched(experts: Array, experts_per_token: Array, tokens: Array) -> Array:
    """Expected distinct experts a step touches per MoE layer, uniform routing.

    ``E * (1 - (1 - k/E)**T)``: ``k`` at one token, all ``E`` as tokens grow.

    Parameters
    ----------
    experts : Routed experts per MoE layer, ``E`` [1]
    experts_per_token : Experts each token is routed to, ``k`` [1]
    tokens : Tokens in the step (the batch for decode) [token]

    Returns
    -------
    Expected distinct experts [1]
    """
    return experts * (1 - (1 - experts_per_token / experts) ** tokens)


def params_read(
    params: Array, active_params: Array, experts: Array, experts_per_token: Array, tokens: Array
) -> Array:
    """Parameters a step must read: active ones at one token, all of them for many tokens.

    The routed-expert weights, ``P - P_act`` beyond the ``k`` experts every token needs, are read
    in proportion to the extra experts touched: ``P_act + (P - P_act) * (touched - k) / (E - k)``.
    Everything every token uses (attention, norms, routers, shared experts, dense layers such as
    DeepSeek's first three, embeddings) sits in ``P_act`` and is read once; ``P - P_act`` is
    exactly ``(E - k)`` experts per MoE layer, so this holds when every MoE layer has the same
    ``E`` and ``k`` (true of every MoE model in the catalog). Dense models (``P == P_act``, any
    ``E``) read ``P``.

    Parameters
    ----------
    params : All parameters, every expert [1]
    active_params : Parameters used per token [1]
    experts : Routed experts per MoE layer (1 for dense) [1]
    experts_per_token : Experts per token (1 for dense) [1]
    tokens : Tokens in the step [token]

    Returns
    -------
    Parameters read [1]
    """
    touched = expected_experts_touched(experts, experts_per_token, tokens)
    spare = experts - experts_per_token
    share = where(spare > 0, (touched - experts_per_token) / where(spare > 0, spare, 1), 1.0)
    return active_params + (params - active_params) * share


def kv_shards(tp: Array, kv_heads: Array) -> Array:
    """Factor by which tensor parallelism divides one device's KV cache: ``h / ceil(h / tp)``.

    Each device holds ``ceil(h / tp)`` of the ``h`` KV heads: ``tp`` shards when ``tp`` divides
    ``h``, ``h`` when ``tp >= h`` (heads replicated beyond that), and the busiest device's share
    when it divides neither (``tp = 3``, ``h = 8``: 3 heads a device, 8/3). A latent (MLA) cache
    counts as one head: replicated, never split.

    Parameters
    ----------
    tp : Tensor-parallel degree [1]
    kv_heads : Key/value heads, 1 for a latent cache [1]

    Returns
    -------
    KV shards, ``KV_seq / KV_device`` [1]
    """
    return kv_heads / np.ceil(kv_heads / tp)


def allreduce_bytes(
    layers: Array, batch: Array, hidden_size: Array, activation_bytes: Array, tp: Array
) -> Array:
    """Bytes each device sends per decode step for the tensor-parallel all-reduces.

    Two all-reduces per layer (attention output, MLP output) of ``B * hidden`` activations; a
    ring all-reduce moves ``2 (tp - 1) / tp`` of the buffer per device. Zero at ``tp = 1``.
    A separate term: it travels over the interconnect, not HBM, and is not in ``bytes``.

    Parameters
    ----------
    layers : Transformer layers [1]
    batch : Tokens in the step (sequences for decode) [token]
    hidden_size : Model width [1]
    activation_bytes : Bytes per activation element [byte]
    tp : Tensor-parallel degree [1]

    Returns
    -------
    All-reduce bytes per device per step [byte]
    """
    return 2 * layers * batch * hidden_size * activation_bytes * 2 * (tp - 1) / tp
