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
from sweeps.engine.base import Inputs
from sweeps.engine.drafts import draft, verify_coefficients
from sweeps.engine.split import timed_flops
from sweeps.engine.steps import (
    cache_bytes,
    hit_work,
    pipeline_fill,
    prefill_split,
    prefill_work,
    prefix_hit,
    weights_read,
)
from sweeps.physics._array import on_values, where

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


def computed_tokens(x: Inputs, prompt: Any) -> Any:
    """Prompt tokens a request's prefill computes: ``I``, or ``(1 - h) I`` with a prefix hit,
    at least the logits row's one [token]. The chunked schedulers' chunks are in these tokens:
    a prompt takes ``computed / chunk`` of their steps, not ``I / chunk``."""
    if not caches_prefixes(x):
        return prompt
    return np.maximum(physics.tokens_recomputed(prompt, prefix_hit(x)), 1.0)


def hit_prefill(x: Inputs, batch: Any, prompt: Any) -> tuple[Any, Any]:
    """The hit prefill of ``batch`` prompts: its compute time with the prefix in HBM, its
    attention at its own peak (analyses/split.py), and the reload of the prefixes from their
    tier [s, s]."""
    hit = prefix_hit(x)
    flops, read, kv_dev = hit_work(x, batch, prompt, hit)
    new = physics.tokens_recomputed(prompt, hit)
    flops = timed_flops(x, *prefill_split(x, batch, new, flops), flops)
    compute = physics.roofline_time(
        flops, physics.prefill_bytes(read, batch, kv_dev), x["_peak"], x["_bandwidth"]
    )
    moved = physics.reload_bytes(batch, cache_bytes(x, hit * prompt))
    return compute, physics.reload_time(moved, x["_tier_bandwidth"])


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
    compute, reload = hit_prefill(x, batch, prompt)
    return np.minimum(physics.hit_time(compute, reload), plain)


def verify_time(x: Inputs, batch: Any, context: Any, local: Any) -> Any:
    """A verify step of ``batch`` slots from (mean) ``context`` and the draft before it, its
    attention at its own peak (analyses/split.py) [s]."""
    k = x["spec_tokens"]
    v_flops, v_bytes = verify_coefficients(x, batch, k)
    verify = physics.affine_step_time(context, local, v_flops, v_bytes, x["_peak"], x["_bandwidth"])
    drafted, _, _ = draft(x, k, context, batch=batch)
    return verify * pipeline_fill(x, batch) + drafted


def steps_per_token(x: Inputs, output: Any) -> Any:
    """Verify steps a slot runs per output token after the first: ``n / (O - 1)`` with ``n``
    the renewal count of ``sweeps.physics.verify_steps`` (the last step's drafts cut to what
    is left), ``1 / E`` at ``O = 1``; 1 without speculation [1]."""
    if not speculates(x):
        return 1.0
    k, alpha = x["spec_tokens"], x["spec_acceptance"]
    decodes = output > 1
    steps = physics.verify_steps(output - 1, k, alpha) / where(decodes, output - 1, 1)
    return where(decodes, steps, 1 / physics.expected_tokens(k, alpha))


def token_time(
    x: Inputs, batch: Any, context: Any, local: Any, flops: Any, nbytes: Any, output: Any
) -> Any:
    """The time a decode step takes per token of each slot at (mean) ``context`` [s]: the
    plain step, or with speculation ``(t_verify + t_draft)`` times the verify steps per
    token (``steps_per_token``: ``1 / E`` and the last step's cut drafts)."""
    plain = physics.affine_step_time(context, local, flops, nbytes, x["_peak"], x["_bandwidth"])
    if not speculates(x):
        return plain * pipeline_fill(x, batch)
    return verify_time(x, batch, context, local) * steps_per_token(x, output)


