"""Speculation and prefix caching in the serving analyses: the decode step and the prefill
they serve with, when the sweep has the speculative or the prefix axes (docs/speculative.md).

A speculative point replaces the decode step by a verify step of ``k + 1`` rows plus the
draft's time, producing ``E`` tokens a slot on average: a token costs ``(t_verify + t_draft) /
E`` at its context, so TPOT, throughput, pools and cost follow. A hit rate replaces the prefill
by the better of the hit prefill (its reload overlapped layer by layer) and recomputing:
TTFT and the prefill pool follow. Without those axes each function is the plain one, exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.grid.analyses.base import Inputs
from sweeps.grid.analyses.drafts import draft, verify_coefficients
from sweeps.grid.analyses.split import timed_flops
from sweeps.grid.analyses.steps import cache_bytes, hit_work, prefill_split, prefill_work
from sweeps.physics._array import where

EXTRA_DIMS = (
    "spec_tokens",
    "spec_acceptance",
    "spec_draft",
    "prefix_hit_rate",
    "kv_tier",
    "ep",
    "dp_attention",
    "pp",
)
"""The dims the serving and pools analyses take on when the sweep has them (the parallel
axes: every term per device of a tp x ep x pp replica, ``_devices`` of them)."""


def speculates(x: Inputs) -> bool:
    """Whether the grid has the speculative axes."""
    return "spec_tokens" in x.values


def caches_prefixes(x: Inputs) -> bool:
    """Whether the grid has the prefix axes."""
    return "prefix_hit_rate" in x.values


def prefill_time(x: Inputs, batch: Any, prompt: Any) -> Any:
    """``t_p(B, I)``, or with a prefix hit the better of ``max(t_p_hit, t_reload)`` and
    recomputing [s]."""
    flops, read, kv_dev = prefill_work(x, batch, prompt)
    # attention at its own peak (analyses/split.py): FLOPs as their time at the GEMM peak
    flops = timed_flops(x, *prefill_split(x, batch, prompt, flops), flops)
    plain = physics.roofline_time(
        flops, physics.prefill_bytes(read, batch, kv_dev), x["_peak"], x["_bandwidth"]
    )
    if not caches_prefixes(x):
        return plain
    hit = x["prefix_hit_rate"]
    flops, read, kv_dev = hit_work(x, batch, prompt, hit)
    compute = physics.roofline_time(
        flops, physics.prefill_bytes(read, batch, kv_dev), x["_peak"], x["_bandwidth"]
    )
    moved = physics.reload_bytes(batch, cache_bytes(x, hit * prompt))
    reload = physics.reload_time(moved, x["_tier_bandwidth"])
    return np.minimum(physics.hit_time(compute, reload), plain)


def token_time(x: Inputs, batch: Any, context: Any, local: Any, flops: Any, nbytes: Any) -> Any:
    """The time a decode step takes per token of each slot at (mean) ``context`` [s]: the
    plain step, or ``(t_verify + t_draft) / E`` with speculation."""
    plain = physics.affine_step_time(context, local, flops, nbytes, x["_peak"], x["_bandwidth"])
    if not speculates(x):
        return plain
    k = x["spec_tokens"]
    v_flops, v_bytes = verify_coefficients(x, batch, k)
    verify = physics.affine_step_time(context, local, v_flops, v_bytes, x["_peak"], x["_bandwidth"])
    drafted, _, _ = draft(x, k, context)
    return physics.speculative_time_per_token(
        verify, drafted, physics.expected_tokens(k, x["spec_acceptance"])
    )


def static_decode(x: Inputs, prompt: Any, output: Any, flops: Any, nbytes: Any) -> Any:
    """The ``O - 1`` decode tokens of a static batch [s]: the steps summed in closed form, or
    with speculation each token at ``(t_verify + t_draft) / E`` of its context (the draft at
    the mean context)."""
    window, peak, bandwidth = x["_window"], x["_peak"], x["_bandwidth"]
    if not speculates(x):
        return physics.static_decode_time(prompt, output, flops, nbytes, window, peak, bandwidth)
    k = x["spec_tokens"]
    v_flops, v_bytes = verify_coefficients(x, x["batch"], k)
    verify = physics.static_decode_time(prompt, output, v_flops, v_bytes, window, peak, bandwidth)
    drafted, _, _ = draft(x, k, physics.mean_context(prompt, output))
    e = physics.expected_tokens(k, x["spec_acceptance"])
    return (verify + (output - 1) * drafted) / e


UNMODELLED = {
    "spec_tokens": ("bound", "chunked-paced", "chunked-greedy"),
    "prefix_hit_rate": ("bound", "chunked-paced", "chunked-greedy"),
}
"""The modes not modelled with speculation (``k > 0``) or a prefix hit (``h > 0``): the bound
and the chunked schedulers price their steps from a plain decode and a whole prompt."""


def modelled(x: Inputs, mode: str, terms: dict[str, Any]) -> dict[str, Any]:
    """``terms`` of ``mode``, its numbers null where the grid speculates (``k > 0``) or hits
    (``h > 0``) and the mode does not model it (``UNMODELLED``)."""
    off = [dim for dim, modes in UNMODELLED.items() if mode in modes and dim in x.values]
    if not off:
        return terms
    plain = x[off[0]] == 0
    for dim in off[1:]:
        plain = plain & (x[dim] == 0)
    mask = where(plain, 0.0, np.nan)  # broadcast by arithmetic, over the value's own dims
    return {
        key: value + mask if np.asarray(value).dtype.kind == "f" else value
        for key, value in terms.items()
    }


def held(x: Inputs, context: Any) -> tuple[Any, Any]:
    """What a device holds beside the target's weights and caches with speculation: the
    draft's weights [byte] and one sequence's draft cache at ``context`` [byte]; 0 without."""
    if not speculates(x):
        return 0.0, 0.0
    _, weights, cache = draft(x, x["spec_tokens"], context)
    return weights, cache
