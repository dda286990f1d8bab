"""The serving table's modes, each priced from the per-step physics (docs/serving.md s. 1-3).

One function per mode returns its terms (``ttft``, ``tpot``, ``latency``, ``steady``,
``per_device``, ``share`` and, for the chunked ones, ``chunk`` and ``limited``), every one a
closed form over the grid: the bound over every scheduler, a static batch, and the named
schedulers saturated. Each step a scheduler runs is priced as the roofline of exactly what it
carries (``mixed_step``): decodes at the mean context, prompt tokens with their causal
attention, the prefix they re-read and their own KV writes, the weights once for the step's
tokens. Values that do not exist (TPOT at ``O = 1``) are NaN, null in the tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Inputs
from sweeps.engine.drafts import draft
from sweeps.engine.parallel_terms import parallel
from sweeps.engine.split import timed_coefficients, timed_flops
from sweeps.engine.steps import (
    cache_bytes,
    pipeline_fill,
    prefill_split,
    prefill_work,
    step_coefficients,
    weights_read,
)
from sweeps.physics._array import where
from sweeps.schedulers import MODES
from sweeps.studies.serving import bounds, paced, served
from sweeps.studies.serving.greedy import random_slots

HEADROOM = 3.0
"""The free slots, in standard deviations of its decodes, below which a budget-paced
``chunked-greedy`` with random verify steps is not held to its balanced state (null):
measured at 3.1 within 0.06-0.4 % on TPOT, at 0.7 3 % high
(``sweeps.physics.balanced_headroom``)."""

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
"""The percentiles of TTFT and TPOT the pools table reports."""


def prefill_time(x: Inputs, batch: Any, prompt: Any) -> Any:
    """``t_p(B, I)``: the roofline time of ``batch`` prompts of ``prompt`` tokens (0: none) [s];
    with a prefix hit rate, the better of the hit prefill and recomputing (``served``)."""
    return where(batch > 0, served.prefill_time(x, batch, prompt), 0.0)


def _timed_prefill(x: Inputs, batch: Any, prompt: Any, flops: Any) -> Any:
    """A prefill's FLOPs as their time at the GEMM peak, attention at its own peak
    (``analyses/split.py``) [FLOP]."""
    return timed_flops(x, *prefill_split(x, batch, prompt, flops), flops)


class Terms:
    """What every mode reads: the workload, the decode step and one sequence's costs."""

    def __init__(self, x: Inputs, budget: float) -> None:
        self.x = x
        self.batch, self.prompt, self.output = x["batch"], x["prompt_tokens"], x["output_tokens"]
        self.budget = budget
        self.decodes = self.output > 1  # at O = 1 nothing decodes
        self.context = physics.mean_context(self.prompt, self.output)
        self.local = where(
            self.decodes,
            physics.mean_local_context(self.prompt, self.output, x["_window"]),
            0.0,
        )
        # attention at its own peak (analyses/split.py): FLOPs as their time at the GEMM peak
        flops, self.nbytes = step_coefficients(x, self.batch)
        self.flops = timed_coefficients(x, flops)
        one_flops, one_bytes = step_coefficients(x, 1)
        one_flops = timed_coefficients(x, one_flops)
        # one sequence's decode at the mean context: its FLOPs and its cache traffic
        self.seq_flops = where(
            self.decodes,
            one_flops[0] + one_flops[1] * self.context + one_flops[2] * self.local,
            0.0,
        )
        self.seq_kv = where(
            self.decodes, one_bytes[1] * self.context + one_bytes[2] * self.local, 0.0
        )
        self.prompt_flops = _timed_prefill(x, 1, self.prompt, prefill_work(x, 1, self.prompt)[0])
        self.prompt_cache = cache_bytes(x, self.prompt)
        # the prompt tokens a prefill computes, those cached and the prefix each reloads
        self.computed, self.cached, self.reload = self.prompt, 0.0, 0.0
        self.plain_flops = self.prompt_flops
        if served.caches_prefixes(x):
            hit = served.hit_prompt(x, self.prompt)
            self.computed, self.cached, self.reload = hit["computed"], hit["cached"], hit["reload"]
            self.prompt_flops, self.prompt_cache = hit["flops"], hit["writes"]
        # a slot's rows a step and its verify steps a request (O - 1 without speculation);
        # slots free at random steps only where requests verify (not at O = 1)
        self.rows = served.rows(x)
        self.random = served.randomly_accepted(x) & self.decodes
        self.steps = self.output - 1
        if served.speculates(x):
            self.steps = self.steps * served.steps_per_token(x, self.output)
            verify = served.verify_sequence(x, self.context, self.local)
            self.seq_flops = where(self.decodes, verify[0], 0.0)
            self.seq_kv = where(self.decodes, verify[1], 0.0)
        # per token of a slot: the step, or (t_verify + t_draft) / E with speculation
        self.steady = served.token_time(
            x, self.batch, self.context, self.local, self.flops, self.nbytes, self.output
        )
        self.alone = prefill_time(x, 1, self.prompt)

    def mixed_step(
        self, decoders: Any, tokens: Any, prefix: Any, chunks: Any, starts: Any = 0.0
    ) -> Any:
        """A step of ``decoders`` decodes at the mean context and ``tokens`` prompt tokens in
        ``chunks`` pieces, each re-reading a mean ``prefix`` of cached tokens, and ``starts``
        pieces more that begin a prompt, each reading its cached ``h I`` alone [s]; with
        speculation each decode a verify of ``k + 1`` rows after the draft, with a prefix hit
        the prompts' reload from their tier overlapped with the step."""
        x, share = self.x, tokens / self.computed
        flops = decoders * self.seq_flops + share * self.prompt_flops
        nbytes = (
            weights_read(x, decoders * self.rows + tokens)
            + decoders * self.seq_kv
            + chunks * cache_bytes(x, prefix)
            + starts * cache_bytes(x, self.cached)
            + share * self.prompt_cache
        )
        step = physics.roofline_time(flops, nbytes, x["_peak"], x["_bandwidth"])
        step = step * pipeline_fill(x, decoders + chunks)  # whole sequences a micro-batch
        if served.caches_prefixes(x):
            reload = physics.reload_time(share * self.reload, x["_tier_bandwidth"])
            step = np.maximum(step, reload)
        if served.speculates(x):
            step = step + draft(x, x["spec_tokens"], self.context, batch=decoders)[0]
        return step

    def result(self, ttft: Any, tpot: Any, rate: Any, steady: Any, share: Any) -> dict[str, Any]:
        """A mode's terms from its TTFT, TPOT (NaN at O = 1), request rate and steady step."""
        tpot = where(self.decodes, tpot, np.nan)
        if parallel(self.x):  # a prompt crosses every stage: never sooner than alone
            ttft = np.maximum(ttft, self.alone)
        return {
            "ttft": ttft,
            "tpot": tpot,
            "latency": ttft + where(self.decodes, (self.output - 1) * tpot, 0.0),
            "steady": steady,
            "per_device": physics.output_tokens_per_s_per_device(
                rate, self.output, self.x["_devices"]
            ),
            "rate": rate,
            "share": share,
        }


