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
from sweeps.engine.base import Inputs
from sweeps.engine.parallel_terms import parallel
from sweeps.engine.split import attention_ratio, splits
from sweeps.engine.steps import weights_read
from sweeps.physics._array import where


@dataclass(frozen=True)
class MtpHead:
    """One MTP head (the model's mean layer and the lm_head) on a rank of a ``tp x ep x pp``
    replica, for a pass of ``micro`` sequences (``_mtp``'s placement).

    total : Parameters of the head's layer, all experts [1]
    active : Its parameters one token runs [1]
    micro : Sequences of one micro-batch, ``B / pp`` [sequence]
    read : Weight bytes of the layer a pass of ``micro`` reads, per device [byte]
    attention : Attention FLOPs of one token at the context, ``0`` where attention is off [FLOP]
    logits : Parameters of the lm_head [1]
    logit_bytes : Bytes of the lm_head a device reads [byte]
    layer_cache : KV bytes one token holds in the head's layer, per device [byte]
    """

    total: Any
    active: Any
    micro: Any
    read: Any
    attention: Any
    logits: Any
    logit_bytes: Any
    layer_cache: Any


def mtp_head(x: Inputs, context: Any, batch: Any) -> MtpHead:
    """The ``MtpHead`` of the point's model at ``context`` for ``batch`` sequences; the grid's
    ``_mtp`` and the simulator's tables (``sweeps/studies/serving/simulate/speculation.py``)
    both build on it."""
    tp, wb, ep, dp, pp = x["tp"], x["weight_bytes_per_param"], x["_ep"], x["_dp"], x["_pp"]
    vocab, width, layers = x["vocab_size"], x["hidden_size"], x["layers"]
    embedding = physics.embedding_params(vocab, width, x["tied_embeddings"])
    total = physics.mtp_layer_params(x["params"], embedding, layers)
    active = physics.mtp_layer_params(x["active_params"], embedding, layers)
    shape = (total, active, x["experts"], x["experts_per_token"])
    micro = batch / pp
    read = physics.rank_share(
        physics.params_read(*shape, micro) * wb,
        physics.routed_params_read(*shape, micro) * wb,
        tp,
        ep,
        dp,
    )
    attention = x["_attention_on"] * physics.attention_flops_per_token(
        x["heads"], x["attention_dim"], context
    )
    logits = physics.logit_params(vocab, width)
    # the head's one layer lives whole on the last stage: a device holds pp times the share
    # of one of the target's layers that ``_shards`` gives
    layer_cache = physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], 1) / (
        x["_shards"] / pp
    )
    logit_bytes = logits * wb / physics.dense_shards(tp, ep, dp)
    return MtpHead(total, active, micro, read, attention, logits, logit_bytes, layer_cache)


def _mtp(x: Inputs, k: Any, context: Any, batch: Any, link: bool) -> tuple[Any, Any, Any]:
    """``k`` passes of one MTP head at ``context`` for ``batch`` sequences: time [s], weights
    held [byte], one sequence's head cache at ``context + k`` [byte], per device.

    Per rank of a ``tp x ep x pp`` replica (``physics.parallel``): the head sits whole on the
    last stage, which drafts its ``pp`` micro-batches of ``B / pp`` in turn; its routed
    experts are split over the ``ep`` ranks like the target's, its attention and the lm_head
    over the ``d`` devices of an attention copy, its FLOPs over the stage's ``tp ep`` devices,
    and with ``link`` a pass's all-to-all (one MoE layer) bounds it with compute and memory (the
    speculative table's; the serving tables leave every link out). At ``ep = pp =
    1`` every factor is 1: a ``tp`` replica's head, bit for bit."""
    head = mtp_head(x, context, batch)
    micro = head.micro
    flops = physics.mtp_pass_flops(micro, head.active, head.logits, head.attention)
    flops = flops / x["_stage_devices"]
    cache = head.layer_cache * context
    nbytes = physics.mtp_pass_bytes(head.read, head.logit_bytes, micro, cache)
    roof = physics.roofline_time(flops, nbytes, x["_peak"], x["_bandwidth"])
    if link and parallel(x):  # the pass's tokens cross the expert all-to-all of its one MoE layer
        roof = physics.step_bound(roof, physics.known(_head_link(x, micro)))
    time = k * roof * x["_pp"]
    shape = (head.total, head.active, x["experts"], x["experts_per_token"])
    wb = x["weight_bytes_per_param"]
    held = physics.rank_share(
        head.total * wb, physics.routed_params(*shape) * wb, x["tp"], x["_ep"], x["_dp"]
    )
    return time, held, head.layer_cache * (context + k)


