"""A config dict -> ``Shape``: every figure the parameter count and the record need, read once
through the rules of the config's ``Family``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sweeps.catalog.hf.families import Family, family_of
from sweeps.catalog.hf.fields import Fields
from sweeps.catalog.hf.rules import Mlp
from sweeps.errors import ImportModelError


@dataclass(frozen=True, slots=True)
class Mla:
    """Multi-head latent attention ranks [1] (all 0 for other attention)."""

    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope: int = 0
    qk_rope: int = 0
    v_head_dim: int = 0


@dataclass(frozen=True, slots=True)
class Shape:
    """Everything the parameter count and the ``Model`` record need, read once."""

    model_type: str
    family: Family
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    norm_size: int  # parameters of one norm: hidden (RMSNorm) or 2 * hidden (LayerNorm)
    norms_per_layer: int
    mla: Mla
    mlp: Mlp
    router_bias: bool
    sliding_window: int
    local_layers: int
    max_context: int
    notes: tuple[str, ...]


def _mla(f: Fields, notes: list[str]) -> Mla:
    mla = Mla(
        q_lora_rank=f.opt_int("q_lora_rank") or 0,
        kv_lora_rank=f.integer("kv_lora_rank"),
        qk_nope=f.integer("qk_nope_head_dim"),
        qk_rope=f.integer("qk_rope_head_dim"),
        v_head_dim=f.integer("v_head_dim"),
    )
    notes.append(
        f"MLA: q_lora_rank={mla.q_lora_rank or 'none'}, kv_lora_rank={mla.kv_lora_rank}, "
        f"qk_nope={mla.qk_nope}, qk_rope={mla.qk_rope}, v_head_dim={mla.v_head_dim}"
    )
    return mla


def _head_dim(f: Fields, hidden: int, heads: int, notes: list[str]) -> int:
    """The explicit ``head_dim`` first, else ``hidden / heads`` (which must divide)."""
    explicit = f.opt_int("head_dim")
    if explicit is not None:
        return explicit
    if hidden % heads:
        msg = (
            f"{f.source}: field 'head_dim' is missing and hidden_size = {hidden} is not "
            f"a multiple of num_attention_heads = {heads}"
        )
        raise ImportModelError(msg)
    notes.append(f"head_dim derived {hidden}/{heads}")
    return hidden // heads


def _window(f: Fields, family: Family, layers: int, notes: list[str]) -> tuple[int, int]:
    """Sliding window [token] and the number of layers that keep only it: ``layer_types``
    when the file has it, else the family's rule."""
    window = f.opt_int("sliding_window") or 0
    types = f.layer_types(layers)
    if types is not None:
        local = sum(kind == "sliding_attention" for kind in types)
        if local and not window:
            raise f.missing(key="sliding_window", why="layer_types lists sliding_attention layers")
        if local:
            notes.append(f"{local} of {layers} layers sliding ({window}) per layer_types")
    else:
        local = family.window(f, window, layers, notes) if window else 0
    return (window, local) if local else (0, 0)


def read_shape(data: Mapping[str, Any], source: str) -> Shape:
    """The ``Shape`` of a parsed ``config.json``; ``ImportModelError`` naming the file and the
    field for anything missing or malformed."""
    model_type, family = family_of(data, source)
    f = Fields(data, source, model_type, family.defaults)
    notes: list[str] = []
    hidden = f.integer("hidden_size")
    layers = f.integer("num_hidden_layers")
    heads = f.integer("num_attention_heads")
    vocab = f.integer("vocab_size")
    tied = f.flag("tie_word_embeddings", False)
    kv_heads = family.kv_heads.read(f, heads)
    if family.mla:
        mla = _mla(f, notes)
        head_dim = mla.qk_nope + mla.qk_rope
    else:
        mla = Mla()
        head_dim = _head_dim(f, hidden, heads, notes)
        if heads % kv_heads:
            msg = (
                f"{source}: field 'num_key_value_heads' = {kv_heads} does not divide "
                f"num_attention_heads = {heads}"
            )
            raise ImportModelError(msg)
    norm_size, norms_per_layer = family.norms(f, hidden)
    mlp = family.mlp.read(f, hidden, layers, notes)
    window, local = _window(f, family, layers, notes)
    max_context = f.integer("max_position_embeddings", 0, minimum=0)
    if tied:
        notes.append("tied embeddings (counted once)")
    return Shape(
        model_type=model_type,
        family=family,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=vocab,
        tied=tied,
        qkv_bias=family.qkv_bias(f),
        o_bias=family.o_bias(f),
        mlp_bias=family.mlp_bias(f),
        norm_size=norm_size,
        norms_per_layer=norms_per_layer,
        mla=mla,
        mlp=mlp,
        router_bias=family.router_bias(f),
        sliding_window=window,
        local_layers=local,
        max_context=max_context,
        notes=tuple(notes),
    )
