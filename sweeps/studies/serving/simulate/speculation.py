"""Speculative decoding and prefix hits in the simulator (docs/speculative.md, serving section).

With speculation a decode slot runs a verify step of ``k + 1`` rows from its context ``S``
(rows ``S .. S + k``, the cache read once up to ``S + k``, ``k + 1`` tokens of the step's
budget and weight reads), then advances by the tokens it accepted plus one, drawn per step
from the acceptance ``a`` (``X = j`` with probability ``a^(j-1) (1 - a)``, ``k + 1`` with
``a^k``) and cut to what the request still needs. The draft runs before it: ``mtp`` ``k``
passes of one head at ``S``, a draft model ``k`` decode steps of its own at ``S .. S + k - 1``,
each a roofline of its own over the step's slots; ``ngram`` nothing. With a prefix hit rate
``h`` a prompt of ``I`` tokens starts with ``min(floor(h I), I - 1)`` tokens cached, so its
prefill computes the rest (at least one token: the simulator has no prompt without a step),
reads the prefix from HBM, and reloads it from its tier, overlapped with the step's compute:
``max(roofline, reload)``. Every table is the grid's own function (``analyses/drafts.py``,
``analyses/speculative.py``) evaluated on an integer range; ``k = 0`` and ``h = 0`` are the
plain simulator exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.drafts import mtp_head
from sweeps.engine.steps import prefix_hit
from sweeps.studies.speculative.speculative import verify_terms


@dataclass(frozen=True)
class Techniques:
    """Speculation and prefix hits of one replica, as tables the compiled loop indexes.

    rows : Rows a decode slot verifies a step, ``k + 1`` (1: plain decode) [token]
    acceptance : Per-token acceptance probability, ``a`` [1]
    verify_flops : FLOPs of one slot's verify step from context ``S`` (index ``S``), attention
        as its time at the GEMM peak [FLOP]
    verify_cache : KV bytes one slot's verify step touches from ``S`` (index ``S``) [byte]
    draft_passes : Draft passes a step, ``k`` (0: ``ngram``, or no speculation) [1]
    draft_shift : Context step from one draft pass to the next (1: a draft model; 0: ``mtp``)
    draft_flops : FLOPs of one slot's draft pass at context ``S`` [FLOP]
    draft_cache : Cache bytes one slot's draft pass reads at context ``S`` [byte]
    draft_weights : Weight bytes a draft pass of ``n`` slots reads (index ``n``) [byte]
    hit_rate : Share of each prompt whose cache is held, ``h`` [1]
    tier_bandwidth : Bandwidth the cached prefix is reloaded over (``inf``: HBM) [byte/s]
    """

    rows: int
    acceptance: float
    verify_flops: np.ndarray
    verify_cache: np.ndarray
    draft_passes: int
    draft_shift: int
    draft_flops: np.ndarray
    draft_cache: np.ndarray
    draft_weights: np.ndarray
    hit_rate: float
    tier_bandwidth: float

    def draws(self, outputs: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Tokens each verify step yields, ``O - 1`` draws a request (enough: each yields at
        least one), flat, and where each request's draws start [token, 1]."""
        counts = np.maximum(outputs - 1, 0)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        if self.rows == 1:
            return np.zeros(0, np.int64), starts
        total = int(counts.sum())
        if self.acceptance >= 1:
            return np.full(total, self.rows, np.int64), starts
        rng = np.random.default_rng([seed, 2])
        drawn = rng.geometric(1 - self.acceptance, total)
        return np.minimum(drawn, self.rows).astype(np.int64), starts

    def cached(self, prompts: np.ndarray) -> np.ndarray:
        """Cached prompt tokens of each request, ``min(floor(h I), I - 1)`` [token]."""
        held = np.floor(self.hit_rate * prompts).astype(np.int64)
        return np.clip(held, 0, np.maximum(prompts - 1, 0))


def _value(x: Any, key: str, default: float) -> float:
    """An input of the point, or ``default`` where the sweep lacks its axis."""
    return float(x[key]) if key in x.values else default


def _mtp(x: Any, context: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, ...]:
    """One MTP head pass of one slot at ``context``: FLOPs, cache bytes; and the weight bytes
    of a pass of ``slots`` slots (``analyses/drafts.py`` ``_mtp``, per rank of a ``tp x ep x
    pp`` replica: the last stage's ``pp`` micro-batches of ``slots / pp`` read the head's
    weights ``pp`` times) [FLOP, byte, byte]."""
    head = mtp_head(x, context, slots)
    flops = physics.mtp_pass_flops(1, head.active, head.logits, head.attention)
    weights = physics.mtp_pass_bytes(head.read, head.logit_bytes, 0.0, 0.0) * x["_pp"]
    return flops / x["_stage_devices"], head.layer_cache * context, weights