def bound(t: Terms) -> dict[str, Any]:
    """The fluid bound over every mode of the table with ``B`` slots (section 2).

    Its token budget is the largest step any of them takes, ``L = max(B I, tau)``: the
    chunked schedulers keep within ``tau``, while a static batch and batched prefills carry
    up to ``B`` whole prompts, so no mode of the table passes the bound whatever its budget
    (``bounds.plain_time``).
    """
    if bounds.techniques(t.x):
        return bounds.technique_bound(t, bounds.bound_tpot(t))
    time = bounds.plain_time(t, bounds.plain_parts(t))
    return t.result(t.alone, bounds.bound_tpot(t), 1 / time, t.steady, np.nan)


def static(t: Terms) -> dict[str, Any]:
    """``B`` requests start together: TTFT ``t_p(B, I)``, then the decode steps summed. With
    speculation the mean request's steps give TPOT and latency, the slowest one's the batch's
    cycle and so the rate (``served.static_cycle``)."""
    x = t.x
    ttft = prefill_time(x, t.batch, t.prompt)
    decode = served.static_decode(x, t.prompt, t.output, t.flops, t.nbytes)
    latency = physics.request_latency(ttft, decode)
    slowest = served.static_cycle(x, t.prompt, t.output, t.flops, t.nbytes)
    cycle = physics.request_latency(ttft, slowest)
    tpot = physics.time_per_output_token(decode, t.output)
    out = t.result(ttft, tpot, t.batch / cycle, tpot, ttft / cycle)
    return {**out, "latency": latency}


