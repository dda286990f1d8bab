"""What a speculative draft costs, per device: its time to propose ``k`` tokens, the weights it
holds and one sequence's cache (docs/speculative.md section 1), and the verify step as affine
coefficients in the cache length for the serving analyses.

``ngram`` costs nothing; ``mtp`` is ``k`` passes of one head (the model's mean layer and the
lm_head); a draft model is ``k`` decode steps of its own at the target's tp and formats. The
speculative table sums a draft model's steps exactly over ``S .. S + k - 1``; the serving
analyses, whose contexts are means, take ``k`` steps at the mean context plus ``(k - 1) / 2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sweeps import physics
from sweeps.grid.analyses.base import Inputs
from sweeps.grid.analyses.split import attention_ratio, splits
from sweeps.grid.analyses.steps import weights_read
from sweeps.physics._array import where


@dataclass(frozen=True)
class MtpHead:
    """One MTP head (the model's mean layer and the lm_head), per device unless said.

    total : Parameters of the head's layer, all experts [1]
    active : Its parameters one token runs [1]
    read : Weight bytes of the layer a pass of the batch reads, before the tp split [byte]
    attention : Attention FLOPs of one token at the context, ``0`` where attention is off [FLOP]
    logits : Parameters of the lm_head [1]
    layer_cache : KV bytes one token holds in one layer, per device [byte]
    """

    total: Any
    active: Any
    read: Any
    attention: Any
    logits: Any
    layer_cache: Any


def mtp_head(x: Inputs, context: Any, batch: Any) -> MtpHead:
    """The ``MtpHead`` of the point's model at ``context`` for ``batch`` sequences; the grid's
    ``_mtp`` and the simulator's tables (``sweeps/simulate/speculation.py``) both build on it."""
    wb = x["weight_bytes_per_param"]
    vocab, width, layers = x["vocab_size"], x["hidden_size"], x["layers"]
    embedding = physics.embedding_params(vocab, width, x["tied_embeddings"])
    total = physics.mtp_layer_params(x["params"], embedding, layers)
    active = physics.mtp_layer_params(x["active_params"], embedding, layers)
    read = physics.params_read(total, active, x["experts"], x["experts_per_token"], batch) * wb
    attention = x["_attention_on"] * physics.attention_flops_per_token(
        x["heads"], x["attention_dim"], context
    )
    logits = physics.logit_params(vocab, width)
    layer_cache = physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], 1) / x["_shards"]
    return MtpHead(total, active, read, attention, logits, layer_cache)


def _mtp(x: Inputs, k: Any, context: Any, batch: Any) -> tuple[Any, Any, Any]:
    """``k`` passes of one MTP head at ``context`` for ``batch`` sequences: time [s], weights
    held [byte], one sequence's head cache at ``context + k`` [byte]."""
    tp, wb, head = x["tp"], x["weight_bytes_per_param"], mtp_head(x, context, batch)
    flops = physics.mtp_pass_flops(batch, head.active, head.logits, head.attention) / tp
    nbytes = physics.mtp_pass_bytes(
        head.read / tp, head.logits * wb / tp, batch, head.layer_cache * context
    )
    time = k * physics.roofline_time(flops, nbytes, x["_peak"], x["_bandwidth"])
    return time, head.total * wb / tp, head.layer_cache * (context + k)


