"""The ``bound`` mode with speculation and prefix hits (docs/serving.md section 2, in rows).

With speculation a request's ``O - 1`` decode tokens take at least ``n = (O - 1) / E`` verify
steps on average (the last one's cut drafts only add), each of ``k + 1`` rows: ``B`` slots
carry ``B (k + 1)`` rows a step, so the fluid bound of section 2 holds with the decode
tokens counted as rows (``n (k + 1)`` a request, ``B (k + 1)`` a step). The verify steps are
taken from a first row ``k / 2`` below the mean context (a slot's rows cover its contexts;
``k / 2`` is the most the last step's overshoot moves them), and the draft runs before each,
its own roofline: ``n t_draft(B) / B`` a request at the least (``t_draft(m) / m`` falls with
``m``). With a prefix hit a request computes ``(1 - h) I`` prompt tokens and reads its
cached prefix once; its reload over the tier's link is a resource of its own,
``h I kv / bandwidth`` a request, so ``t_req = max(t_compute, t_memory, t_reload)``; and the
bound takes the better of reloading every hit and recomputing every prompt, the choice the
table's prefill makes (a schedule that mixes the two on a slow tier could pass it by the
gap between them, at most). ``k = 0`` and ``h = 0`` are section 2's bound exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.drafts import draft
from sweeps.engine.steps import cache_bytes, weights_read
from sweeps.studies.serving import served


def _request_time(t: Any, prompt: Any, flops: Any, cache: Any, steps: Any) -> Any:
    """A request's bound of ``prompt`` computed tokens, prefill FLOPs ``flops`` and cache
    bytes ``cache`` (its writes and the prefix read), and ``steps`` verify steps [s]."""
    x, batch, rows = t.x, t.batch, t.rows
    budget = t.budget if math.isfinite(t.budget) else 0.0
    slots = batch * rows
    largest = np.maximum(np.maximum(batch * prompt, budget), slots)
    weights = physics.weights_per_request(
        slots, prompt, steps * rows + 1, largest, weights_read(x, slots),
        weights_read(x, slots + largest), largest, weights_read(x, 0 * slots),
        weights_read(x, largest), largest,
    )  # fmt: skip
    seq_flops, seq_kv = t.seq_flops, t.seq_kv
    if served.speculates(x):
        low = np.maximum(t.context - x["spec_tokens"] / 2, 0.0)
        seq_flops, seq_kv = served.verify_sequence(x, low, np.minimum(t.local, low))
    work = flops + steps * seq_flops
    traffic = cache + steps * seq_kv
    return physics.bound_request_time(work, weights, traffic, x["_peak"], x["_bandwidth"])


def technique_bound(t: Any) -> dict[str, Any]:
    """``bound``'s terms (``schedulers.bound``) with speculation and prefix hits."""
    x = t.x
    steps = t.output - 1.0
    tpot = t.steady
    if served.speculates(x):
        e = physics.expected_tokens(x["spec_tokens"], x["spec_acceptance"])
        steps = steps / e
        tpot = served.verify_time(x, t.batch, t.context, t.local) / e
    time = _request_time(t, t.computed, t.prompt_flops, t.prompt_cache + t.reload, steps)
    if served.caches_prefixes(x):
        reload = physics.reload_time(t.reload, x["_tier_bandwidth"])
        plain = _request_time(t, t.prompt, t.plain_flops, cache_bytes(x, t.prompt), steps)
        time = np.minimum(np.maximum(time, reload), plain)
    if served.speculates(x):
        low = np.maximum(t.context - x["spec_tokens"] / 2, 0.0)
        drafted, _, _ = draft(x, x["spec_tokens"], low, batch=t.batch)
        time = time + steps * drafted / t.batch
    return t.result(t.alone, tpot, 1 / time, tpot, np.nan)
