"""Model families scaled by parameter count: a family's shape rule, declared once.

A ``Family`` names its published members (catalog ids). A model of ``P`` parameters of the
family (docs/model-size.md, beyond-the-step section 5) takes:

1. its width by interpolating ``ln(hidden_size)`` linearly in ``ln(params)`` between the two
   members whose parameter counts bracket ``P`` (the end segments extended beyond the first
   and last member), rounded to a multiple of ``head_dim * kv_heads`` so that the query heads
   ``hidden_size / head_dim`` split evenly into the KV groups;
2. its MLP width by interpolating the members' ratio ``intermediate_size / hidden_size`` the
   same way, rounded to a multiple of ``ffn_multiple``;
3. ``head_dim``, ``kv_heads``, the vocabulary and tied embeddings from the member nearest in
   ``ln(params)`` (what a family changes in steps, not smoothly);
4. as many layers (at least one) as bring the parameter count nearest to ``P``.

Its parameters are then counted from that shape by the importer's counter
(``sweeps.catalog.hf``), exactly as a ``config.json`` of it would be: the model's ``params``
is that count, not ``P`` (within half a layer of it). At a member's own count the rule gives
that member's shape back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from sweeps.catalog.records import Model


@dataclass(frozen=True, slots=True)
class Family:
    """One family's scaling rule.

    name : Display name (``Llama-3``)
    members : Catalog ids of the published members the rule interpolates, in any order
    catalog_families : The catalog ``family`` values a ``base`` model may carry to name it
    model_type : The Hugging Face ``model_type`` whose counting rules apply (``llama``)
    ffn_multiple : The MLP width is a multiple of this [1]
    reach : How far beyond the smallest and largest member sizes may go, as a factor [1]
    source : Where the members' shapes are from
    """

    name: str
    members: tuple[str, ...]
    catalog_families: tuple[str, ...]
    model_type: str
    ffn_multiple: int
    reach: float
    source: str


FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        "llama-3": Family(
            name="Llama-3",
            members=(
                "llama-3.2-1b",
                "llama-3.2-3b",
                "llama-3.1-8b",
                "llama-3.1-70b",
                "llama-3.1-405b",
            ),
            catalog_families=("Llama-3", "Llama-3.1", "Llama-3.2"),
            model_type="llama",
            ffn_multiple=1024,
            reach=2.5,
            source="the published config.json of Llama-3.2 1B and 3B, Llama-3.1 8B, 70B and "
            "405B (the catalog's rows)",
        ),
        "llama-2": Family(
            name="Llama-2",
            members=("llama-2-7b", "llama-2-13b", "llama-2-70b"),
            catalog_families=("Llama-2",),
            model_type="llama",
            ffn_multiple=256,
            reach=2.5,
            source="the published config.json of Llama-2 7B, 13B and 70B (the catalog's rows)",
        ),
    }
)
"""Every family a ``[models.*]`` table with ``base`` may scale, by key."""


def family_of(model: Model) -> Family | None:
    """The family whose rule scales ``model`` (by its catalog ``family``), or None."""
    return next((f for f in FAMILIES.values() if model.family in f.catalog_families), None)


def members_of(family: Family, models: Mapping[str, Model]) -> tuple[Model, ...]:
    """The family's members from the catalog's ``models``, by ascending parameters."""
    return tuple(sorted((models[i] for i in family.members), key=lambda m: m.params))


def size_range(family: Family, members: Sequence[Model]) -> tuple[float, float]:
    """The sizes the rule may be asked for: the members' span widened by ``reach`` [1]."""
    return members[0].params / family.reach, members[-1].params * family.reach


def _segment(members: Sequence[Model], params: float) -> tuple[Model, Model, float]:
    """The two members bracketing ``params`` (an end segment beyond them) and where ``params``
    lies between them in ``ln(params)``: 0 at the first, 1 at the second [1]."""
    index = sum(1 for m in members[1:-1] if m.params <= params)
    low, high = members[index], members[index + 1]
    where = math.log(params / low.params) / math.log(high.params / low.params)
    return low, high, where


def _nearest(members: Sequence[Model], params: float) -> Model:
    return min(members, key=lambda m: abs(math.log(params / m.params)))


def _multiple(value: float, step: int) -> int:
    return max(step, round(value / step) * step)


def _config(near: Model, family: Family, hidden: int, ffn: int, layers: int) -> dict[str, Any]:
    """A ``config.json`` of the scaled shape, as the importer reads one."""
    return {
        "model_type": family.model_type,
        "hidden_size": hidden,
        "intermediate_size": ffn,
        "num_hidden_layers": layers,
        "num_attention_heads": hidden // near.head_dim,
        "num_key_value_heads": near.kv_heads,
        "head_dim": near.head_dim,
        "vocab_size": near.vocab_size,
        "tie_word_embeddings": near.tie_word_embeddings,
        "max_position_embeddings": near.max_context,
    }


def scaled_config(family: Family, members: Sequence[Model], params: float) -> dict[str, Any]:
    """The ``config.json`` of the family's model nearest to ``params`` parameters [1]: the
    shape rule of this module's docstring. ``members`` as ``members_of`` gives them."""
    from sweeps.catalog.hf.read import count_parameters

    low, high, where = _segment(members, params)
    near = _nearest(members, params)
    width = math.exp(math.log(low.width) + where * math.log(high.width / low.width))
    hidden = _multiple(width, near.head_dim * near.kv_heads)
    ratio_low, ratio_high = low.intermediate_size / low.width, high.intermediate_size / high.width
    ratio = max(1.0, ratio_low + where * (ratio_high - ratio_low))
    ffn = _multiple(ratio * hidden, family.ffn_multiple)
    one, two = (count_parameters(_config(near, family, hidden, ffn, n)).total for n in (1, 2))
    per_layer, outer = two - one, 2 * one - two
    layers = max(1, round((params - outer) / per_layer))
    return _config(near, family, hidden, ffn, layers)


def scaled_model(
    family: Family, members: Sequence[Model], params: float, name: str, base: Model
) -> Model:
    """The ``Model`` ``name`` of ``family`` at about ``params`` parameters [1], counted from
    the shape ``scaled_config`` gives; ``base`` (the table's catalog model) lends its
    longest context."""
    from sweeps.catalog.hf.read import model_from_config

    config = scaled_config(family, members, params)
    model = model_from_config(config, name, f"{family.name} scaled to {params:.4g}")
    return replace(
        model,
        family=family.name,
        max_context=base.max_context,
        source=f"{family.name} family rule (docs/model-size.md) at {params:.4g} parameters "
        f"asked, {model.params:,.0f} counted; members: {family.source}",
        notes=f"hidden {model.hidden_size}, layers {model.layers}, heads {model.heads}, "
        f"kv_heads {model.kv_heads}, intermediate {model.intermediate_size}",
    )


def size_label(params: float) -> str:
    """A size written as a model id's suffix, three significant digits: ``8.03b``, ``1t``,
    ``500m`` [-]."""
    for unit, scale in (("t", 1e12), ("b", 1e9), ("m", 1e6)):
        if params >= scale * 0.9995:
            return f"{params / scale:.3g}{unit}".replace("+", "")
    return f"{params:.3g}".replace("+", "")
