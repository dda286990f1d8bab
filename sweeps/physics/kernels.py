"""The roofline bound of each kernel of a step, one at a time (docs/cost-model.md sections 1-4).

The cost model bounds a whole step; ``sweeps expected`` holds each kernel's measured time
against its own bound, so these are the same counts split by kernel: a GEMM reads its weight
once and does ``2 m n k`` FLOPs; decode attention reads every sequence's cache and does
``4 H d S`` FLOPs a sequence; a prefill's causal attention ``2 H d N^2`` and writes the cache;
MLA attention the same against one latent a token (``mla_attention_time``); a ring all-reduce
sends ``2 (tp - 1) / tp`` of its buffer over the device link; the routed experts read the
experts the tokens touch; the embedding gathers one row a token. Pure and vectorized;
activations are not counted, as the cost model counts none.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where
from sweeps.physics.model import causal_attention_pairs
from sweeps.physics.speculative import verify_attended_layer_tokens, verify_cached_layer_tokens


def kernel_time(flops: Array, nbytes: Array, peak: Array, bandwidth: Array) -> Array:
    """The roofline time of one kernel, ``max(flops / peak, bytes / bandwidth)`` [s].

    Parameters
    ----------
    flops : Its FLOPs [FLOP]
    nbytes : Its HBM bytes [byte]
    peak : Peak FLOP/s of its compute format [FLOP/s]
    bandwidth : HBM bandwidth [byte/s]
    """
    return np.maximum(flops / peak, nbytes / bandwidth)


def gemm_time(
    m: Array, n: Array, k: Array, weight_bytes: Array, peak: Array, bandwidth: Array
) -> Array:
    """Bound of a GEMM of ``m`` tokens by an ``n x k`` weight: ``2 m n k`` FLOPs, the
    weight's ``n k wb`` bytes [s].

    Parameters
    ----------
    m, n, k : Tokens, output and input width [1]
    weight_bytes : Bytes per weight [byte]
    peak : Peak FLOP/s [FLOP/s]
    bandwidth : HBM bandwidth [byte/s]
    """
    return kernel_time(2.0 * m * n * k, n * k * weight_bytes, peak, bandwidth)


def attention_time(
    batch: Array,
    length: Array,
    heads: Array,
    kv_heads: Array,
    head_dim: Array,
    kv_bytes: Array,
    peak: Array,
    bandwidth: Array,
    prefill: bool,
    window: Array = 0,
) -> Array:
    """Bound of one layer's attention on one device [s]: decode, ``batch`` queries against
    ``length`` cached tokens (``4 H d S`` FLOPs a sequence, its cache read); prefill, causal
    over ``length`` prompt tokens (``2 H d N^2`` FLOPs a sequence, its cache written). A layer
    with a sliding window ``w`` attends to ``min(S, w)`` cached tokens and, in a prefill, to
    ``causal_attention_pairs(N, w)`` query-key pairs (``4 H d`` FLOPs a pair), its cache
    ``min(N, w)`` tokens a sequence.

    Parameters
    ----------
    batch : Sequences [sequence]
    length : Cached tokens (decode) or prompt tokens (prefill) [token]
    heads, kv_heads : Query and key/value heads on the device [head]
    head_dim : Head dimension [1]
    kv_bytes : Bytes per cached element [byte]
    peak : Peak FLOP/s [FLOP/s]
    bandwidth : HBM bandwidth [byte/s]
    prefill : A prefill (True) or a decode step
    window : Sliding-window length [token]; 0 for full attention
    """
    flops = _attention_flops(batch, length, heads, head_dim, prefill, window)
    nbytes = _attention_bytes(batch, length, kv_heads, head_dim, kv_bytes, window)
    return kernel_time(flops, nbytes, peak, bandwidth)


def _attention_flops(
    batch: Array, length: Array, heads: Array, head_dim: Array, prefill: bool, window: Array
) -> Array:
    """``attention_time``'s FLOPs of one layer [FLOP]."""
    windowed = np.greater(window, 0)
    kept = where(windowed, np.minimum(length, window), length)  # the cache a sequence holds
    pairs = causal_attention_pairs(length, where(windowed, window, length))
    full = (2.0 * length if prefill else 4.0) * batch * heads * head_dim * length
    narrow = 4.0 * (pairs if prefill else kept) * batch * heads * head_dim
    return where(windowed, narrow, full)  # full attention as before, bit for bit