def _draft_model(x: Inputs, k: Any, context: Any, exact: bool, batch: Any) -> tuple[Any, Any, Any]:
    """``k`` decode steps of the draft model from ``context`` for ``batch`` sequences: time
    [s] (summed exactly over integer contexts when ``exact``, else ``k`` steps at the mean
    one), weights held [byte], one sequence's cache at ``context + k`` [byte]."""
    tp, wb, kb = x["tp"], x["weight_bytes_per_param"], x["kv_bytes"]
    vocab, width, tied = x["_draft_vocab_size"], x["_draft_hidden_size"], x["_draft_tied"]
    layers, local, window = x["_draft_layers"], x["_draft_local_layers"], x["_draft_window"]
    params, active = x["_draft_params"], x["_draft_active_params"]
    read = physics.params_read(
        params, active, x["_draft_experts"], x["_draft_experts_per_token"], batch
    )
    read = physics.weights_read_with_gather(read * wb, vocab, width, tied, wb, batch) / tp
    lookup = physics.lookup_params(vocab, width, tied)
    linear = physics.decode_flops_per_sequence(active, 0.0, 0.0, lookup) / tp
    per_pair = x["_attention_on"] * physics.attention_flops_per_token(
        x["_draft_heads"], x["_draft_attention_dim"], 1
    )
    shards = physics.kv_shards(tp, x["_draft_cache_heads"])
    per_token = physics.kv_bytes_per_sequence(x["_draft_kv_elements"], kb, 1) / shards
    flops = physics.context_coefficients(batch, 0.0, linear, per_pair / tp, layers, local)
    nbytes = physics.context_coefficients(batch, read, 0.0, per_token, layers, local)
    peak, bandwidth = x["_peak"], x["_bandwidth"]
    if exact:
        time = physics.static_decode_time(
            context - 1, k + 1, flops, nbytes, window, peak, bandwidth
        )
    else:
        mean = context + (k - 1) / 2
        local_mean = physics.kv_cached_layer_tokens(mean, 1, 1, window)
        time = k * physics.affine_step_time(mean, local_mean, flops, nbytes, peak, bandwidth)
    held = physics.kv_cached_layer_tokens(context + k, layers, local, window)
    return time, params * wb / tp, per_token * held


def draft(
    x: Inputs, k: Any, context: Any, exact: bool = False, batch: Any = None
) -> tuple[Any, Any, Any]:
    """The draft's time to propose ``k`` tokens from ``context`` for ``batch`` sequences (the
    point's batch where not given) [s], the weights it holds [byte] and one sequence's cache
    [byte], per device, by kind (``ngram``: nothing)."""
    kind = x["_draft_kind"]
    batch = x["batch"] if batch is None else batch
    mtp, model = _mtp(x, k, context, batch), _draft_model(x, k, context, exact, batch)
    return tuple(
        where(kind == 2, m, where(kind == 1, t, 0.0)) for t, m in zip(mtp, model, strict=True)
    )


def verify_coefficients(x: Inputs, batch: Any, k: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The verify step of ``batch`` sequences of ``k + 1`` rows as ``(FLOPs, bytes)``
    coefficients in the first row's cache length ``S``, per device, for
    ``sweeps.physics.affine_step_time`` and ``static_decode_time``.

    Full layers are exact: rows attend ``(k + 1) S + k (k + 1) / 2`` tokens, the cache read is
    ``S + k``. A local layer counts ``(k + 1) min(S, w)`` attended tokens (exact once ``S >= w``;
    below the window it leaves out ``k (k + 1) / 2``) and ``min(S, w) + k`` cached ones.
    ``k = 0`` gives ``steps.step_coefficients``. The FLOPs are as their time at the GEMM
    peak (``analyses/split.py``): attention, the per-token terms and the triangle, times
    the attention ratio where a device runs it at another peak [FLOP, byte per token].
    """
    tp, heads, rows = x["tp"], x["heads"], k + 1
    lookup = physics.lookup_params(x["vocab_size"], x["hidden_size"], x["tied_embeddings"])
    linear = physics.decode_flops_per_sequence(x["active_params"], 0.0, 0.0, lookup) / tp
    attention = (
        x["_attention_on"] * physics.attention_flops_per_token(heads, x["attention_dim"], 1) / tp
    )
    per_token = physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], 1) / x["_shards"]
    layers, local = x["layers"], x["local_layers"]
    triangle = batch * attention * (layers - local) * k * rows / 2
    f0, f_full, f_loc = physics.context_coefficients(
        batch, 0.0, rows * linear, rows * attention, layers, local
    )
    q0, q_full, q_loc = physics.context_coefficients(
        batch, weights_read(x, batch * rows), 0.0, per_token, layers, local
    )
    nbytes = (q0 + batch * per_token * layers * k, q_full, q_loc)
    if not splits(x):
        return (f0 + triangle, f_full, f_loc), nbytes
    ratio = attention_ratio(x)
    return (f0 + ratio * triangle, ratio * f_full, ratio * f_loc), nbytes