def serial_prefill(t: Terms) -> dict[str, Any]:
    """Each prompt prefilled alone, as its own step, when a slot frees (the old colocated)."""
    rate = physics.colocated_request_rate(t.batch, t.output, t.steady, t.alone)
    tpot = physics.serial_prefill_tpot(t.batch, t.output, t.steady, t.alone)
    if served.speculates(t.x):  # slots free at random steps: the others' prefills as they come
        stalls = physics.random_stalls(t.batch, np.maximum(t.steps, 1), 0.5)
        tpot = where(t.random, t.steady + stalls * t.alone / np.maximum(t.output - 1, 1), tpot)
    share = physics.prefill_time_share(rate, t.alone)
    spread = _spread(
        t,
        tpot,
        {
            f"tpot_{name}": physics.serial_prefill_tpot_quantile(
                q, t.batch, t.output, t.steady, t.alone
            )
            for name, q in QUANTILES.items()
        },
    )
    return {**t.result(t.alone, tpot, rate, t.steady, share), **spread}


def batched_prefill(t: Terms) -> dict[str, Any]:
    """The waiting prompts with a free slot prefilled together, one step per slot group."""
    x, cycle = t.x, t.output - 1
    small, _ = physics.slot_groups(t.batch, cycle)
    large, less = prefill_time(x, small + 1, t.prompt), prefill_time(x, small, t.prompt)
    prefills, own = physics.grouped(t.batch, cycle, large, less)
    rate = physics.batched_prefill_rate(t.batch, t.output, t.steady, prefills)
    tpot = physics.batched_prefill_tpot(t.output, t.steady, prefills, own)
    if served.speculates(x):
        # slots free at random steps, (B - 1) / n others with a request's predecessor: a
        # prefill costs about t_p(1, I) a prompt (the others' as they come, its own group's
        # at its size-biased mean), the rate as serial-prefill's
        steps = np.maximum(t.steps, 1)
        stalls = physics.random_stalls(t.batch, steps, 0.0)
        tpot = where(t.random, t.steady + stalls * t.alone / np.maximum(cycle, 1), tpot)
        serial = physics.colocated_request_rate(t.batch, t.output, t.steady, t.alone)
        rate = where(t.random, serial, rate)
        prefills_random = where(t.random, t.batch * t.alone, prefills)
        own = where(t.random, prefill_time(x, 1 + (t.batch - 1) / steps, t.prompt), own)
    else:
        prefills_random = prefills
    spread = _spread(
        t,
        tpot,
        {
            f"tpot_{name}": physics.batched_prefill_tpot_quantile(
                q, t.batch, t.output, t.steady, prefills, large, less
            )
            for name, q in QUANTILES.items()
        },
    )
    out = t.result(own, tpot, rate, t.steady, rate * prefills_random / t.batch)
    return {**out, **spread}


def _spread(t: Terms, tpot: Any, spread: dict[str, Any]) -> dict[str, Any]:
    """The TPOT percentiles of the slot groups, or ``tpot`` itself where slots free at random
    steps (speculation: no groups, the spread not modelled)."""
    if not served.speculates(t.x):
        return spread
    return {key: where(t.random, tpot, value) for key, value in spread.items()}


def _chunked(t: Terms, decoders: Any, chunk: Any) -> dict[str, Any]:
    """A balanced chunked step, every step: ``decoders`` decodes and ``chunk`` prompt tokens,
    the prompts streaming through: a step's first piece re-reads a mean ``I / 2`` prefix (and
    the cached ``h I`` before it with a prefix hit), and each of the ``chunk / I`` prompts
    that start within it reads its cached ``h I`` (a prompt reads its prefix at least once)."""
    computed = t.computed
    step = t.mixed_step(decoders, chunk, t.cached + computed / 2, 1.0, chunk / computed)
    rate = physics.chunked_request_rate(computed, chunk, step)
    ttft = physics.chunked_ttft(computed, chunk, step)
    tpot = step * served.steps_per_token(t.x, t.output)
    out = t.result(ttft, tpot, rate, step, chunk / (decoders * t.rows + chunk))
    return {**out, "chunk": chunk}