def static_decode(x: Inputs, prompt: Any, output: Any, flops: Any, nbytes: Any) -> Any:
    """The ``O - 1`` decode tokens of a static batch [s]: the steps summed in closed form, or
    with speculation each token at ``(t_verify + t_draft) / E`` of its context (the draft at
    the mean context)."""
    window, peak, bandwidth = x["_window"], x["_peak"], x["_bandwidth"]
    fill = pipeline_fill(x, x["batch"])  # fewer sequences than stages: each crosses all
    if not speculates(x):
        plain = physics.static_decode_time(prompt, output, flops, nbytes, window, peak, bandwidth)
        return plain * fill
    k = x["spec_tokens"]
    v_flops, v_bytes = verify_coefficients(x, x["batch"], k)
    verify = physics.static_decode_time(prompt, output, v_flops, v_bytes, window, peak, bandwidth)
    drafted, _, _ = draft(x, k, physics.mean_context(prompt, output))
    return (verify * fill + (output - 1) * drafted) * steps_per_token(x, output)


def static_cycle(x: Inputs, prompt: Any, output: Any, flops: Any, nbytes: Any) -> Any:
    """The decode of a static batch until its slowest request is done [s]: ``static_decode``,
    with speculation its mean request's steps ``n`` scaled to the expected steps of the
    slowest of ``B``, ``E[max_B N] / n`` (``sweeps.physics.max_verify_steps``; the steps after
    the others are done priced as full ones)."""
    decode = static_decode(x, prompt, output, flops, nbytes)
    if not speculates(x):
        return decode
    k, alpha, tokens = x["spec_tokens"], x["spec_acceptance"], np.maximum(output - 1, 0)
    slowest = on_values(physics.max_verify_steps, tokens, k, alpha, x["batch"])
    mean = physics.verify_steps(tokens, k, alpha)
    return decode * where(tokens > 0, slowest / where(tokens > 0, mean, 1), 1.0)


UNMODELLED: dict[str, tuple[str, ...]] = {}
"""The modes not modelled where an axis is off its plain value (``k > 0``, ``h > 0``), by axis:
none now (``chunked-greedy`` with speculation is modelled, null only where its own schedule
does not hold, ``studies/serving/greedy.py``)."""


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


def rows(x: Inputs) -> Any:
    """Rows a decode slot runs a step: ``k + 1`` with speculation, else 1 [token]."""
    return x["spec_tokens"] + 1 if speculates(x) else 1.0


def randomly_accepted(x: Inputs) -> Any:
    """Where a request's verify steps are random (``k > 0``, ``0 < alpha < 1``): its slot
    frees at no fixed step; False without speculation."""
    if not speculates(x):
        return False
    alpha = x["spec_acceptance"]
    return (x["spec_tokens"] > 0) & (alpha > 0) & (alpha < 1)


def verify_sequence(x: Inputs, context: Any, local: Any) -> tuple[Any, Any]:
    """One slot's verify step from (mean) ``context``: its FLOPs as their time at the GEMM
    peak and its cache bytes, the weights left out [FLOP, byte]."""
    k = x["spec_tokens"]
    flops, nbytes = verify_coefficients(x, 1.0, k)
    kv = nbytes[0] - weights_read(x, k + 1) + nbytes[1] * context + nbytes[2] * local
    return flops[0] + flops[1] * context + flops[2] * local, kv


def hit_prompt(x: Inputs, prompt: Any) -> dict[str, Any]:
    """One prompt's prefill with its prefix hit: the tokens it computes (at least one, the
    logits row's), the cached ones, its FLOPs as their time at the GEMM peak, the KV it writes
    and the prefix bytes it reloads from its tier [token, token, FLOP, byte, byte]."""
    hit = prefix_hit(x)
    flops, _, _ = hit_work(x, 1.0, prompt, hit)
    new = physics.tokens_recomputed(prompt, hit)
    prefix = cache_bytes(x, hit * prompt)
    return {
        "computed": computed_tokens(x, prompt),
        "cached": hit * prompt,
        "flops": timed_flops(x, *prefill_split(x, 1.0, new, flops), flops),
        "writes": cache_bytes(x, prompt) - prefix,
        "reload": prefix,
    }
