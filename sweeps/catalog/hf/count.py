"""Parameter counts from a ``Shape``: every weight of the checkpoint, counted from the shapes.

Embeddings (once when tied), attention projections and their biases, QK-norms, attention
sinks, norms, MLPs, routers (and their biases), routed and shared experts, and MLA
projections with the optional ``q_lora_rank``. Active parameters count ``k`` routed experts
per MoE layer instead of all ``E``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweeps.catalog.hf.shape import Shape


@dataclass(frozen=True, slots=True)
class ParamCount:
    """Parameters of an architecture, counted from its shapes.

    total : Every weight, all experts, embeddings once if tied [1]
    active : Weights one token uses: shared parts plus ``k`` routed experts per MoE layer [1]
    embedding : Input-embedding weights (included in both figures) [1]
    """

    total: int
    active: int
    embedding: int


def mlp_params(hidden: int, width: int, gated: bool, bias: bool) -> int:
    """One MLP [1]: up (and gate) ``hidden -> width``, down ``width -> hidden``, biases."""
    ups = 2 if gated else 1
    return (ups + 1) * hidden * width + (ups * width + hidden if bias else 0)


def _mla_attention(s: Shape) -> int:
    h, m = s.hidden, s.mla
    qk = m.qk_nope + m.qk_rope
    if m.q_lora_rank:
        q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * s.heads * qk
    else:
        q = h * s.heads * qk
    kv = (
        h * (m.kv_lora_rank + m.qk_rope)
        + m.kv_lora_rank
        + m.kv_lora_rank * s.heads * (m.qk_nope + m.v_head_dim)
    )
    o = s.heads * m.v_head_dim * h
    bias = (s.heads * qk + m.kv_lora_rank + m.qk_rope + h) if s.qkv_bias else 0
    return q + kv + o + bias


def attention_params(s: Shape) -> int:
    """One layer's attention [1]: projections, biases, QK-norms and sinks."""
    if s.mla.kv_lora_rank:
        return _mla_attention(s)
    h = s.hidden
    q_out, kv_out = s.heads * s.head_dim, s.kv_heads * s.head_dim
    weights = h * (q_out + 2 * kv_out) + q_out * h
    biases = (q_out + 2 * kv_out if s.qkv_bias else 0) + (h if s.o_bias else 0)
    qk_norm = 2 * s.head_dim if s.family.qk_norm else 0
    return weights + biases + qk_norm + (s.heads if s.family.sinks else 0)


def count(s: Shape) -> ParamCount:
    """Total, active and input-embedding parameters of a shape [1]."""
    h, mlp = s.hidden, s.mlp
    per_layer = attention_params(s) + s.norms_per_layer * s.norm_size
    dense_mlp = mlp_params(h, mlp.intermediate, mlp.gated, s.mlp_bias)
    expert = mlp_params(h, mlp.moe_intermediate, True, mlp.expert_bias)
    router = h * mlp.experts + (mlp.experts if s.router_bias else 0)
    shared = mlp.shared_experts * mlp_params(h, mlp.moe_intermediate, True, False)
    dense_layers = s.layers - mlp.moe_layers
    body = s.layers * per_layer + dense_layers * dense_mlp + mlp.moe_layers * (router + shared)
    embedding = s.vocab * h
    outer = embedding * (1 if s.tied else 2) + s.norm_size  # embeddings + final norm
    total = outer + body + mlp.moe_layers * mlp.experts * expert
    active = outer + body + mlp.moe_layers * mlp.experts_per_token * expert
    return ParamCount(total=total, active=active, embedding=embedding)
