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

Parts = dict[str, Any]
"""A request's parts of the bound, each a sum over requests (``work`` [FLOP], ``traffic``
[byte], ``prompt`` [token], ``steps`` or ``output`` [1, token], ``reload`` [byte],
``drafted`` [s]) but ``most`` [token], the largest prompt a step may carry ``B`` of: one
request's own at fixed lengths, a distribution's mean and largest
(``sweeps.studies.serving.distribution``)."""


def _request_parts(t: Any, prompt: Any, flops: Any, cache: Any, steps: Any) -> Parts:
    """A request's parts of ``prompt`` computed tokens, prefill FLOPs ``flops``, cache bytes
    ``cache`` (its writes and the prefix read) and ``steps`` verify steps [FLOP, byte, token,
    1]."""
    x, seq_flops, seq_kv = t.x, t.seq_flops, t.seq_kv
    if served.speculates(x):
        low = np.maximum(t.context - x["spec_tokens"] / 2, 0.0)
        seq_flops, seq_kv = served.verify_sequence(x, low, np.minimum(t.local, low))
    return {
        "work": flops + steps * seq_flops,
        "traffic": cache + steps * seq_kv,
        "prompt": prompt,
        "most": prompt,
        "steps": steps,
    }


def _request_time(t: Any, parts: Parts) -> Any:
    """A request's bound from its parts (``_request_parts``) [s]."""
    x, batch, rows = t.x, t.batch, t.rows
    budget = t.budget if math.isfinite(t.budget) else 0.0
    slots = batch * rows
    largest = np.maximum(np.maximum(batch * parts["most"], budget), slots)
    weights = physics.weights_per_request(
        slots, parts["prompt"], parts["steps"] * rows + 1, largest, weights_read(x, slots),
        weights_read(x, slots + largest), largest, weights_read(x, 0 * slots),
        weights_read(x, largest), largest,
    )  # fmt: skip
    return physics.bound_request_time(
        parts["work"], weights, parts["traffic"], x["_peak"], x["_bandwidth"]
    )


def plain_parts(t: Any) -> Parts:
    """A request's parts of the bound without speculation or a prefix hit (section 2)."""
    return {
        "work": t.prompt_flops + (t.output - 1) * t.seq_flops,
        "traffic": t.prompt_cache + (t.output - 1) * t.seq_kv,
        "prompt": t.prompt,
        "most": t.prompt,
        "output": t.output,
    }


def plain_time(t: Any, parts: Parts) -> Any:
    """The bound's time per request without speculation or a prefix hit, from its parts.

    Its token budget is the largest step any mode takes, ``L = max(B I, tau)`` (``I`` the
    largest prompt, ``most``): the chunked schedulers keep within ``tau``, while a static
    batch and batched prefills carry up to ``B`` whole prompts [s]."""
    x, batch = t.x, t.batch
    budget = t.budget if math.isfinite(t.budget) else 0.0
    largest = np.maximum(batch * parts["most"], budget)
    weights = physics.weights_per_request(
        batch, parts["prompt"], parts["output"], largest, weights_read(x, batch),
        weights_read(x, batch + largest), largest, weights_read(x, 0 * batch),
        weights_read(x, largest), largest,
    )  # fmt: skip
    return physics.bound_request_time(
        parts["work"], weights, parts["traffic"], x["_peak"], x["_bandwidth"]
    )


def technique_parts(t: Any) -> dict[str, Any]:
    """A request's parts of the bound with speculation and prefix hits: those of a hit
    prefill (``hit``), the prefix it reloads (``reload``), those of recomputing its prompt
    (``plain``), its drafts' time (``drafted``)."""
    x = t.x
    steps = t.output - 1.0
    if served.speculates(x):
        steps = steps / physics.expected_tokens(x["spec_tokens"], x["spec_acceptance"])
    parts = {"hit": _request_parts(t, t.computed, t.prompt_flops, t.prompt_cache + t.reload, steps)}
    if served.caches_prefixes(x):
        parts["reload"] = t.reload
        parts["plain"] = _request_parts(t, t.prompt, t.plain_flops, cache_bytes(x, t.prompt), steps)
    if served.speculates(x):
        low = np.maximum(t.context - x["spec_tokens"] / 2, 0.0)
        drafted, _, _ = draft(x, x["spec_tokens"], low, batch=t.batch)
        parts["drafted"] = steps * drafted
    return parts


def technique_time(t: Any, parts: dict[str, Any]) -> Any:
    """The bound's time per request with speculation and prefix hits, from its parts
    (``technique_parts``; the module docstring) [s]."""
    x = t.x
    time = _request_time(t, parts["hit"])
    if served.caches_prefixes(x):
        reload = physics.reload_time(parts["reload"], x["_tier_bandwidth"])
        plain = _request_time(t, parts["plain"])
        time = np.minimum(np.maximum(time, reload), plain)
    if served.speculates(x):
        time = time + parts["drafted"] / t.batch
    return time


def techniques(x: Any) -> bool:
    """Whether the bound takes speculation or prefix hits (``technique_time``)."""
    return bool(served.speculates(x) or served.caches_prefixes(x))


def request_parts(t: Any) -> dict[str, Any]:
    """A request's parts of the bound: ``plain_parts`` or ``technique_parts``."""
    return technique_parts(t) if techniques(t.x) else {"plain": plain_parts(t)}


def request_time(t: Any, parts: dict[str, Any]) -> Any:
    """The bound's time per request from its parts (``request_parts``) [s]."""
    return technique_time(t, parts) if techniques(t.x) else plain_time(t, parts["plain"])


def technique_bound(t: Any, tpot: Any) -> dict[str, Any]:
    """``bound``'s terms (``schedulers.bound``) with speculation and prefix hits, its TPOT
    ``tpot`` (``schedulers.bound_tpot``)."""
    x = t.x
    steady = t.steady
    if served.speculates(x):
        e = physics.expected_tokens(x["spec_tokens"], x["spec_acceptance"])
        steady = served.verify_time(x, t.batch, t.context, t.local) / e
    time = technique_time(t, technique_parts(t))
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
