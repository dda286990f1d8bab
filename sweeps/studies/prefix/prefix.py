"""Prefix caching over the prefill grid and ``h x tier`` (docs/speculative.md, section 2).

Per prefill point, hit rate ``h`` and KV tier: the tokens recomputed, the hit prefill (the
``(1 - h) I`` new tokens attending to all ``I`` positions, the cached prefix read from HBM),
the bytes reloaded from the tier and their time, the hit time with the reload overlapped layer
by layer, the recompute time (the plain prefill), the better of the two as the TTFT, the
break-even tier bandwidth and the prefixes a tier holds. ``h = 0`` is the prefill table
exactly; ``h = 1`` computes only the logits row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS, handoff_time, link_time, parallel
from sweeps.engine.prefill import DIMS as PREFILL_DIMS
from sweeps.engine.split import roofline
from sweeps.engine.steps import cache_bytes, hit_work, prefill_split, prefix_hit
from sweeps.physics._array import where

DIMS = (*PREFILL_DIMS, "prefix_hit_rate", "kv_tier")
HIT_DIMS = DIMS[:-1]
"""The hit prefill's own work does not depend on the tier."""


def _compute(x: Inputs) -> dict[str, Any]:
    opt, batch, point = x.options, x["batch"], x.engine.pointwise
    h = prefix_hit(x)
    flops, read, kv_dev = hit_work(x, x["batch"], x["prompt"], h)
    nbytes = point(physics.prefill_bytes, HIT_DIMS, read, batch, kv_dev)
    ai = point(physics.arithmetic_intensity, HIT_DIMS, flops, nbytes)
    # a prefill writes every stage's cache in turn; a device holds its stage's (the prefill's)
    held = kv_dev / x["_pp"]
    max_batch = physics.max_batch(x["memory"], opt.memory_reserve, x["weight_bytes"], held)
    # the GEMMs at the weight format's peak, attention at the attention format's
    new = physics.tokens_recomputed(x["prompt"], h)
    roof = roofline(
        x, HIT_DIMS, lambda: prefill_split(x, batch, new, flops),
        with_tokens=False, flops=flops, nbytes=nbytes, ai=ai, batch=batch,
        max_batch=max_batch, peak=x["_peak"], bandwidth=x["_bandwidth"],
        ridge=x["ridge_point"], peak_flops=x["peak_flops"],
    )  # fmt: skip
    if parallel(x):  # the new tokens cross every stage in turn, as the prefill table's
        path = batch * new * x["_pp"]
        handoff = physics.known(handoff_time(x, path))
        ttft = physics.step_bound(roof["time"], physics.known(link_time(x, path)))
        roof = {**roof, "time": point(np.add, HIT_DIMS, ttft, (x["_pp"] - 1) * handoff)}
    # each device reloads its own share of the prefixes: a stage's layers, an attention
    # copy's sequences (``cache_bytes``), every stage at once
    prefix = cache_bytes(x, physics.cached_tokens(x["prompt"], h))
    reload_bytes = physics.reload_bytes(batch, prefix)
    reload = physics.reload_time(reload_bytes, x["_tier_bandwidth"])
    hit = physics.hit_time(roof["time"], reload)
    recompute = x["ttft_s"]
    free = x["memory"] * (1 - opt.memory_reserve) - x["weight_bytes"]
    capacity = where(x["_tier_is_hbm"], free, x["_tier_capacity"])
    return {
        "hit_rate": h,
        "tokens_recomputed": new,
        "hit_flops": flops,
        "hit_bytes": nbytes,
        "hit_compute_time_s": roof["time"],
        "reload_bytes": reload_bytes,
        "reload_time_s": reload,
        "hit_time_s": hit,
        "reload_pays": hit < recompute,
        "prefix_ttft_s": np.minimum(hit, recompute),
        "break_even_bandwidth": physics.break_even_bandwidth(reload_bytes, recompute),
        "recompute_time_s": recompute,
        "tier_bandwidth": where(x["_tier_is_hbm"], np.nan, x["_tier_bandwidth"]),
        "prefixes_held": physics.prefixes_held(capacity, prefix),
    }


_V = Variable

PREFIX = Analysis(
    name="prefix",
    dims=DIMS,
    variables=(
        _V(
            "hit_rate",
            "1",
            "Prefix hit rate h: the axis's, or with prefix_hit_rate = 'trace' (a null there) "
            "the trace's LRU hit rate at this point's own cache (docs/workloads.md)",
            rank="low",
        ),
        _V("tokens_recomputed", "token", "Prompt tokens the hit prefill computes, (1-h) I"),
        _V(
            "hit_flops",
            "FLOP",
            "FLOPs of the hit prefill per device: the new tokens, the logits row",
        ),
        _V(
            "hit_bytes",
            "byte",
            "HBM bytes of the hit prefill per device: weights, the cached prefix, new caches",
            rank="point",
        ),
        _V(
            "hit_compute_time_s",
            "s",
            "Roofline bound on the hit prefill's compute, the prefix already in HBM",
            rank="full",
        ),
        _V(
            "reload_bytes",
            "byte",
            "Cached-prefix bytes brought from the tier into HBM, per device",
        ),
        _V(
            "reload_time_s",
            "s",
            "Reload time of the cached prefixes over the tier's bandwidth (hbm: 0)",
        ),
        _V(
            "hit_time_s",
            "s",
            "Hit prefill with the reload overlapped layer by layer, max(compute, reload)",
            rank="full",
        ),
        _V(
            "recompute_time_s",
            "s",
            "Recomputing the whole prompt: the plain prefill's bound",
            rank="full",
        ),
        _V("reload_pays", "-", "Reloading the prefix beats recomputing the prompt", "bool"),
        _V(
            "prefix_ttft_s",
            "s",
            "Time to first token: the better of the hit prefill and recomputing, a bound",
            column="ttft_s",
            rank="full",
        ),
        _V(
            "break_even_bandwidth",
            "byte/s",
            "Tier bandwidth per device at which reload and recompute take equal time "
            "(null: nothing reloaded)",
            "nullable",
        ),
        _V(
            "tier_bandwidth",
            "byte/s",
            "Tier-to-HBM bandwidth per device (null for hbm: nothing to reload)",
            "nullable",
            "kv_tier_bandwidth",
        ),
        _V(
            "prefixes_held",
            "1",
            "Cached prefixes of this length a tier holds per device (hbm: beside the weights; "
            "null: capacity unknown)",
            "nullable",
        ),
    ),
    compute=_compute,
    needs=("model", "decode", "prefill"),
    columns=(
        "hit_rate",
        "tokens_recomputed",
        "hit_flops",
        "hit_bytes",
        "hit_compute_time_s",
        "reload_bytes",
        "tier_bandwidth",
        "reload_time_s",
        "hit_time_s",
        "recompute_time_s",
        "reload_pays",
        "prefix_ttft_s",
        "break_even_bandwidth",
        "prefixes_held",
    ),
    study="prefix",
    extra_dims=PARALLEL_DIMS,
)