def _head_link(x: Inputs, tokens: Any) -> Any:
    """The all-to-all of one MTP pass of ``tokens`` over the scale-up link [s]: one MoE layer
    (none for a dense model), ``physics.all_to_all_bytes``; NaN where the link is unknown."""
    moe = where(x["_moe_layers"] > 0, 1.0, 0.0)
    nbytes = physics.all_to_all_bytes(
        tokens, x["experts_per_token"], x["hidden_size"], x.options.activation_bytes, moe,
        x["tp"], x["_ep"],
    )  # fmt: skip
    return physics.link_time(nbytes, x["_scale_up"])


def _draft_model(x: Inputs, k: Any, context: Any, exact: bool, batch: Any) -> tuple[Any, Any, Any]:
    """``k`` decode steps of the draft model from ``context`` for ``batch`` sequences: time
    [s] (summed exactly over integer contexts when ``exact``, else ``k`` steps at the mean
    one), weights held [byte], one sequence's cache at ``context + k`` [byte], per device.

    Per rank of a ``tp x ep x pp`` replica: a draft model is dense and placed like the
    attention, a copy on each of the ``r`` attention copies (``physics.attention_replicas``),
    split over its ``d`` devices (``physics.dense_shards``), drafting its own ``B / r`` of each
    micro-batch; it sits whole on the last stage, which drafts the ``pp`` micro-batches of
    ``B / pp`` in turn. At ``ep = pp = 1`` (``r = 1``, ``d = tp``): a ``tp`` replica's, bit for
    bit."""
    wb, kb, pp = x["weight_bytes_per_param"], x["kv_bytes"], x["_pp"]
    tp = physics.dense_shards(x["tp"], x["_ep"], x["_dp"])
    copies = physics.attention_replicas(x["_ep"], x["_dp"])
    own = batch / pp / copies
    vocab, width, tied = x["_draft_vocab_size"], x["_draft_hidden_size"], x["_draft_tied"]
    layers, local, window = x["_draft_layers"], x["_draft_local_layers"], x["_draft_window"]
    params, active = x["_draft_params"], x["_draft_active_params"]
    read = physics.params_read(
        params, active, x["_draft_experts"], x["_draft_experts_per_token"], own
    )
    read = physics.weights_read_with_gather(read * wb, vocab, width, tied, wb, own) / tp
    lookup = physics.lookup_params(vocab, width, tied)
    linear = physics.decode_flops_per_sequence(active, 0.0, 0.0, lookup) / tp
    per_pair = x["_attention_on"] * physics.attention_flops_per_token(
        x["_draft_heads"], x["_draft_attention_dim"], 1
    )
    shards = physics.kv_shards(tp, x["_draft_cache_heads"])
    per_token = physics.kv_bytes_per_sequence(x["_draft_kv_elements"], kb, 1) / shards
    flops = physics.context_coefficients(own, 0.0, linear, per_pair / tp, layers, local)
    nbytes = physics.context_coefficients(own, read, 0.0, per_token, layers, local)
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
    # a device holds the caches of its copy's own sequences: per sequence of the replica, 1/r
    return time * pp, params * wb / tp, per_token * held / copies


def draft(
    x: Inputs, k: Any, context: Any, exact: bool = False, batch: Any = None, link: bool = False
) -> tuple[Any, Any, Any]:
    """The draft's time to propose ``k`` tokens from ``context`` for ``batch`` sequences (the
    point's batch where not given) [s], the weights it holds [byte] and one sequence's cache
    [byte], per device, by kind (``ngram``: nothing); with ``link`` an MTP pass's expert
    all-to-all is in its bound (the parallel axes' link, as the decode table's step)."""
    kind = x["_draft_kind"]
    batch = x["batch"] if batch is None else batch
    mtp, model = _mtp(x, k, context, batch, link), _draft_model(x, k, context, exact, batch)
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
    tp, heads, rows = x["_flop_devices"], x["heads"], k + 1
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