def _attention_bytes(
    batch: Array, length: Array, kv_heads: Array, head_dim: Array, kv_bytes: Array, window: Array
) -> Array:
    """``attention_time``'s HBM bytes of one layer: the cache a sequence holds, read or
    written [byte]."""
    windowed = np.greater(window, 0)
    kept = where(windowed, np.minimum(length, window), length)
    return batch * kept * 2.0 * kv_heads * head_dim * kv_bytes


def verify_attention_time(
    batch: Array,
    context: Array,
    draft_tokens: Array,
    heads: Array,
    kv_heads: Array,
    head_dim: Array,
    kv_bytes: Array,
    peak: Array,
    bandwidth: Array,
    window: Array = 0,
) -> Array:
    """Bound of one layer's attention of a verify step on one device [s]: each sequence's
    ``k + 1`` queries at the caches ``S .. S + k`` together (``4 H d`` FLOPs a query-key pair,
    ``verify_attended_layer_tokens``), its cache read once (``verify_cached_layer_tokens``).
    ``k = 0`` counts ``attention_time``'s decode FLOPs and bytes.

    Parameters
    ----------
    batch : Sequences [sequence]
    context : Cached tokens at the first query, ``S`` [token]
    draft_tokens : Draft tokens ``k`` [token]
    heads, kv_heads : Query and key/value heads on the device [head]
    head_dim : Head dimension [1]
    kv_bytes : Bytes per cached element [byte]
    peak : Peak FLOP/s [FLOP/s]
    bandwidth : HBM bandwidth [byte/s]
    window : Sliding-window length [token]; 0 for full attention
    """
    windowed = np.greater(window, 0)
    local = where(windowed, 1.0, 0.0)  # one layer: local or full
    w = where(windowed, window, np.inf)
    pairs = verify_attended_layer_tokens(context, draft_tokens, 1.0, local, w)
    kept = verify_cached_layer_tokens(context, draft_tokens, 1.0, local, w)
    flops = 4.0 * batch * heads * head_dim * pairs
    nbytes = batch * kept * 2.0 * kv_heads * head_dim * kv_bytes
    return kernel_time(flops, nbytes, peak, bandwidth)


def hit_attention_time(
    batch: Array,
    prompt: Array,
    cached: Array,
    heads: Array,
    kv_heads: Array,
    head_dim: Array,
    kv_bytes: Array,
    peak: Array,
    bandwidth: Array,
    window: Array = 0,
) -> Array:
    """Bound of one layer's attention of a prefill whose first ``cached`` tokens are cached
    [s]: the ``prompt - cached`` new tokens attend causally to every earlier position (the
    prompt's causal FLOPs less the prefix's), and the whole prompt's cache is read (the
    prefix) or written (the new tokens). ``cached = 0`` is ``attention_time``'s prefill bit
    for bit.

    Parameters
    ----------
    batch : Sequences [sequence]
    prompt : Prompt tokens, cached and new, ``I`` [token]
    cached : Tokens of the prompt already cached, ``0 <= p <= I`` [token]
    heads, kv_heads : Query and key/value heads on the device [head]
    head_dim : Head dimension [1]
    kv_bytes : Bytes per cached element [byte]
    peak : Peak FLOP/s [FLOP/s]
    bandwidth : HBM bandwidth [byte/s]
    window : Sliding-window length [token]; 0 for full attention
    """
    whole = _attention_flops(batch, prompt, heads, head_dim, True, window)
    flops = whole - _attention_flops(batch, cached, heads, head_dim, True, window)
    nbytes = _attention_bytes(batch, prompt, kv_heads, head_dim, kv_bytes, window)
    return kernel_time(flops, nbytes, peak, bandwidth)


