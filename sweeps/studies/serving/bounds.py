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
from sweeps.engine.steps import cache_bytes, pipeline_fill, weights_read
from sweeps.physics._array import where
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


def technique_bound(t: Any, tpot: Any) -> dict[str, Any]:
    """``bound``'s terms (``schedulers.bound``) with speculation and prefix hits, its TPOT
    ``tpot`` (``schedulers.bound_tpot``)."""
    x = t.x
    steps = t.output - 1.0
    steady = t.steady
    if served.speculates(x):
        e = physics.expected_tokens(x["spec_tokens"], x["spec_acceptance"])
        steps = steps / e
        steady = served.verify_time(x, t.batch, t.context, t.local) / e
    time = _request_time(t, t.computed, t.prompt_flops, t.prompt_cache + t.reload, steps)
    if served.caches_prefixes(x):
        reload = physics.reload_time(t.reload, x["_tier_bandwidth"])
        plain = _request_time(t, t.prompt, t.plain_flops, cache_bytes(x, t.prompt), steps)
        time = np.minimum(np.maximum(time, reload), plain)
    if served.speculates(x):
        low = np.maximum(t.context - x["spec_tokens"] / 2, 0.0)
        drafted, _, _ = draft(x, x["spec_tokens"], low, batch=t.batch)
        time = time + steps * drafted / t.batch
    return t.result(t.alone, tpot, 1 / time, steady, np.nan)


def bound_tpot(t: Any) -> Any:
    """The fastest mean TPOT of a saturated scheduler with ``B`` slots (section 2) [s].

    Each slot spends at least one step of every request on its prompt, beside its ``n``
    decode steps (``O - 1``; verify steps with speculation), so a step carries
    ``B n / (n + 1)`` decodes on average, not ``B``; held by its budget a step carries at
    most the balanced ``n_d = tau n / (I + n r)`` decodes and ``tau - n_d r`` prompt tokens.
    The faster of the two fluid steps at the mean context (no prefix re-read, a mean share
    of the prompts' work) is under every scheduler's mean step: the step is convex in what
    it carries, and a request sees at least the mean load. With fewer sequences than
    pipeline stages a step waits on its stages (``pipeline_fill``), at the most sequences a
    named scheduler's step carries (``B + 1``, or with a budget its decodes and the prompt
    pieces within it).
    """
    n = np.maximum(t.steps, 1.0)
    per_token = served.steps_per_token(t.x, t.output)
    # the most sequences a named scheduler's step carries: B, or beside its decodes prompt
    # pieces within the budget (a partial one at each end)
    most = t.batch + 1 + (t.budget / t.computed + 1 if math.isfinite(t.budget) else 0.0)
    fill = pipeline_fill(t.x, most)
    slots = t.mixed_step(t.batch * n / (n + 1), 0.0, 0.0, 0.0) * per_token
    slots = slots / pipeline_fill(t.x, t.batch * n / (n + 1)) * fill
    if not math.isfinite(t.budget):
        return slots
    decoders = np.minimum(t.batch, t.budget * n / (t.computed + n * t.rows))
    chunk = np.maximum(t.budget - decoders * t.rows, 0.0)
    budget = t.mixed_step(decoders, chunk, 0.0, 0.0) * per_token / pipeline_fill(t.x, decoders)
    budget = budget * fill
    return np.minimum(slots, budget)


def corner(t: Any, bound: dict[str, Any], named: list[dict[str, Any]]) -> dict[str, Any]:
    """``bound``'s terms with its TPOT (``bound_tpot``) lowered to the fastest ``named``
    scheduler's where one is faster: a scheduler that holds a prompt over several steps
    (``chunked-greedy``'s prompts longer than its leftover budget, ``chunked-paced``'s held
    slots) decodes fewer sequences a step than the fluid of one prompt step a request, and no
    bound over every scheduler exists for TPOT above one decode's step, so the corner of the
    table is the fastest TPOT of its rows. The rate and TTFT stay the bound's own."""
    tpot = bound["tpot"]
    for terms in named:
        tpot = np.fmin(tpot, terms["tpot"])
    tpot = where(t.decodes, tpot, np.nan)
    latency = bound["ttft"] + where(t.decodes, (t.output - 1) * tpot, 0.0)
    return {**bound, "tpot": tpot, "latency": latency}