def chunked_paced(t: Terms) -> dict[str, Any]:
    """Sarathi-Serve: each step the decodes and the chunk that keeps them fed (balanced).

    In rows: a slot's ``k + 1`` rows a step over its ``n`` verify steps are the ``O - 1``
    decode tokens of a plain slot, so the balanced state is the plain one of ``B (k + 1)``
    slots and ``n (k + 1) + 1`` output tokens, its prompts the ``(1 - h) I`` tokens computed.
    Where the slots free at random and the budget does not bind, each prompt holds its slot
    from its first chunk (``analyses/paced.py``)."""
    slots, rows = t.batch * t.rows, t.steps * t.rows + 1
    decoders = physics.balanced_decoders(slots, t.computed, rows, t.budget)
    chunk = physics.paced_chunk(decoders, t.computed, rows, t.budget)
    out = _chunked(t, decoders / t.rows, chunk)
    limited = physics.budget_limited(slots, t.computed, rows, t.budget)
    if served.speculates(t.x):  # slots freed at random: each prompt holds its slot (paced.py)
        hold = t.random & ~limited
        slotted = paced.held(t, chunk, hold)
        out = {key: where(hold, slotted[key], value) for key, value in out.items()}
    return {**out, "limited": limited}


def _greedy_rows(t: Terms) -> Any:
    """The rows a slot holds of a ``chunked-greedy`` step: ``k + 1`` where requests decode, one
    at ``O = 1`` (no slot verifies; the plain schedule's, whatever ``k``) [1]."""
    return where(t.decodes, t.rows, 1.0)


def _greedy_one_at_a_time(t: Terms, steps: Any, n: Any, decode: Any) -> dict[str, Any]:
    """``chunked-greedy`` paced by its slots, one prompt at a time: a freed slot's prompt
    beside the ``B - 1`` other decodes (``r`` rows each) over ``s`` steps of ``tau - (B - 1) r``
    prompt tokens (the last the rest), then its ``n`` decode steps (``O - 1``; verify steps
    with speculation); the cycle's other steps decode all ``B`` (``decode`` each)."""
    batch, prompt, cached = t.batch, t.computed, t.cached
    room = t.budget - (batch - 1) * _greedy_rows(t)
    cut = where((steps > 1) | (cached > 0), 1.0, 0.0)  # a prefix to re-read
    full = t.mixed_step(batch - 1, room, cached + (steps - 2) / 2 * room, cut)
    last = t.mixed_step(batch - 1, prompt - (steps - 1) * room, cached + (steps - 1) * room, cut)
    own = (steps - 1) * full + last
    cycle = batch * own + (n + steps - batch * steps) * decode
    rate, tpot, ttft = physics.greedy_cycle(batch, t.output, cycle, own)
    return {"rate": rate, "tpot": tpot, "ttft": ttft, "cycle": cycle, "steps": n + steps}


def _greedy_groups(t: Terms, n: Any, decode: Any) -> dict[str, Any]:
    """``chunked-greedy`` paced by its slots, each freed group's prompts whole in one step:
    the slots free in the ``n`` groups of a warm start (``O - 1``; verify steps with
    speculation), each group's prompts prefilled in the step after it finishes, beside the
    other slots' decodes; a cycle of ``n + 1`` steps is those ``n`` and one step of all ``B``
    decodes (``decode``)."""
    batch, prompt, cached = t.batch, t.computed, t.cached
    small, _ = physics.slot_groups(batch, n)
    large_step = t.mixed_step(batch - small - 1, (small + 1) * prompt, cached, small + 1)
    small_step = t.mixed_step(batch - small, small * prompt, cached, small)
    prefills, own = physics.grouped(batch, n, large_step, small_step)
    cycle = prefills + where(t.decodes, decode, 0.0)
    rate, tpot, ttft = physics.greedy_cycle(batch, t.output, cycle, own)
    return {"rate": rate, "tpot": tpot, "ttft": ttft, "cycle": cycle, "steps": n + 1}