def _draft_model(x: Any, context: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, ...]:
    """One decode step of the draft model for one slot at ``context``: FLOPs, cache bytes; and
    the weight bytes of a step of ``slots`` slots (``analyses/drafts.py``, per rank: a copy on
    each of the ``r`` attention copies over ``d`` devices, the last stage's ``pp``
    micro-batches in turn) [FLOP, byte, byte]."""
    wb, kb, pp = x["weight_bytes_per_param"], x["kv_bytes"], x["_pp"]
    tp = physics.dense_shards(x["tp"], x["_ep"], x["_dp"])
    copies = physics.attention_replicas(x["_ep"], x["_dp"])
    own = slots / pp / copies
    vocab, width, tied = x["_draft_vocab_size"], x["_draft_hidden_size"], x["_draft_tied"]
    read = physics.params_read(
        x["_draft_params"], x["_draft_active_params"], x["_draft_experts"],
        x["_draft_experts_per_token"], own,
    )  # fmt: skip
    weights = physics.weights_read_with_gather(read * wb, vocab, width, tied, wb, own) / tp * pp
    lookup = physics.lookup_params(vocab, width, tied)
    # one slot's share of a copy's step: FLOPs and cache over the copy's devices, 1/r of them
    linear = physics.decode_flops_per_sequence(x["_draft_active_params"], 0.0, 0.0, lookup) / tp
    per_pair = x["_attention_on"] * physics.attention_flops_per_token(
        x["_draft_heads"], x["_draft_attention_dim"], 1
    )
    shards = physics.kv_shards(tp, x["_draft_cache_heads"])
    per_token = physics.kv_bytes_per_sequence(x["_draft_kv_elements"], kb, 1) / shards
    layer_tokens = physics.kv_cached_layer_tokens(
        context, x["_draft_layers"], x["_draft_local_layers"], x["_draft_window"]
    )
    flops = (linear + per_pair / tp * layer_tokens) / copies
    return flops, per_token * layer_tokens / copies, weights


def techniques(x: Any, max_context: int, max_slots: int) -> Techniques:
    """The ``Techniques`` of the grid's inputs ``x`` (``point_inputs``) up to a first-row
    context of ``max_context`` and ``max_slots`` slots; plain decode and no hit where the
    sweep lacks the speculative or the prefix axes."""
    k = int(_value(x, "spec_tokens", 0.0))
    alpha = _value(x, "spec_acceptance", 0.0)
    context = np.arange(max_context + 1, dtype=np.float64)
    linear, attention, cache = verify_terms(x, context, k)
    # attention at its own peak (engine/split.py): its FLOPs as their time at the GEMM
    # peak, as the decode tables of ``costs`` take them
    ratio = float(x["_attention_ratio"])
    # a step's FLOPs over the replica's devices (tp x ep x pp), as the grid's verify step
    verify = physics.verify_flops_per_sequence(k, linear, ratio * attention) / x["_flop_devices"]
    kind = int(_value(x, "_draft_kind", 0.0)) if k > 0 else 0
    slots = np.arange(max_slots + 1, dtype=np.float64)
    reach = np.arange(max_context + k + 1, dtype=np.float64)
    if kind == 1:
        draft = _mtp(x, reach, slots)
    elif kind == 2:
        draft = _draft_model(x, reach, slots)
    else:
        draft = (np.zeros(1), np.zeros(1), np.zeros(1))
    tier = _value(x, "_tier_bandwidth", math.inf)
    # the axis's, or the trace's at this point's cache (prefix_hit_rate = "trace")
    hit = float(prefix_hit(x)) if "prefix_hit_rate" in x.values else 0.0

    def table(values: Any) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(values, np.shape(values)), dtype=np.float64)

    return Techniques(
        rows=k + 1,
        acceptance=alpha,
        verify_flops=table(verify),
        verify_cache=table(cache),
        draft_passes=k if kind in (1, 2) else 0,
        draft_shift=1 if kind == 2 else 0,
        draft_flops=table(draft[0]),
        draft_cache=table(draft[1]),
        draft_weights=table(draft[2]),
        hit_rate=hit,
        tier_bandwidth=tier if math.isfinite(tier) and hit > 0 else math.inf,
    )
