"""One ``Family`` per Hugging Face ``model_type``: every rule the importer applies to it.

A family declares its defaults, how its KV heads are read, which projections carry biases,
its norms, its MLP (dense or routed experts, with the fields that hold them), router biases,
which layers keep a sliding window, and its flags (QK-norm, attention sinks, MLA). Adding an
architecture is one ``Family(...)`` entry in ``FAMILIES``, built from the rules of
``sweeps.catalog.hf.rules``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sweeps.catalog.hf.fields import Fields
from sweeps.catalog.hf.rules import (
    ATTENTION_BIAS,
    DENSE,
    KV_HEADS,
    RMS_NORMS,
    Dense,
    Experts,
    FalconKvHeads,
    KvHeadsField,
    Norms,
    Rule,
    Window,
    alternating,
    always,
    deepseek_moe_layers,
    falcon_norms,
    flag,
    never,
    no_window,
    qwen_moe_layers,
    qwen_window,
    rms_norms,
    window_every_layer,
)
from sweeps.errors import ImportModelError


@dataclass(frozen=True, slots=True)
class Family:
    """Every rule of one ``model_type``.

    name : Family name on the record (``Llama``, ``Qwen3-MoE``, ...)
    architecture : The Hugging Face class in ``architectures`` (``LlamaForCausalLM``)
    defaults : Values of the family's config class that real files omit and rely on
    kv_heads : How the KV heads are read
    mla : Multi-head latent attention (DeepSeek): ranks read, ``head_dim = nope + rope``
    head_dim_in_file : The family's files always carry ``head_dim``
    qkv_bias, o_bias, mlp_bias, router_bias : Which weights carry biases
    norms : Norm size and count per layer
    mlp : The dense MLP or the routed experts, with the fields that hold them
    window : Which layers keep the sliding window
    qk_norm : Per-head RMSNorm on queries and keys (Qwen3)
    sinks : One learned attention sink per head (gpt-oss)
    """

    name: str
    architecture: str
    mlp: Dense | Experts = DENSE
    defaults: Mapping[str, Any] = field(default_factory=dict)
    kv_heads: KvHeadsField | FalconKvHeads = KV_HEADS
    mla: bool = False
    head_dim_in_file: bool = False
    qkv_bias: Rule = never
    o_bias: Rule = never
    mlp_bias: Rule = never
    router_bias: Rule = never
    norms: Norms = RMS_NORMS
    window: Window = no_window
    qk_norm: bool = False
    sinks: bool = False


def _deepseek(name: str, architecture: str, router_bias: Rule) -> Family:
    return Family(
        name,
        architecture,
        Experts(
            "n_routed_experts",
            "moe_intermediate_size",
            deepseek_moe_layers,
            shared_key="n_shared_experts",
            dense_required=True,
        ),
        mla=True,
        qkv_bias=ATTENTION_BIAS,
        router_bias=router_bias,
    )


def _noaux(f: Fields) -> bool:
    """DeepSeek-V2 with ``topk_method = "noaux_tc"``: a per-expert score correction bias."""
    return f.value("topk_method") == "noaux_tc"


FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        "llama": Family(
            "Llama",
            "LlamaForCausalLM",
            qkv_bias=ATTENTION_BIAS,
            o_bias=ATTENTION_BIAS,
            mlp_bias=flag("mlp_bias"),
        ),
        "mistral": Family("Mistral", "MistralForCausalLM", window=window_every_layer),
        "mixtral": Family(
            "Mixtral",
            "MixtralForCausalLM",
            Experts("num_local_experts", "intermediate_size"),
            window=window_every_layer,
        ),
        "qwen2": Family("Qwen2", "Qwen2ForCausalLM", qkv_bias=always, window=qwen_window),
        "qwen3": Family(
            "Qwen3",
            "Qwen3ForCausalLM",
            head_dim_in_file=True,
            qkv_bias=ATTENTION_BIAS,
            o_bias=ATTENTION_BIAS,
            window=qwen_window,
            qk_norm=True,
        ),
        "qwen3_moe": Family(
            "Qwen3-MoE",
            "Qwen3MoeForCausalLM",
            Experts("num_experts", "moe_intermediate_size", qwen_moe_layers),
            head_dim_in_file=True,
            qkv_bias=ATTENTION_BIAS,
            o_bias=ATTENTION_BIAS,
            window=qwen_window,
            qk_norm=True,
        ),
        "gemma2": Family(
            "Gemma-2",
            "Gemma2ForCausalLM",
            defaults={"tie_word_embeddings": True},
            head_dim_in_file=True,
            norms=rms_norms(4),  # pre and post norms around attention and MLP
            window=alternating("local", "global"),
        ),
        "phi3": Family("Phi-3", "Phi3ForCausalLM", window=window_every_layer),
        "falcon": Family(
            "Falcon",
            "FalconForCausalLM",
            Dense("ffn_hidden_size", default_ratio=4, gated=False),
            defaults={
                "tie_word_embeddings": True,
                "multi_query": True,
                "parallel_attn": True,
                "new_decoder_architecture": False,
                "bias": False,
                "max_position_embeddings": 2048,
            },
            kv_heads=FalconKvHeads(),
            qkv_bias=flag("bias"),
            o_bias=flag("bias"),
            mlp_bias=flag("bias"),
            norms=falcon_norms,
        ),
        "deepseek_v2": _deepseek("DeepSeek-V2", "DeepseekV2ForCausalLM", _noaux),
        "deepseek_v3": _deepseek("DeepSeek-V3", "DeepseekV3ForCausalLM", always),
        "gpt_oss": Family(
            "gpt-oss",
            "GptOssForCausalLM",
            Experts("num_local_experts", "intermediate_size", bias=True),
            defaults={"attention_bias": True},
            head_dim_in_file=True,
            qkv_bias=ATTENTION_BIAS,
            o_bias=ATTENTION_BIAS,
            router_bias=always,
            window=alternating("sliding", "full"),
            sinks=True,
        ),
    }
)
"""``model_type`` -> its ``Family``, for every architecture the importer reads."""

MODEL_TYPE_ALIASES: Mapping[str, str] = MappingProxyType(
    {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}
)
"""Older ``model_type`` spellings and the family they name."""


def supported_families() -> list[str]:
    """The supported ``model_type``s with their family names, e.g. ``"llama (Llama)"``, in
    declaration order; aliases follow the type they name (``falcon (Falcon; also RefinedWeb,
    RefinedWebModel)``). docs/architectures.md and docstrings list these."""
    out = []
    for model_type, family in FAMILIES.items():
        also = [alias for alias, target in MODEL_TYPE_ALIASES.items() if target == model_type]
        extra = f"; also {', '.join(also)}" if also else ""
        out.append(f"{model_type} ({family.name}{extra})")
    return out


def family_of(data: Mapping[str, Any], source: str) -> tuple[str, Family]:
    """The ``model_type`` of a config dict and its ``Family``; an error naming the file and
    the allowed types where it is missing or not supported."""
    allowed = ", ".join(FAMILIES)
    raw = data.get("model_type")
    if raw is None:
        msg = (
            f"{source}: field 'model_type' is missing; it names the architecture "
            f"(allowed: {allowed})"
        )
        raise ImportModelError(msg)
    model_type = MODEL_TYPE_ALIASES.get(str(raw), str(raw))
    if model_type not in FAMILIES:
        msg = (
            f"{source}: field 'model_type' = {raw!r} is not a supported architecture; "
            f"allowed: {allowed}"
        )
        raise ImportModelError(msg)
    return model_type, FAMILIES[model_type]