def _greedy_fixed(t: Terms, n: Any, decode: Any, tokens: Any) -> dict[str, Any]:
    """``chunked-greedy`` whose requests take ``n`` decode steps each, fixed (``O - 1``, or
    with speculation at acceptance 0 or 1 its verify steps): paced by its slots (a freed
    group's prompts whole in one step, or one prompt at a time over ``s`` steps) or by its
    budget (it fills every step: the balanced state, as paced). ``decode`` is a step of all
    ``B`` decodes, ``tokens`` the rows a request's decodes carry (``O - 1`` plain)."""
    batch, prompt, rows = t.batch, t.computed, _greedy_rows(t)
    steps = physics.greedy_prefill_steps((batch - 1) * rows + 1, prompt, t.budget)
    most = np.ceil(batch / np.maximum(n, 1))
    grouped = (batch - most) * rows + most * prompt <= t.budget
    single = physics.greedy_slot_bound(batch, n + 1, steps)
    slots = grouped | single
    decoders = np.minimum(batch, t.budget * n / (prompt + n * rows))
    # every slot decoding, the budget's leftover past what they ask: the prompts a step takes
    # are the B I / n that keep the slots fed, not the leftover (no slot to prefill into)
    fed = batch * prompt / np.maximum(n, 1)
    chunk = where(
        decoders >= batch, np.minimum(t.budget - decoders * rows, fed), t.budget - decoders * rows
    )
    full = _chunked(t, decoders, chunk)
    groups, one = _greedy_groups(t, n, decode), _greedy_one_at_a_time(t, steps, n, decode)
    paced = {key: where(grouped, groups[key], one[key]) for key in groups}
    share = prompt / (prompt + tokens)
    steady = paced["cycle"] / paced["steps"]
    free = t.result(paced["ttft"], paced["tpot"], paced["rate"], steady, share)
    out = {key: where(slots, free[key], full[key]) for key in free}
    out["chunk"] = where(slots, batch * prompt / paced["steps"], full["chunk"])
    return {**out, "limited": ~slots, "decoders": decoders}


def chunked_greedy(t: Terms) -> dict[str, Any]:
    """vLLM V1: decodes first, the whole leftover budget to the waiting prompts, ``B`` slots
    counting prefilling requests (``_greedy_fixed``). With a prefix hit its prompts are the
    tokens computed. With speculation a request's verify steps are fixed at acceptance 0
    (``O - 1``) and 1 (``ceil((O - 1) / (k + 1))``), the same schedule of ``k + 1`` rows a
    slot; at random acceptance its slots free at random steps (``greedy.random_slots``:
    freed prompts whole in the step after, null where they queue for the budget)."""
    output = t.output
    plain = _greedy_fixed(t, output - 1, t.steady, output - 1)
    del plain["decoders"]
    if not served.speculates(t.x):
        return plain
    x = t.x
    k, alpha, tokens = x["spec_tokens"], x["spec_acceptance"], output - 1
    fixed_steps = where(alpha >= 1, np.ceil(tokens / (k + 1)), tokens)  # a = 0 or 1
    n = where(t.random, t.steps, fixed_steps)  # at random acceptance: its budget-paced state
    fixed = _greedy_fixed(t, n, t.mixed_step(t.batch, 0.0, 0.0, 0.0), n * t.rows)
    free = random_slots(t)
    randomly = t.result(free["ttft"], free["tpot"], free["rate"], free["steady"], free["share"])
    randomly = {**randomly, "chunk": free["chunk"], "limited": fixed["limited"]}
    at_random = t.random & t.decodes & ~fixed["limited"]  # slots freeing at random pace it
    # paced by its budget at random acceptance: balanced where its decodes keep off the slots
    headroom = physics.balanced_headroom(t.batch, fixed["decoders"])
    off = where(t.random & fixed["limited"] & (headroom < HEADROOM), np.nan, 0.0)
    fixed = {
        key: value + off if key not in ("limited", "decoders") else value
        for key, value in fixed.items()
    }
    spec = {key: where(at_random, randomly[key], fixed[key]) for key in plain}
    return {key: where(k > 0, spec[key], value) for key, value in plain.items()}


PRICED = {mode.name: globals()[mode.closed_form] for mode in MODES}
"""Each mode's terms, by name: the closed form its record names
(``sweeps.schedulers``)."""
