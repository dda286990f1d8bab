"""Hugging Face ``config.json`` -> ``Model``: pure parsing of a dict or a file on disk.

Nothing is fetched from the network. The architectures read are Llama (1/2/3/3.1/3.2),
Mistral, Mixtral, Qwen2/2.5, Qwen3, Qwen3-MoE, Gemma-2, Phi-3, Falcon, DeepSeek-V2/V3 and
gpt-oss (``SUPPORTED``). From the shapes in the file:

- layers, query heads, KV heads, ``head_dim`` (the explicit field first, else hidden/heads;
  ``qk_nope + qk_rope`` for MLA);
- the parameter count, every weight of the checkpoint: embeddings (counted once when tied),
  attention projections and their biases (Qwen2 QKV bias, gpt-oss and Falcon biases),
  QK-norms (Qwen3), attention sinks (gpt-oss), norms (RMSNorm ``hidden``, LayerNorm
  ``2 * hidden``), MLPs, routers (and their biases), routed and shared experts, MLA
  projections with the optional ``q_lora_rank``, DeepSeek's ``first_k_dense_replace`` dense
  layers; DeepSeek's multi-token-prediction layers (``num_nextn_predict_layers``) are not part
  of the model that decodes and are left out;
- active parameters: the same with ``k`` routed experts per MoE layer instead of ``E``;
- MLA ranks, sliding windows and how many layers keep only the window (``layer_types``, the
  Gemma-2 / gpt-oss alternation, Mistral/Mixtral/Phi-3 every layer, Qwen's
  ``use_sliding_window`` / ``max_window_layers``).

A field the formulas need and the file lacks raises ``ImportModelError`` naming the file and the
field. Defaults are used only where the architecture's own Hugging Face config class has one
that its checkpoints rely on (e.g. ``tie_word_embeddings`` of Gemma-2, ``multi_query`` of
Falcon); each is listed in ``_DEFAULTS``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.catalog.records import TABLE_FIELDS, Model
from sweeps.errors import ImportModelError

FAMILIES: Mapping[str, str] = {
    "llama": "Llama",
    "mistral": "Mistral",
    "mixtral": "Mixtral",
    "qwen2": "Qwen2",
    "qwen3": "Qwen3",
    "qwen3_moe": "Qwen3-MoE",
    "gemma2": "Gemma-2",
    "phi3": "Phi-3",
    "falcon": "Falcon",
    "deepseek_v2": "DeepSeek-V2",
    "deepseek_v3": "DeepSeek-V3",
    "gpt_oss": "gpt-oss",
}
"""``model_type`` -> family name, for every architecture this module reads."""

SUPPORTED = tuple(FAMILIES)
_MODEL_TYPE_ALIASES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}

# Defaults of the Hugging Face config classes that real config.json files omit and rely on.
_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "gemma2": {"tie_word_embeddings": True},
    "falcon": {
        "tie_word_embeddings": True,
        "multi_query": True,
        "parallel_attn": True,
        "new_decoder_architecture": False,
        "bias": False,
        "max_position_embeddings": 2048,
    },
}
# Old Falcon ("RefinedWeb") checkpoints spell some fields differently.
_ALIASES: Mapping[str, tuple[str, ...]] = {
    "hidden_size": ("n_embed",),
    "num_hidden_layers": ("n_layer",),
    "num_attention_heads": ("n_head",),
    "num_kv_heads": ("n_head_kv", "num_key_value_heads"),
}

NAME_PATTERN = re.compile(r"^[a-z0-9._-]+$")


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


class _Fields:
    """Typed access to a config dict; every complaint names the file and the field."""

    def __init__(self, data: Mapping[str, Any], source: str, model_type: str) -> None:
        self.data = data
        self.source = source
        self.model_type = model_type
        self.defaults = _DEFAULTS.get(model_type, {})

    def _raw(self, key: str) -> Any:
        for name in (key, *_ALIASES.get(key, ())):
            if self.data.get(name) is not None:
                return self.data[name]
        return self.defaults.get(key)

    def missing(self, key: str, why: str = "") -> ImportModelError:
        extra = f" ({why})" if why else ""
        msg = (
            f"{self.source}: field {key!r} is missing or null; it is needed for a "
            f"{self.model_type!r} model{extra}"
        )
        return ImportModelError(msg)

    def bad(self, key: str, value: Any, expected: str) -> ImportModelError:
        msg = f"{self.source}: field {key!r} = {value!r} is not {expected}"
        return ImportModelError(msg)

    def integer(
        self, key: str, default: int | None = None, *, minimum: int = 1, why: str = ""
    ) -> int:
        value = self._raw(key)
        if value is None:
            if default is None:
                raise self.missing(key, why)
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.bad(key, value, f"an integer >= {minimum}")
        return value

    def opt_int(self, key: str, *, minimum: int = 1) -> int | None:
        return None if self._raw(key) is None else self.integer(key, minimum=minimum)

    def flag(self, key: str, default: bool) -> bool:
        value = self._raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.bad(key, value, "true or false")
        return value

    def layer_types(self, layers: int) -> list[str] | None:
        value = self._raw("layer_types")
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key="layer_types", value=value, expected="a list of strings")
        if len(value) != layers:
            msg = (
                f"{self.source}: field 'layer_types' has {len(value)} entries, but "
                f"num_hidden_layers = {layers}"
            )
            raise ImportModelError(msg)
        return value


@dataclass(frozen=True, slots=True)
class _Shape:
    """Everything the parameter count and the Model record need, read once."""

    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    head_dim_explicit: bool
    vocab: int
    intermediate: int  # dense MLP width (0 where no layer is dense)
    tied: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: bool
    sinks: bool
    gated: bool
    norm_size: int  # parameters of one norm: hidden (RMSNorm) or 2 * hidden (LayerNorm)
    norms_per_layer: int
    # MLA (0 elsewhere)
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope: int
    qk_rope: int
    v_head_dim: int
    # MoE (experts = 1, moe_layers = 0 for dense)
    experts: int
    experts_per_token: int
    moe_intermediate: int
    shared_experts: int
    moe_layers: int
    router_bias: bool
    expert_bias: bool
    # windows
    sliding_window: int
    local_layers: int
    max_context: int
    notes: tuple[str, ...]


def _model_type(data: Mapping[str, Any], source: str) -> str:
    raw = data.get("model_type")
    if raw is None:
        msg = (
            f"{source}: field 'model_type' is missing; it names the architecture "
            f"(allowed: {', '.join(SUPPORTED)})"
        )
        raise ImportModelError(msg)
    model_type = _MODEL_TYPE_ALIASES.get(str(raw), str(raw))
    if model_type not in FAMILIES:
        msg = (
            f"{source}: field 'model_type' = {raw!r} is not a supported architecture; "
            f"allowed: {', '.join(SUPPORTED)}"
        )
        raise ImportModelError(msg)
    return model_type


def _local_layers(f: _Fields, t: str, layers: int, notes: list[str]) -> tuple[int, int]:
    """Sliding window and the number of layers that keep only it."""
    window = f.opt_int("sliding_window") or 0
    types = f.layer_types(layers)
    if types is not None:
        local = sum(kind == "sliding_attention" for kind in types)
        if local and not window:
            raise f.missing(key="sliding_window", why="layer_types lists sliding_attention layers")
        if local:
            notes.append(f"{local} of {layers} layers sliding ({window}) per layer_types")
        return (window, local) if local else (0, 0)
    if not window:
        return 0, 0
    if t in ("mistral", "mixtral", "phi3"):
        notes.append(f"sliding window {window} on every layer")
        return window, layers
    if t == "gemma2":  # even layers (0, 2, ...) are local in Gemma-2
        notes.append(f"alternating local ({window}) / global layers, local first")
        return window, (layers + 1) // 2
    if t == "gpt_oss":  # HF default layer_types: sliding, full, sliding, ...
        notes.append(f"alternating sliding ({window}) / full layers, sliding first")
        return window, (layers + 1) // 2
    if t in ("qwen2", "qwen3", "qwen3_moe"):
        if not f.flag("use_sliding_window", False):
            return 0, 0
        first = f.integer("max_window_layers", minimum=0)
        local = max(layers - first, 0)
        notes.append(f"sliding window {window} on layers {first} and up")
        return (window, local) if local else (0, 0)
    return 0, 0  # llama, falcon, deepseek: no window in these architectures


def _read_shape(data: Mapping[str, Any], source: str) -> _Shape:
    t = _model_type(data, source)
    f = _Fields(data, source, t)
    notes: list[str] = []
    hidden = f.integer("hidden_size")
    layers = f.integer("num_hidden_layers")
    heads = f.integer("num_attention_heads")
    vocab = f.integer("vocab_size")
    tied = f.flag("tie_word_embeddings", False)
    mla = t in ("deepseek_v2", "deepseek_v3")

    # attention -------------------------------------------------------------------------------
    if t == "falcon":
        if f.flag("new_decoder_architecture", False):
            kv_heads = f.integer("num_kv_heads", why="new_decoder_architecture")
        else:
            kv_heads = 1 if f.flag("multi_query", True) else heads
    else:
        kv_heads = f.integer("num_key_value_heads")
    explicit = f.opt_int("head_dim")
    q_lora = kv_lora = nope = rope = v_dim = 0
    if mla:
        q_lora = f.opt_int("q_lora_rank") or 0
        kv_lora = f.integer("kv_lora_rank")
        nope = f.integer("qk_nope_head_dim")
        rope = f.integer("qk_rope_head_dim")
        v_dim = f.integer("v_head_dim")
        head_dim = nope + rope
        notes.append(
            f"MLA: q_lora_rank={q_lora or 'none'}, kv_lora_rank={kv_lora}, "
            f"qk_nope={nope}, qk_rope={rope}, v_head_dim={v_dim}"
        )
    elif explicit is not None:
        head_dim = explicit
    else:
        if hidden % heads:
            msg = (
                f"{source}: field 'head_dim' is missing and hidden_size = {hidden} is not "
                f"a multiple of num_attention_heads = {heads}"
            )
            raise ImportModelError(msg)
        head_dim = hidden // heads
        notes.append(f"head_dim derived {hidden}/{heads}")
    if not mla and heads % kv_heads:
        msg = (
            f"{source}: field 'num_key_value_heads' = {kv_heads} does not divide "
            f"num_attention_heads = {heads}"
        )
        raise ImportModelError(msg)

    falcon_bias = t == "falcon" and f.flag("bias", False)
    qkv_bias = (
        t == "qwen2"
        or falcon_bias
        or (
            t in ("llama", "qwen3", "qwen3_moe", "gpt_oss", "deepseek_v2", "deepseek_v3")
            and f.flag("attention_bias", t == "gpt_oss")
        )
    )
    o_bias = falcon_bias or (
        t in ("llama", "qwen3", "qwen3_moe", "gpt_oss") and f.flag("attention_bias", t == "gpt_oss")
    )
    mlp_bias = falcon_bias or (t == "llama" and f.flag("mlp_bias", False))

    # norms -----------------------------------------------------------------------------------
    if t == "falcon":
        norm_size = 2 * hidden  # LayerNorm: weight and bias
        new_arch = f.flag("new_decoder_architecture", False)
        parallel = f.flag("parallel_attn", True)
        norms_per_layer = 2 if new_arch or not parallel else 1
    else:
        norm_size = hidden
        norms_per_layer = 4 if t == "gemma2" else 2

    # MLP / MoE -------------------------------------------------------------------------------
    experts, k, moe_width, shared, moe_layers = 1, 1, 0, 0, 0
    intermediate = 0
    if t == "falcon":
        intermediate = f.integer("ffn_hidden_size", 4 * hidden)
        if f._raw("ffn_hidden_size") is None:
            notes.append(f"FFN width 4*hidden = {intermediate} (Falcon default)")
    elif t in ("mixtral", "gpt_oss"):
        experts = f.integer("num_local_experts")
        k = (
            f.integer("num_experts_per_tok")
            if f._raw("num_experts_per_tok") is not None
            else (f.integer("experts_per_token"))
        )
        moe_width = f.integer("intermediate_size", why="the width of each expert")
        moe_layers = layers
    elif t == "qwen3_moe":
        experts = f.integer("num_experts")
        k = f.integer("num_experts_per_tok")
        moe_width = f.integer("moe_intermediate_size")
        step = f.integer("decoder_sparse_step", 1)
        dense_only = f._raw("mlp_only_layers") or []
        if not isinstance(dense_only, list):
            raise f.bad(key="mlp_only_layers", value=dense_only, expected="a list of layer indices")
        moe_layers = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
        if moe_layers < layers:
            intermediate = f.integer("intermediate_size", why="dense layers among MoE ones")
        else:  # kept for the record; no layer uses it
            intermediate = f.opt_int("intermediate_size") or 0
    elif mla:
        experts = f.integer("n_routed_experts")
        k = f.integer("num_experts_per_tok")
        moe_width = f.integer("moe_intermediate_size")
        shared = f.integer("n_shared_experts", 0, minimum=0)
        first_dense = f.integer("first_k_dense_replace", 0, minimum=0)
        freq = f.integer("moe_layer_freq", 1)
        moe_layers = sum(1 for i in range(first_dense, layers) if i % freq == 0)
        intermediate = f.integer("intermediate_size", why="the dense layers")
        notes.append(
            f"{layers - moe_layers} dense + {moe_layers} MoE layers "
            f"({experts} routed x {moe_width}, {shared} shared, top-{k})"
        )
        mtp = f.integer("num_nextn_predict_layers", 0, minimum=0)
        if mtp:
            notes.append(f"{mtp} MTP layer(s) excluded from params")
    else:
        intermediate = f.integer("intermediate_size")
    if experts < k:
        msg = f"{source}: {k} experts per token exceed the {experts} experts"
        raise ImportModelError(msg)
    router_bias = t == "gpt_oss" or (
        t == "deepseek_v3" or (t == "deepseek_v2" and f._raw("topk_method") == "noaux_tc")
    )

    window, local = _local_layers(f, t, layers, notes)
    max_context = f.integer("max_position_embeddings", 0, minimum=0)
    if tied:
        notes.append("tied embeddings (counted once)")
    return _Shape(
        model_type=t,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        head_dim_explicit=explicit is not None,
        vocab=vocab,
        intermediate=intermediate,
        tied=tied,
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        mlp_bias=mlp_bias,
        qk_norm=t in ("qwen3", "qwen3_moe"),
        sinks=t == "gpt_oss",
        gated=t != "falcon",
        norm_size=norm_size,
        norms_per_layer=norms_per_layer,
        q_lora_rank=q_lora,
        kv_lora_rank=kv_lora,
        qk_nope=nope,
        qk_rope=rope,
        v_head_dim=v_dim,
        experts=experts,
        experts_per_token=k,
        moe_intermediate=moe_width,
        shared_experts=shared,
        moe_layers=moe_layers,
        router_bias=router_bias,
        expert_bias=t == "gpt_oss",
        sliding_window=window,
        local_layers=local,
        max_context=max_context,
        notes=tuple(notes),
    )


def _mlp(hidden: int, width: int, gated: bool, bias: bool) -> int:
    """One MLP: up (and gate) ``hidden -> width``, down ``width -> hidden``, optional biases."""
    ups = 2 if gated else 1
    return (ups + 1) * hidden * width + (ups * width + hidden if bias else 0)


def _attention(s: _Shape) -> int:
    h = s.hidden
    if s.kv_lora_rank:  # MLA
        qk = s.qk_nope + s.qk_rope
        if s.q_lora_rank:
            q = h * s.q_lora_rank + s.q_lora_rank + s.q_lora_rank * s.heads * qk
        else:
            q = h * s.heads * qk
        kv = (
            h * (s.kv_lora_rank + s.qk_rope)
            + s.kv_lora_rank
            + s.kv_lora_rank * s.heads * (s.qk_nope + s.v_head_dim)
        )
        o = s.heads * s.v_head_dim * h
        bias = (s.heads * qk + s.kv_lora_rank + s.qk_rope + h) if s.qkv_bias else 0
        return q + kv + o + bias
    q_out, kv_out = s.heads * s.head_dim, s.kv_heads * s.head_dim
    weights = h * (q_out + 2 * kv_out) + q_out * h
    biases = (q_out + 2 * kv_out if s.qkv_bias else 0) + (h if s.o_bias else 0)
    return weights + biases + (2 * s.head_dim if s.qk_norm else 0) + (s.heads if s.sinks else 0)


def _count(s: _Shape) -> ParamCount:
    h = s.hidden
    per_layer = _attention(s) + s.norms_per_layer * s.norm_size
    dense_mlp = _mlp(h, s.intermediate, s.gated, s.mlp_bias)
    expert = _mlp(h, s.moe_intermediate, True, s.expert_bias)
    router = h * s.experts + (s.experts if s.router_bias else 0)
    shared = s.shared_experts * _mlp(h, s.moe_intermediate, True, False)
    dense_layers = s.layers - s.moe_layers
    body = s.layers * per_layer + dense_layers * dense_mlp + s.moe_layers * (router + shared)
    embedding = s.vocab * h
    outer = embedding * (1 if s.tied else 2) + s.norm_size  # embeddings + final norm
    total = outer + body + s.moe_layers * s.experts * expert
    active = outer + body + s.moe_layers * s.experts_per_token * expert
    return ParamCount(total=total, active=active, embedding=embedding)


def count_parameters(config: Mapping[str, Any], source: str = "<config>") -> ParamCount:
    """Parameters of the architecture a ``config.json`` dict describes, from its shapes.

    Parameters
    ----------
    config : The parsed ``config.json`` [mapping]
    source : Name of the file, for error messages

    Returns
    -------
    Total, active and input-embedding parameter counts [1]
    """
    return _count(_read_shape(config, source))


def default_name(config: Mapping[str, Any], path: str | Path | None = None) -> str:
    """A model id for a config: ``_name_or_path``'s last part, else the folder's name.

    Lower-cased and reduced to ``a-z 0-9 . _ -`` (the config files' name pattern).
    """
    raw = str(config.get("_name_or_path") or "").rstrip("/").split("/")[-1]
    if not raw and path is not None:
        p = Path(path)
        raw = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    name = re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-.")
    return name or "imported"


def model_from_config(
    config: Mapping[str, Any], name: str | None = None, source: str = "<config>"
) -> Model:
    """The ``Model`` record of a parsed Hugging Face ``config.json``.

    Parameters
    ----------
    config : The parsed ``config.json`` [mapping]
    name : Model id; ``default_name(config)`` when None
    source : Name of the file, for error messages and the record's ``source``

    Returns
    -------
    A frozen ``Model``: shapes, exact parameter counts [1], MoE, MLA and window facts
    """
    if not isinstance(config, Mapping):
        msg = f"{source}: a config.json must hold a JSON object, not {type(config).__name__}"
        raise ImportModelError(msg)
    s = _read_shape(config, source)
    counts = _count(s)
    if s.kv_lora_rank:
        attention = "mla"
    elif s.local_layers:
        attention = "gqa+sliding"
    else:
        attention = "mha" if s.kv_heads == s.heads else "mqa" if s.kv_heads == 1 else "gqa"
    model_id = name or default_name(config, source)
    if not NAME_PATTERN.match(model_id):
        msg = f"{source}: model id {model_id!r} is not valid; use only a-z, 0-9, '.', '_', '-'"
        raise ImportModelError(msg)
    return Model(
        id=model_id,
        params=float(counts.total),
        active_params=float(counts.active),
        layers=s.layers,
        heads=s.heads,
        kv_heads=s.kv_heads,
        head_dim=s.head_dim,
        hidden_size=s.hidden,
        intermediate_size=s.intermediate or s.moe_intermediate,
        vocab_size=s.vocab,
        attention=attention,
        kv_lora_rank=s.kv_lora_rank,
        qk_rope_head_dim=s.qk_rope,
        v_head_dim=s.v_head_dim,
        experts=s.experts,
        experts_per_token=s.experts_per_token,
        shared_experts=s.shared_experts,
        moe_intermediate_size=s.moe_intermediate if s.moe_layers else 0,
        sliding_window=s.sliding_window,
        local_layers=s.local_layers,
        max_context=s.max_context,
        tie_word_embeddings=s.tied,
        family=FAMILIES[s.model_type],
        hf_repo=str(config.get("_name_or_path") or ""),
        source=f"computed from config.json shapes ({source})",
        notes="; ".join(s.notes),
    )


def read_config(path: str | Path) -> dict[str, Any]:
    """Read a ``config.json`` file; ``ImportModelError`` naming the file if it is not one."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        msg = f"{path}: cannot read the file: {error.strerror or error}"
        raise ImportModelError(msg) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        msg = f"{path}: not a JSON file: {error}"
        raise ImportModelError(msg) from None
    if not isinstance(data, dict):
        msg = f"{path}: a config.json must hold a JSON object, not {type(data).__name__}"
        raise ImportModelError(msg)
    return data


def load_model(path: str | Path, name: str | None = None) -> Model:
    """Read the ``config.json`` at ``path`` into a ``Model`` (id: ``name`` or derived)."""
    config = read_config(path)
    return model_from_config(config, name or default_name(config, path), str(path))


def model_to_toml(model: Model, config_path: str | None = None) -> str:
    """A ``[models.<id>]`` TOML table that a sweep config accepts, fields from ``model``.

    Fields at their schema default (0, or 1 for experts) are left out. With ``config_path`` a
    comment shows the short form, ``config = "<path>"``.
    """
    lines = [f"[models.{model.id}]"]
    if config_path is not None:
        lines.append(f"# or, instead of the fields below: config = {json.dumps(config_path)}")
    defaults = {"experts": 1, "experts_per_token": 1}
    for key in TABLE_FIELDS[:-1]:  # source goes last, below
        value = getattr(model, key)
        if key in ("params", "active_params"):
            if key == "active_params" and value == model.params:
                continue
            lines.append(f"{key} = {value:.0f}")
        elif isinstance(value, str):
            lines.append(f"{key} = {json.dumps(value)}")
        elif value != defaults.get(key, 0) or key in ("layers", "heads", "kv_heads", "head_dim"):
            lines.append(f"{key} = {value}")
    lines.append(f"source = {json.dumps(model.source)}")
    return "\n".join(lines) + "\n"
