"""The named schedulers step by step, in plain Python, for the tests that check the closed forms.

``Costs`` prices one step from the grid's own per-step functions at one point of a sweep
(tests/test_schedulers.py holds it equal to the decode and prefill tables); ``saturate`` runs
one scheduler with a backlog and measures its rate, TTFT and TPOT; ``Run(..., warm=False)``
starts empty, for the adversaries that try to beat the bound over every scheduler.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

# --- the named schedulers, step by step (docs/serving.md section 3) ------------------------


class Costs:
    """What one step costs, from the grid's own per-step functions at one point of a sweep.

    A step carries decodes, each at its own context ``S`` (the tokens it attends over), and
    prompt pieces ``(p, c, last)``: ``c`` tokens after a cached prefix of ``p``, ``last`` when
    the piece ends its prompt (the logits of its last token). FLOPs: each decode's, each
    piece's linear layers and causal pairs (``F(p + c) - F(p)`` of one prompt's prefill
    FLOPs ``F``) and the logits of a last piece (``F(0)``). Bytes: the weights once for the
    step's tokens, each decode's cache, each piece's prefix read and its own KV writes
    (``cache(p + c)``). Time: the roofline.
    """

    def __init__(self, sweep: object, point: dict[str, int] | None = None) -> None:
        from sweeps.engine.steps import (
            cache_bytes,
            prefill_work,
            step_coefficients,
            weights_read,
        )
        from sweeps.grid.analyses import Inputs
        from sweeps.grid.scalar import POSITION, ScalarEngine, input_table, pointwise

        index = [0] * len(POSITION)
        for dim, i in (point or {}).items():
            index[POSITION[dim]] = i
        table = input_table(sweep)  # type: ignore[arg-type]
        values = {
            name: data.item(*(index[p] for p in positions))
            for name, (positions, data) in table.items()
        }
        results: dict[str, object] = {}
        for analysis in pointwise(sweep):  # type: ignore[arg-type]
            options = sweep.options
            results.update(analysis.compute(Inputs(values, options, ScalarEngine(), results)))
        x = Inputs(values, sweep.options, ScalarEngine(), results)
        self.peak, self.bandwidth = float(x["_peak"]), float(x["_bandwidth"])
        self.window = float(x["_window"])
        flops, nbytes = step_coefficients(x, 1)
        self._flops = tuple(float(f) for f in flops)
        self._kv = (float(nbytes[1]), float(nbytes[2]))
        self._weights = lambda tokens: float(weights_read(x, tokens))
        self._cache = lambda tokens: float(cache_bytes(x, tokens))
        self._prompt = lambda tokens: float(prefill_work(x, 1, tokens)[0])
        self.tp = int(x["tp"])

    def decode(self, contexts: np.ndarray) -> tuple[float, float]:
        """FLOPs and cache bytes of decodes at ``contexts``."""
        local = np.minimum(contexts, self.window)
        f0, f_full, f_loc = self._flops
        flops = float(np.sum(f0 + f_full * contexts + f_loc * local))
        return flops, float(np.sum(self._kv[0] * contexts + self._kv[1] * local))

    def step(self, contexts: np.ndarray, pieces: list[tuple[int, int, bool]]) -> float:
        """The roofline time of one step [s]."""
        flops, nbytes = self.decode(np.asarray(contexts, dtype=np.float64))
        tokens = len(contexts)
        for prefix, chunk, last in pieces:
            flops += self._prompt(prefix + chunk) - self._prompt(prefix)
            flops += self._prompt(0) if last else 0.0
            nbytes += self._cache(prefix + chunk)
            tokens += chunk
        nbytes += self._weights(tokens)
        return max(flops / self.peak, nbytes / self.bandwidth)


class Run:
    """One replica with ``B`` slots and a backlog, stepped by one named scheduler.

    It starts warm: ``B`` requests decoding, their progress evenly spread over a request's
    ``O - 1`` decode steps (as if the server had been running), so the slots free one group at
    a time, the steady state the closed forms describe. Each completed request records its
    finish time, TTFT (from admission: its prompt's first step) and TPOT.
    """

    def __init__(
        self,
        costs: Costs,
        batch: int,
        prompt: int,
        output: int,
        budget: float,
        warm: bool = True,
    ) -> None:
        self.costs, self.batch, self.prompt, self.output = costs, batch, prompt, output
        self.budget = budget
        steps = output - 1
        self.clock = 0.0
        # decoding slots: [decodes done, first-token time, ttft]; None times: warm-start ones
        self.decoding: list[list[float | None]] = (
            [[float((i * steps) // batch), None, None] for i in range(batch)]
            if steps and warm
            else []
        )
        self.done: list[tuple[float, float | None, float | None]] = []

    def _decode_contexts(self) -> np.ndarray:
        return np.array([self.prompt + float(d[0]) + 1 for d in self.decoding])  # type: ignore[arg-type]

    def _advance(self, pieces: list[tuple[int, int, bool]]) -> float:
        """Run one step of every decoding slot and ``pieces``; finished requests leave."""
        step = self.costs.step(self._decode_contexts(), pieces)
        self.clock += step
        kept = []
        for slot in self.decoding:
            slot[0] = float(slot[0]) + 1  # type: ignore[arg-type]
            if slot[0] >= self.output - 1:
                first, ttft = slot[1], slot[2]
                tpot = None if first is None else (self.clock - first) / (self.output - 1)
                self.done.append((self.clock, ttft, tpot))
            else:
                kept.append(slot)
        self.decoding = kept
        return step

    def _first_token(self, ttft: float) -> None:
        """A prompt's first token is out now: it decodes from the next step, or is done."""
        if self.output == 1:
            self.done.append((self.clock, ttft, None))
        else:
            self.decoding.append([0.0, self.clock, ttft])


def _prefill_step(run: Run, prompts: int) -> None:
    """``prompts`` whole prompts prefilled together, as their own step."""
    start = run.clock
    run.clock += run.costs.step(np.zeros(0), [(0, run.prompt, True)] * prompts)
    for _ in range(prompts):
        run._first_token(run.clock - start)


def serial_prefill(run: Run) -> None:
    """One step: a prompt alone when a slot is free, else the decodes."""
    if len(run.decoding) < run.batch:
        _prefill_step(run, 1)
    else:
        run._advance([])


def batched_prefill(run: Run) -> None:
    """One step: every free slot's prompt prefilled together, else the decodes."""
    free = run.batch - len(run.decoding)
    if free > 0:
        _prefill_step(run, free)
    else:
        run._advance([])


def _take(
    run: Run, queue: list[list[float]], room: float, admit: int
) -> list[tuple[int, int, bool]]:
    """Pieces of ``room`` prompt tokens from ``queue`` (``[done, admitted at]``, FIFO), and
    up to ``admit`` new prompts from the backlog when the queue runs out."""
    pieces = []
    index = 0
    while room >= 1:
        if index == len(queue):
            if admit <= 0:
                break
            queue.append([0.0, run.clock])
            admit -= 1
        done = int(queue[index][0])
        take = int(min(room, run.prompt - done))
        pieces.append((done, take, done + take == run.prompt))
        queue[index][0] = done + take
        room -= take
        index += 1
    return pieces


class Chunked:
    """The state of a chunked scheduler beside its ``Run``: prompts being prefilled
    (``[tokens done, first step's start]``) and, for the paced one, prefilled prompts
    waiting for a slot and the token credit."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.prefilling: list[list[float]] = []
        self.ready: list[tuple[float, float]] = []  # prefilled: (TTFT, first token's time)
        self.credit = 0.0

    def _finish(self, pieces: list[tuple[int, int, bool]]) -> list[float]:
        """TTFTs of the prompts whose last piece ran this step (they leave the queue)."""
        run, ttfts = self.run, []
        while self.prefilling and self.prefilling[0][0] >= run.prompt:
            ttfts.append(run.clock - self.prefilling.pop(0)[1])
        return ttfts

    def paced(self) -> None:
        """Sarathi-Serve: every decode, and prompt tokens at the pace that keeps ``B`` slots
        fed, ``B I / (O - 1)`` a step (a credit carried over), within the budget; prefilled
        prompts wait for a slot, at most ``B`` of them."""
        run = self.run
        while self.ready and len(run.decoding) < run.batch:  # admitted: decodes this step
            ttft, first = self.ready.pop(0)
            run.decoding.append([0.0, first, ttft])
        steps = run.output - 1
        pace = run.batch * run.prompt / steps if steps else run.budget
        self.credit = min(self.credit + pace, 2 * pace + 1)
        cap, want = run.budget - len(run.decoding), math.floor(self.credit)
        room = min(cap, want) if len(self.ready) < run.batch else 0
        pieces = _take(run, self.prefilling, room, admit=10**9)
        taken = sum(piece[1] for piece in pieces)
        self.credit = self.credit - taken if want <= cap else 0.0  # the budget binds: no debt
        run._advance(pieces)
        for ttft in self._finish(pieces):
            if run.output == 1:
                run.done.append((run.clock, ttft, None))
            else:  # its first token is out now; the slot it waits for adds to its TPOT
                self.ready.append((ttft, run.clock))

    def greedy(self) -> None:
        """vLLM V1: decodes first, the whole leftover budget to the prompts being prefilled
        and then to new ones, ``B`` slots counting the prefilling requests."""
        run = self.run
        room = run.budget - len(run.decoding)
        admit = run.batch - len(run.decoding) - len(self.prefilling)
        pieces = _take(run, self.prefilling, room, admit)
        run._advance(pieces)
        for ttft in self._finish(pieces):
            run._first_token(ttft)


def oracles(run: Run, chunked: Chunked) -> dict[str, Callable[[], None]]:
    """One step of each named scheduler's plain loop, by name: the oracle of its closed form
    (``tests/test_scheduler_registry.py`` checks that every registered one has its loop)."""
    return {
        "serial-prefill": lambda: serial_prefill(run),
        "batched-prefill": lambda: batched_prefill(run),
        "chunked-paced": chunked.paced,
        "chunked-greedy": chunked.greedy,
    }


def saturate(
    costs: Costs,
    scheduler: str,
    batch: int,
    prompt: int,
    output: int,
    budget: float = math.inf,
    cycles: float = 4.0,
    warm: bool = True,
) -> dict[str, float]:
    """Run ``scheduler`` at saturation for about ``cycles`` request lives and measure its
    steady state: requests per second, mean TTFT and mean TPOT (NaN at ``O = 1``), over the
    completions of its second half. ``best_rate`` is the most completions per second it ever
    had since time 0 (``n(T) / T`` at each completion); from an empty start (``warm=False``)
    every completed request's work is in it, so no scheduler may pass the bound there."""
    run = Run(costs, batch, prompt, output, budget, warm)
    chunked = Chunked(run)
    step = oracles(run, chunked)[scheduler]
    wanted = int(batch * cycles) + 8
    while len(run.done) < wanted:
        step()
    kept = run.done[len(run.done) // 2 :]
    start, end = kept[0][0], kept[-1][0]
    # completions after the first one's time, up to the last's: whole groups at both ends
    after = sum(1 for time, _, _ in kept if time > start)
    ttfts = [t for _, t, _ in kept if t is not None]
    tpots = [t for _, _, t in kept if t is not None]
    best = max(n / time for n, (time, _, _) in enumerate(run.done, start=1))
    return {
        "best_rate": best,
        "min_ttft": min((t for _, t, _ in run.done if t is not None), default=math.nan),
        "rate": after / (end - start) if end > start else math.nan,
        "ttft": float(np.mean(ttfts)),
        "tpot": float(np.mean(tpots)) if tpots else math.nan,
    }
