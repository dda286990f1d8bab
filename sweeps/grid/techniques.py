"""The derived inputs of the speculative and prefix analyses, from the resolved ``Sweep``.

Along ``spec_draft``: the kind of each draft (``_draft_kind``: 0 ngram, 1 mtp, 2 a model)
and, for a draft model, its shapes (``_draft_*``, neutral values for the others, whose cost
the analysis never takes from them). Along ``kv_tier`` and ``hardware``: each tier's bandwidth
per device (``_tier_bandwidth``, ``inf`` for hbm), its capacity (``_tier_capacity``, NaN where
unknown) and whether it keeps the prefix in device memory (the built-in hbm). Along
``hardware``: the board power (``_board_power``, NaN where the catalog has none). With
``prefix_hit_rate = "trace"``: the trace's LRU hit curve (``_hit_curve``, one value: a
``sweeps.traces.reuse.HitCurve``). Units as in ``sweeps.grid.coords``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sweeps.config import Sweep
from sweeps.studies.prefix.trace import TraceHitRate

Coord = tuple[str | tuple[str, ...], np.ndarray]

_KIND = {"ngram": 0, "mtp": 1, "model": 2}

_DRAFT_FIELDS: dict[str, tuple[Any, Any]] = {
    # name: (value of a draft model, neutral value for ngram and mtp)
    "params": (lambda m: float(m.params), 0.0),
    "active_params": (lambda m: float(m.active_params), 0.0),
    "layers": (lambda m: m.layers, 1),
    "local_layers": (lambda m: m.local_layers, 0),
    "window": (lambda m: float(m.sliding_window) if m.sliding_window > 0 else math.inf, math.inf),
    "heads": (lambda m: m.heads, 0),
    "attention_dim": (lambda m: m.attention_dim, 0),
    "kv_elements": (lambda m: m.kv_elements_per_token_layer(m.kv_heads), 0),
    "cache_heads": (lambda m: m.cache_heads(m.kv_heads), 1),
    "vocab_size": (lambda m: m.vocab_size, 0),
    "hidden_size": (lambda m: m.width, 0),
    "tied": (lambda m: m.tie_word_embeddings, False),
    "experts": (lambda m: m.experts, 1),
    "experts_per_token": (lambda m: m.experts_per_token, 1),
}


def _draft_inputs(sweep: Sweep) -> dict[str, Coord]:
    drafts = sweep.spec_draft
    out: dict[str, Coord] = {
        "_draft_kind": ("spec_draft", np.array([_KIND[d.kind] for d in drafts], np.int64))
    }
    for name, (value, neutral) in _DRAFT_FIELDS.items():
        out[f"_draft_{name}"] = (
            "spec_draft",
            np.array([value(d.model) if d.model is not None else neutral for d in drafts]),
        )
    return out


def _tier_inputs(sweep: Sweep) -> dict[str, Coord]:
    tiers = sweep.kv_tier
    capacity = [math.nan if t.capacity is None else t.capacity for t in tiers]
    return {
        "_tier_bandwidth": (
            ("hardware", "kv_tier"),
            np.array([[t.bandwidth_on(d) for t in tiers] for d in sweep.hardware], float),
        ),
        "_tier_capacity": ("kv_tier", np.array(capacity, float)),
        "_tier_is_hbm": ("kv_tier", np.array([t.in_device_memory for t in tiers])),
    }


def technique_inputs(sweep: Sweep) -> dict[str, Coord]:
    """The derived inputs of the speculative and prefix axes ``sweep`` has, and the board
    power of its devices [see the module docstring for units]."""
    power = [getattr(d, "board_power_w", None) for d in sweep.hardware]
    out: dict[str, Coord] = {
        "_board_power": ("hardware", np.array([math.nan if p is None else p for p in power]))
    }
    if sweep.spec_draft:
        out.update(_draft_inputs(sweep))
    if sweep.kv_tier:
        out.update(_tier_inputs(sweep))
    traced = [r for r in sweep.prefix_hit_rate if isinstance(r, TraceHitRate)]
    if traced:  # one value, the curve: ``sweeps.engine.steps.prefix_hit`` reads it
        out["_hit_curve"] = ((), np.array(traced[0].curve, dtype=object))
    return out
