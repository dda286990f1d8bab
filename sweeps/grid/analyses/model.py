"""Model bytes: the weights a device holds and reads, and how tensor parallelism splits the cache.

No table of its own: its outputs are columns of the decode table. docs/cost-model.md section 2
(weights) and section 3 (MoE: the experts a batch touches, the weights a step reads).
"""

from __future__ import annotations

from typing import Any

from sweeps import physics
from sweeps.grid.analyses.base import Analysis, Inputs, Variable
from sweeps.grid.analyses.steps import weights_read


def _compute(x: Inputs) -> dict[str, Any]:
    tp, batch, wb = x["tp"], x["batch"], x["weight_bytes_per_param"]
    vocab = (x["vocab_size"], x["hidden_size"], x["tied_embeddings"])
    weights = physics.weight_bytes(x["params"], wb)
    return {
        "weight_bytes": weights / tp,
        "experts_touched": physics.expected_experts_touched(
            x["experts"], x["experts_per_token"], batch
        ),
        # the input embedding is a gather of B rows; the memory wall still holds every weight
        "weights_read_bytes": weights_read(x, batch),
        # a decode step reads _fixed + B (KV_seq + _gather): the shape W + B KV_seq that the
        # ceiling, knee and ridge batch take (cost-model section 3)
        "_fixed": physics.fixed_weights_read(weights, *vocab, wb) / tp,
        # what one token's step reads of them (a MoE's W(B) grows from it to _fixed)
        "_fixed_active": physics.fixed_weights_read(
            physics.weight_bytes(x["active_params"], wb), *vocab, wb
        )
        / tp,
        "_gather": physics.gather_bytes_per_sequence(*vocab, wb) / tp,
        "_shards": physics.kv_shards(tp, x["_cache_heads"]),
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
)
