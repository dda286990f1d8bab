"""The per-step work shared by the analyses: one prefill, one decode step as coefficients.

The prefill analysis evaluates ``prefill_work`` on its prompt axis; the serving analyses on the
requests' prompts, at the batch of a static start or one prompt at a time. A decode step of
``B`` sequences at cache length ``S`` is affine in ``S`` between the window's kink:
``step_coefficients`` gives its FLOPs and bytes as ``(constant, per full-layer token, per
local-layer token)`` for ``sweeps.physics.affine_step_time`` and ``static_decode_time``. Every
quantity is per device, as in the decode and prefill tables (docs/cost-model.md sections 3-4).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Inputs
from sweeps.engine.parallel_terms import parallel
from sweeps.physics._array import where
from sweeps.physics.prefix_lru import cache_blocks


def path_weights_read(x: Inputs, tokens: Any) -> Any:
    """Weight bytes a pass of ``tokens`` tokens (the replica's, all at once) reads per device
    through every pipeline stage [byte]: the experts they touch (MoE; a rank's share of
    those the global batch touches), the embedding rows its own tokens gather."""
    wb, tp, ep, dp = x["weight_bytes_per_param"], x["tp"], x["_ep"], x["_dp"]
    shape = (x["params"], x["active_params"], x["experts"], x["experts_per_token"])
    params = physics.params_read(*shape, tokens)
    routed = physics.routed_params_read(*shape, tokens)
    d = physics.dense_shards(tp, ep, dp)
    own = tokens / physics.attention_replicas(ep, dp)
    read = physics.weights_read_with_gather(
        (params - routed * (1 - d / (tp * ep))) * wb,
        x["vocab_size"],
        x["hidden_size"],
        x["tied_embeddings"],
        wb,
        own,
    )
    return read / d


def weights_read(x: Inputs, tokens: Any) -> Any:
    """Weight bytes a step of ``tokens`` tokens reads per device [byte]: the experts they
    touch (MoE) and the embedding rows they gather; with ``pp`` stages a step is ``pp``
    micro-batches of ``tokens / pp``, each reading its stage's weights; below ``pp`` tokens
    ``min(B, pp)`` micro-batches of whole sequences, ``B`` passes of one."""
    if not parallel(x):
        return path_weights_read(x, tokens / x["_pp"])
    pp = x["_pp"]
    passes = physics.micro_batches(tokens, pp)
    return passes / pp * path_weights_read(x, tokens / passes)


def pipeline_fill(x: Inputs, sequences: Any) -> Any:
    """``max(1, pp / B)``, how much longer a step of ``sequences`` whole sequences takes than
    a device's work in it (``sweeps.physics.pipeline_fill``); 1 without the parallel axes."""
    if not parallel(x):
        return 1.0
    return physics.pipeline_fill(sequences, x["_pp"])


def cache_bytes(x: Inputs, context: Any) -> Any:
    """KV bytes of one sequence at ``context`` tokens on the busiest device [byte]."""
    layer_tokens = physics.kv_cached_layer_tokens(
        context, x["layers"], x["local_layers"], x["_window"]
    )
    return (
        physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], layer_tokens) / x["_shards"]
    )


def path_cache_bytes(x: Inputs, context: Any) -> Any:
    """KV bytes of one sequence at ``context`` tokens that a prefill writes per device through
    every pipeline stage, one after another [byte] (``cache_bytes`` times ``pp``)."""
    return cache_bytes(x, context) * x["_pp"]


def prefill_work(x: Inputs, batch: Any, prompt: Any) -> tuple[Any, Any, Any]:
    """FLOPs of ``batch`` prompts of ``prompt`` tokens, the weight bytes they read and one
    prompt's new cache, per device [FLOP, byte, byte] (the bytes of the prefill are
    ``sweeps.physics.prefill_bytes`` of the last two).

    The lookup computes nothing and only each prompt's last token needs logits; MLA runs its
    prefill in the non-absorbed form (``Model.prefill_attention_dim``).
    """
    vocab, width, tied = x["vocab_size"], x["hidden_size"], x["tied_embeddings"]
    window = x["_window"]
    kv_dev = path_cache_bytes(x, prompt)
    pairs = physics.prefill_attention_pairs(prompt, x["layers"], x["local_layers"], window)
    flops = (
        physics.prefill_flops(
            batch,
            prompt,
            x["active_params"],
            x["heads"],
            x["_prefill_attention_dim"],
            pairs,
            x["_attention_on"],
            physics.embedding_params(vocab, width, tied),
            physics.logit_params(vocab, width),
        )
        / x["_stage_devices"]
    )
    return flops, path_weights_read(x, batch * prompt), kv_dev