def mla_attention_time(
    batch: Array,
    length: Array,
    heads: Array,
    kv_lora_rank: Array,
    qk_rope_head_dim: Array,
    qk_nope_head_dim: Array,
    v_head_dim: Array,
    kv_bytes: Array,
    peak: Array,
    bandwidth: Array,
    prefill: bool,
) -> Array:
    """Bound of one layer's multi-head latent attention (MLA) on one device [s]: decode in
    the absorbed form, ``batch`` queries against ``length`` cached latents (``2 H S (2 r +
    rho)`` FLOPs a sequence: scores against the ``r + rho`` latent, values from the ``r``
    latent; its ``S (r + rho)`` latent cache read); prefill in the non-absorbed form, causal
    over ``length`` prompt tokens (``H N^2 (d_qk + d_v)`` FLOPs a sequence, its latent
    cache written). The projections around it (down, up, absorbed BMMs, output) are GEMMs:
    ``gemm_time`` each.

    Parameters
    ----------
    batch : Sequences [sequence]
    length : Cached tokens (decode) or prompt tokens (prefill) [token]
    heads : Query heads on the device [head]
    kv_lora_rank : Latent width of the cache, ``r`` [1]
    qk_rope_head_dim : Rope part of the query-key head, ``rho`` [1]
    qk_nope_head_dim : Non-rope part of the query-key head [1]
    v_head_dim : Value head, ``d_v`` [1]
    kv_bytes : Bytes per cached element [byte]
    peak : Peak FLOP/s [FLOP/s]
    bandwidth : HBM bandwidth [byte/s]
    prefill : A prefill (True) or a decode step
    """
    if prefill:
        per_pair = qk_rope_head_dim + qk_nope_head_dim + v_head_dim
        flops = batch * heads * length * length * per_pair
    else:
        flops = 2.0 * batch * heads * length * (2.0 * kv_lora_rank + qk_rope_head_dim)
    nbytes = batch * length * (kv_lora_rank + qk_rope_head_dim) * kv_bytes
    return kernel_time(flops, nbytes, peak, bandwidth)


def allreduce_time(tokens: Array, hidden: Array, tp: Array, link_bandwidth: Array) -> Array:
    """Bound of a ring all-reduce of ``tokens x hidden`` bf16 activations over ``tp``
    devices: ``2 (tp - 1) / tp`` of the buffer over the link [s] (0 at ``tp = 1``).

    Parameters
    ----------
    tokens : Rows [token]
    hidden : Model width [1]
    tp : Devices [device]
    link_bandwidth : Device-to-device bandwidth per direction [byte/s]
    """
    return 2.0 * (tp - 1) / tp * tokens * hidden * 2.0 / link_bandwidth


def experts_time(
    tokens: Array,
    hidden: Array,
    inter: Array,
    topk: Array,
    experts: Array,
    tp: Array,
    weight_bytes: Array,
    peak: Array,
    bandwidth: Array,
) -> Array:
    """Bound of a MoE layer's routed experts for ``tokens`` tokens, uniformly routed: three
    ``hidden x inter`` matrices an expert, split over ``tp``; ``2 * 3 h i k`` FLOPs a token;
    the ``E (1 - (1 - k/E)^T)`` experts the tokens touch read once [s].

    Parameters
    ----------
    tokens : Tokens [token]
    hidden, inter : Model width and expert width [1]
    topk, experts : Experts a token and in the layer [1]
    tp : Devices the experts split over [device]
    weight_bytes : Bytes per weight [byte]
    peak : Peak FLOP/s [FLOP/s]
    bandwidth : HBM bandwidth [byte/s]
    """
    matrix = 3.0 * hidden * inter / tp
    touched = experts * (1.0 - (1.0 - topk / experts) ** tokens)
    return kernel_time(
        2.0 * tokens * topk * matrix, touched * matrix * weight_bytes, peak, bandwidth
    )


def gather_time(tokens: Array, hidden: Array, weight_bytes: Array, bandwidth: Array) -> Array:
    """Bound of the embedding gather: one ``hidden``-wide row a token, no FLOPs [s].

    Parameters
    ----------
    tokens : Tokens [token]
    hidden : Model width [1]
    weight_bytes : Bytes per weight [byte]
    bandwidth : HBM bandwidth [byte/s]
    """
    return tokens * hidden * weight_bytes / bandwidth
