"""Model bytes: the weights a device holds and reads, and how tensor parallelism splits the cache.

No table of its own: its outputs are columns of the decode table. docs/cost-model.md section 2
(weights) and section 3 (MoE: the experts a batch touches, the weights a step reads).
"""

from __future__ import annotations

from typing import Any

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.steps import weights_read


def _compute(x: Inputs) -> dict[str, Any]:
    tp, batch, wb = x["tp"], x["batch"], x["weight_bytes_per_param"]
    ep, dp, pp = x["_ep"], x["_dp"], x["_pp"]
    vocab = (x["vocab_size"], x["hidden_size"], x["tied_embeddings"])
    weights = physics.weight_bytes(x["params"], wb)
    routed = (
        physics.routed_params(x["params"], x["active_params"], x["experts"], x["experts_per_token"])
        * wb
    )
    devices = physics.replica_devices(tp, ep, pp)
    return {
        # a device holds its stage's 1/pp: the routed experts 1/(tp ep), the rest 1/d
        "weight_bytes": physics.rank_share(weights, routed, tp, ep, dp) / pp,
        "experts_touched": physics.expected_experts_touched(
            x["experts"], x["experts_per_token"], batch
        ),
        # the input embedding is a gather of B rows; the memory wall still holds every weight
        "weights_read_bytes": weights_read(x, batch),
        # a decode step reads _fixed + B (KV_seq + _gather): the shape W + B KV_seq that the
        # ceiling, knee and ridge batch take (cost-model section 3); a device's stage reads
        # its weights once for each of the pp micro-batches of a step
        "_fixed": physics.rank_share(
            physics.fixed_weights_read(weights, *vocab, wb), routed, tp, ep, dp
        ),
        # what one token's step reads of them (a MoE's W(B) grows from it to _fixed)
        "_fixed_active": physics.rank_share(
            physics.fixed_weights_read(physics.weight_bytes(x["active_params"], wb), *vocab, wb),
            physics.routed_params_read(
                x["params"], x["active_params"], x["experts"], x["experts_per_token"], 1
            )
            * wb,
            tp,
            ep,
            dp,
        ),
        "_gather": physics.gather_bytes_per_sequence(*vocab, wb) / devices,
        # a replica's sequence: its cache split over the heads of its attention's devices,
        # held by one of r attention copies, 1/pp of its layers on a device
        "_shards": physics.kv_shards(physics.dense_shards(tp, ep, dp), x["_cache_heads"])
        * physics.attention_replicas(ep, dp)
        * pp,
        "_devices": devices,
        # a step's FLOPs of the replica's B sequences spread over its devices (decode), a
        # prefill's over one stage's (every stage runs in turn: the path's time)
        "_flop_devices": devices,
        "_stage_devices": tp * ep,
    }


MODEL = Analysis(
    name="model",
    dims=("model", "tp", "batch", "kv_heads", "weight_dtype"),
    variables=(
        Variable("weight_bytes", "byte", "Weight bytes held per device (all experts)"),
        Variable(
            "experts_touched", "1", "Expected distinct experts per MoE layer in a decode step"
        ),
        Variable(
            "weights_read_bytes",
            "byte",
            "Weight bytes one decode step reads per device (the input embedding: B rows)",
        ),
    ),
    compute=_compute,
    extra_dims=("ep", "dp_attention", "pp"),
)
