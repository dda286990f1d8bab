"""The event loop of one replica: step after step, each priced by the roofline of what it carries.

Requests are held in arrival order (the first ``warm`` of them start in the slots, prefilled),
so every stage of a request's life is a range of indices:
``[0, arrived)`` have arrived, ``[ready, nxt)`` are prefilled and wait for a decode slot
(``chunked-paced`` only), ``nxt`` is the prompt being prefilled (``progress`` of its tokens done)
and ``[nxt, arrived)`` wait. Slots hold decoding requests, each at its own context. A step is
atomic: the schedule is decided at its start from what is there, its time is
``sweeps.physics.roofline_time`` of its FLOPs and bytes (``simulate.costs``), and what it
produces (first tokens, decoded tokens, finished requests) is there at its end.

Schedulers (docs/serving.md section 3), by code: ``STATIC`` (a batch of up to ``B`` waiting
prompts prefilled together, then decoded until every one is done), ``SERIAL`` (a prompt
prefilled alone, as its own step, whenever a slot is free; decodes otherwise), ``BATCHED`` (every
waiting prompt with a free slot prefilled together in one step), ``PACED`` (each step carries
every decode and ``min(tau - n_d, pace)`` prompt tokens on average, a token credit carried
between steps; prefilled prompts wait for a slot, at most ``B`` of them), ``GREEDY`` (every
decode, then the whole leftover budget to the waiting prompts in order, a prompt holding its
slot from its first chunk: ``max_num_seqs = B``), ``HELD`` (``chunked-paced`` where random
verify steps free its slots at random: a free slot takes the next waiting prompt, held from its
first chunk, which rides ``p = ceil(I / pace)`` steps in chunks of ``ceil(I / p)`` beside every
decode, the prompts prefilling together in order within the budget; no prompt waits for a slot
after its first token).

With speculation (``rows = k + 1``) a decode slot's step is a verify of ``k + 1`` rows from its
context (``decode_flops`` and ``verify_cache`` are then the verify step's tables, ``k + 1``
tokens of the step's budget and weight reads), the draft's ``draft_passes`` rooflines run
before it, and the slot advances by its next acceptance draw, cut to what it still needs. With
a prefix hit a prompt starts at its ``cached`` tokens, its prefix reloaded over
``tier_bandwidth`` overlapped with the step: ``max(roofline, reload)``
(``simulate.speculation``). ``rows = 1`` and no hit are the plain loop exactly. ``fixed[T]`` is
added to a step of ``T`` tokens: zeros for the bound, the body of an expected step
(``sweeps.studies.expected.steps``) where the tables carry measured seconds.

The loop is plain Python that numba compiles (``compiled``); without numba the same function
runs interpreted, step by step, and gives the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from sweeps import physics, schedulers
from sweeps.schedulers import (
    BATCHED,
    GREEDY,
    HELD,
    PACED,
    SCHEDULER_CODES,
    SERIAL,
    STATIC,
)

CHUNKED = (*(SCHEDULER_CODES[name] for name in schedulers.CHUNKED), HELD)
"""The schedulers that mix decodes and prompt chunks in one step under a token budget
(``HELD``: ``chunked-paced`` where its slots free at random, ``simulate.run``)."""

_roofline_time: Any = physics.roofline_time
"""The physics call of the loop: numba's compiled one once ``compiled`` has run (numba, the
``fast`` extra, is imported only there: a run that simulates nothing never loads it)."""


def loop(  # long: one event loop, its state in locals so that numba keeps it in registers
    arrival, prompt, output, closed, warm, decode_flops, cache, pairs, weights,
    token_flops, pair_flops, logit_flops, peak, bandwidth, slots, budget, scheduler, pace,
    admit, first, done, totals,
    verify_cache, rows, draws, draw_start, draft_passes, draft_shift, draft_flops, draft_cache,
    draft_weights, cached, tier_bandwidth, stages, fixed,
):  # fmt: skip
    n = prompt.size
    # the decoding requests, packed in [0, active): context, decode tokens left, request
    slot_ctx = np.zeros(slots, np.int64)
    slot_left = np.zeros(slots, np.int64)
    slot_req = np.zeros(slots, np.int64)
    slot_draw = np.zeros(slots, np.int64)  # the slot's next acceptance draw (speculation)
    held, active = 0, 0  # slots held (decoding, and prefilling for chunked-greedy), decoding
    t, busy, steps = 0.0, 0.0, 0
    arrived, nxt, progress, ready, finished, released = 0, 0, 0, 0, 0, closed
    credit = 0.0
    begun = False  # whether prompt nxt has had its first chunk (chunked schedulers)
    # HELD: the prompts prefilling in their held slots, in order, each with its chunk a step
    pre_req = np.zeros(slots, np.int64)
    pre_chunk = np.zeros(slots, np.int64)
    pre = 0
    done_to = np.zeros(n, np.int64)  # HELD: prompt tokens each prefilling request has done
    for r in range(warm):  # a warm start: prefilled, decoding, their first token at 0
        admit[r], first[r] = 0.0, 0.0
        slot_req[active], slot_ctx[active], slot_left[active] = r, prompt[r] + 1, output[r] - 1
        slot_draw[active] = draw_start[r]
        active += 1
    held, nxt, ready = active, warm, warm
    while finished < n:
        while arrived < n and arrival[arrived] <= t:
            arrived += 1
        if scheduler == PACED:  # prefilled prompts take the free slots, in order
            while ready < nxt and held < slots:
                if output[ready] > 1:
                    slot_req[active], slot_ctx[active] = ready, prompt[ready] + 1
                    slot_left[active] = output[ready] - 1
                    slot_draw[active] = draw_start[ready]
                    held += 1
                    active += 1
                ready += 1
        if scheduler == HELD:  # a free slot takes the next prompt, held from its first chunk
            while held < slots and nxt < arrived:
                computed = prompt[nxt] - cached[nxt]
                parts = max(int(np.ceil(computed / pace)), 1)
                pre_req[pre], pre_chunk[pre] = nxt, (computed + parts - 1) // parts
                done_to[nxt] = cached[nxt]
                admit[nxt] = t
                pre += 1
                held += 1
                nxt += 1
        # what the step carries: every decode or none, whole prompts or chunks
        whole = 0
        decodes = active > 0
        if scheduler == STATIC:
            if held == 0:
                whole = min(slots, arrived - nxt)
        elif scheduler in (SERIAL, BATCHED):
            room = slots - held if scheduler == BATCHED else min(slots - held, 1)
            whole = min(room, arrived - nxt)
            decodes = whole == 0 and active > 0
        flops, nbytes, tokens, reload, drafted = 0.0, 0.0, 0, 0.0, 0.0
        pieces = whole  # whole sequences and prompt pieces: a micro-batch holds whole ones
        if decodes:  # a verify step of ``rows`` rows a slot (1: a plain decode)
            for s in range(active):
                flops += decode_flops[slot_ctx[s]]
                nbytes += verify_cache[slot_ctx[s]]
            tokens += active * rows
            pieces += active
            for j in range(draft_passes):  # the draft's passes, each its own roofline
                draft_work, draft_bytes = 0.0, draft_weights[active]
                for s in range(active):
                    draft_work += draft_flops[slot_ctx[s] + draft_shift * j]
                    draft_bytes += draft_cache[slot_ctx[s] + draft_shift * j]
                drafted += _roofline_time(draft_work, draft_bytes, peak, bandwidth)
        start = nxt
        for r in range(nxt, nxt + whole):
            hit = cached[r]
            flops += token_flops * (prompt[r] - hit) + logit_flops
            flops += pair_flops * (pairs[prompt[r]] - pairs[hit])
            nbytes += cache[prompt[r]]
            reload += cache[hit]
            tokens += prompt[r] - hit
            admit[r] = t
        held += whole
        nxt += whole
        if scheduler in (PACED, GREEDY):
            allow = budget - tokens
            if scheduler == PACED:
                credit += pace
                allow = min(allow, int(min(credit, 1e18)))
                if nxt - ready >= slots:  # B prompts prefilled ahead already
                    allow = 0
                if tokens == 0 and allow < 1:
                    allow = 1
            used = 0
            while allow > 0 and nxt < arrived:
                if not begun:
                    if scheduler == GREEDY:
                        if held >= slots:
                            break
                        held += 1
                    admit[nxt] = t
                    begun = True
                    progress = cached[nxt]
                    reload += cache[progress]
                take = min(prompt[nxt] - progress, allow)
                stop = progress + take
                flops += token_flops * take + pair_flops * (pairs[stop] - pairs[progress])
                if stop == prompt[nxt]:
                    flops += logit_flops
                nbytes += cache[stop]
                tokens += take
                pieces += 1
                used += take
                allow -= take
                progress = stop
                if progress == prompt[nxt]:
                    nxt += 1
                    progress = 0
                    begun = False
            if scheduler == PACED:
                credit = min(credit - used, pace)
        if scheduler == HELD:  # each prefilling prompt its own chunk, in order, within budget
            allow = budget - tokens
            for i in range(pre):
                r = pre_req[i]
                take = min(pre_chunk[i], prompt[r] - done_to[r], allow)
                if take <= 0:
                    continue
                if done_to[r] == cached[r]:  # its first chunk: the prefix reloaded
                    reload += cache[cached[r]]
                stop = done_to[r] + take
                flops += token_flops * take + pair_flops * (pairs[stop] - pairs[done_to[r]])
                if stop == prompt[r]:
                    flops += logit_flops
                nbytes += cache[stop]
                tokens += take
                pieces += 1
                allow -= take
                done_to[r] = stop
        if tokens == 0:  # nothing to run: wait for the next arrival
            if arrived >= n:
                break
            t = max(t, arrival[arrived])
            continue
        nbytes += weights[tokens]
        # the reload from the prefix's tier overlapped with the step, the draft before it
        roof = _roofline_time(flops, nbytes, peak, bandwidth) + fixed[tokens]  # 0: the bound
        roof = roof * stages / min(max(pieces, 1), stages)  # fewer sequences than stages
        step = max(roof, reload / tier_bandwidth)
        step += drafted
        t += step
        busy += step
        steps += 1
        if decodes:
            for s in range(active - 1, -1, -1):  # backwards: a finished one takes the last's place
                advance = 1
                if rows > 1:  # the accepted drafts and the target's own token, cut to what is left
                    advance = min(draws[slot_draw[s]], slot_left[s])
                    slot_draw[s] += 1
                slot_ctx[s] += advance
                slot_left[s] -= advance
                if slot_left[s] == 0:
                    done[slot_req[s]] = t
                    active -= 1
                    slot_req[s], slot_ctx[s] = slot_req[active], slot_ctx[active]
                    slot_left[s], slot_draw[s] = slot_left[active], slot_draw[active]
                    held -= 1
                    finished += 1
                    if released < n:  # a closed loop's client sends its next request
                        arrival[released] = t
                        released += 1
        if scheduler == HELD:  # the prompts this step prefilled decode in the slots they hold
            kept = 0
            for i in range(pre):
                r = pre_req[i]
                if done_to[r] < prompt[r]:
                    pre_req[kept], pre_chunk[kept] = r, pre_chunk[i]
                    kept += 1
                    continue
                first[r] = t
                if output[r] == 1:
                    done[r] = t
                    finished += 1
                    held -= 1
                    if released < n:
                        arrival[released] = t
                        released += 1
                else:
                    slot_req[active], slot_ctx[active] = r, prompt[r] + 1
                    slot_left[active] = output[r] - 1
                    slot_draw[active] = draw_start[r]
                    active += 1
            pre = kept
        for r in range(start, nxt):  # the prompts whose prefill this step completed
            first[r] = t
            if output[r] == 1:
                done[r] = t
                finished += 1
                if scheduler != PACED:
                    held -= 1
                if released < n:
                    arrival[released] = t
                    released += 1
            elif scheduler != PACED:
                slot_req[active], slot_ctx[active] = r, prompt[r] + 1
                slot_left[active] = output[r] - 1
                slot_draw[active] = draw_start[r]
                active += 1
    totals[0], totals[1], totals[2] = t, busy, steps


@cache
def compiled() -> Callable[..., Any] | None:
    """The loop compiled by numba (``nogil``, IEEE division, machine code cached on disk keyed
    by the physics sources), or None without numba."""
    global _roofline_time
    try:
        import numba
    except ImportError:  # the same loop runs interpreted, over the same physics function
        return None
    _roofline_time = numba.njit(error_model="numpy", inline="always")(physics.roofline_time)
    return numba.njit(nogil=True, error_model="numpy", cache=True)(loop)


def replica_loop(use_numba: bool | None = None) -> Callable[..., Any]:
    """The loop to run: ``use_numba`` None: compiled where numba is installed, else
    interpreted; False: interpreted (with numba installed, its physics call is still the
    compiled one); True: compiled, and a ``MissingExtraError`` naming the ``fast`` extra
    where numba is not installed (never the interpreted loop in its place, unsaid)."""
    if use_numba is False:
        return loop
    compiled_loop = compiled()
    if compiled_loop is not None:
        return compiled_loop
    if use_numba:
        from sweeps.errors import MissingExtraError, install_hint

        msg = (
            "use_numba=True: the simulator's compiled loop needs numba, which is not "
            f"installed; install the fast extra: {install_hint('fast')} (or leave use_numba "
            "unset: compiled where numba is installed, else interpreted)"
        )
        raise MissingExtraError(msg)
    return loop