def prefill_split(x: Inputs, batch: Any, prompt: Any, flops: Any) -> tuple[Any, Any]:
    """``prefill_work``'s FLOPs (``flops``) split into the weight GEMMs' and attention's, per
    device [FLOP]: the GEMMs are the prefill without attention, attention the rest."""
    vocab, width, tied = x["vocab_size"], x["hidden_size"], x["tied_embeddings"]
    gemm = (
        physics.prefill_flops(
            batch,
            prompt,
            x["active_params"],
            x["heads"],
            x["_prefill_attention_dim"],
            0.0,
            0.0,
            physics.embedding_params(vocab, width, tied),
            physics.logit_params(vocab, width),
        )
        / x["_stage_devices"]
    )
    return gemm, flops - gemm


def hit_work(x: Inputs, batch: Any, prompt: Any, hit: Any) -> tuple[Any, Any, Any]:
    """``prefill_work`` of prompts whose first ``hit`` share is cached: FLOPs of the
    ``(1 - h) I`` new tokens and the logits row, the weight bytes they read (at least one token
    a prompt) and one prompt's cache, per device [FLOP, byte, byte]; term for term
    ``prefill_work`` at ``h = 0``."""
    vocab, width, tied = x["vocab_size"], x["hidden_size"], x["tied_embeddings"]
    new = physics.tokens_recomputed(prompt, hit)
    pairs = physics.hit_attention_pairs(prompt, hit, x["layers"], x["local_layers"], x["_window"])
    flops = (
        physics.prefill_flops(
            batch,
            new,
            x["active_params"],
            x["heads"],
            x["_prefill_attention_dim"],
            pairs,
            x["_attention_on"],
            physics.embedding_params(vocab, width, tied),
            physics.logit_params(vocab, width),
        )
        / x["_stage_devices"]
    )
    read = path_weights_read(x, np.maximum(batch * new, batch))
    return flops, read, path_cache_bytes(x, prompt)


def step_coefficients(x: Inputs, batch: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A decode step of ``batch`` sequences as ``(FLOPs, bytes)`` coefficients in the cache
    length, per device (``sweeps.physics.context_coefficients``) [FLOP, byte per token]."""
    tp, heads = x["_flop_devices"], x["heads"]
    lookup = physics.lookup_params(x["vocab_size"], x["hidden_size"], x["tied_embeddings"])
    linear = physics.decode_flops_per_sequence(x["active_params"], 0.0, 0.0, lookup) / tp
    attention = (
        x["_attention_on"] * physics.attention_flops_per_token(heads, x["attention_dim"], 1) / tp
    )
    per_token = physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], 1) / x["_shards"]
    layers, local = x["layers"], x["local_layers"]
    flops = physics.context_coefficients(batch, 0.0, linear, attention, layers, local)
    nbytes = physics.context_coefficients(
        batch, weights_read(x, batch), 0.0, per_token, layers, local
    )
    return flops, nbytes


def prefix_hit(x: Inputs) -> Any:
    """The prefix hit rate ``h`` at each point [1]: the ``prefix_hit_rate`` axis's, and where
    its label is ``"trace"`` (NaN) the trace's exact LRU hit rate at the point's own cache:
    the memory the weights leave per device, ``M (1 - reserve) - W``, in whole blocks of the
    trace's KV bytes on the busiest device (``sweeps.physics.cache_blocks``), looked up once
    per distinct capacity and broadcast."""
    hit = x["prefix_hit_rate"]
    if "_hit_curve" not in x.values:
        return hit
    curve = np.asarray(x["_hit_curve"], dtype=object).item()
    blocks = cache_capacity(x, curve.block_tokens)
    rate = x.engine.pointwise(partial(_once_per_capacity, curve), (), blocks)
    return where(np.isnan(hit), rate, hit)


def cache_capacity(x: Inputs, block_tokens: Any) -> Any:
    """Whole prefix blocks of ``block_tokens`` tokens the memory the weights leave on a
    device holds (``sweeps.physics.cache_blocks``) [block]."""
    free = x["memory"] * (1 - x.options.memory_reserve) - x["weight_bytes"]
    return cache_blocks(free, cache_bytes(x, 1.0), block_tokens)


def _once_per_capacity(curve: Any, blocks: Any) -> Any:
    """``curve.rate_at(blocks)``, looked up once per distinct capacity [1]."""
    values = np.asarray(blocks)
    distinct, inverse = np.unique(values, return_inverse=True)
    return curve.rate_at(distinct)[inverse].reshape(values.shape)[()]
