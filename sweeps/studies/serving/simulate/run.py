"""One simulation: requests drawn, dispatched to replicas, each replica's loop run compiled.

``simulate`` takes the grid's inputs at one point (``simulate.costs.point_inputs``) or
ready ``StepCosts``, a named scheduler, the batch ``B`` and the token budget ``tau``, the
arrivals and the lengths, and returns every request's arrival, admission, first-token and
completion times (``Timeline``); ``simulate.stats`` turns them into the statistics.

A pool of ``replicas`` splits Poisson arrivals at random (each replica then sees a Poisson
stream at ``lambda / N``, as docs/serving.md section 4 assumes), a closed loop's clients and a
trace's requests in turn; the replicas share nothing, so each runs on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.errors import ConfigError
from sweeps.studies.serving.simulate.costs import StepCosts, step_costs
from sweeps.studies.serving.simulate.kernel import (
    CHUNKED,
    HELD,
    PACED,
    SCHEDULER_CODES,
    replica_loop,
)
from sweeps.studies.serving.simulate.speculation import Techniques, techniques
from sweeps.studies.serving.simulate.workload import Arrivals, Lengths, Requests, draw_requests

NO_BUDGET = 2**62
"""The token budget of a step when none is set (chunking off) [token]."""


@dataclass(frozen=True)
class Timeline:
    """Every request's life in one simulation, in arrival order.

    arrival, admit, first, done : Arrival, first step carrying its prompt, first token out,
        last token out [s]
    prompt, output : Its tokens [token]
    replica : The replica that served it [1]
    makespan : Time of the last step's end, per replica [s]
    busy : Time spent running steps, per replica [s]
    steps : Steps run, per replica [1]
    concurrency : Clients of a closed loop (0 for open arrivals) [request]
    """

    arrival: np.ndarray
    admit: np.ndarray
    first: np.ndarray
    done: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    replica: np.ndarray
    makespan: np.ndarray
    busy: np.ndarray
    steps: np.ndarray
    concurrency: int = 0

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token of each request [s]."""
        return self.first - self.arrival

    @property
    def tpot(self) -> np.ndarray:
        """Mean time per output token after the first; NaN at ``O = 1`` [s]."""
        steps = self.output - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(steps > 0, (self.done - self.first) / np.maximum(steps, 1), np.nan)

    @property
    def latency(self) -> np.ndarray:
        """End-to-end latency of each request [s]."""
        return self.done - self.arrival

    @property
    def wait(self) -> np.ndarray:
        """Time from arrival to the first step carrying the prompt [s]."""
        return self.admit - self.arrival


def _check(scheduler: str, batch: int, budget: int, replicas: int) -> int:
    if scheduler not in SCHEDULER_CODES:
        msg = (
            f"scheduler = {scheduler!r} is not a named scheduler "
            f"(allowed: {', '.join(SCHEDULER_CODES)})"
        )
        raise ConfigError(msg)
    if not int(batch) == batch >= 1:
        msg = f"batch = {batch!r} must be a whole number >= 1"
        raise ConfigError(msg)
    if not int(replicas) == replicas >= 1:
        msg = f"replicas = {replicas!r} must be a whole number >= 1"
        raise ConfigError(msg)
    code = SCHEDULER_CODES[scheduler]
    if code in CHUNKED and not budget > batch:
        msg = f"chunk_tokens = {budget!r} must be larger than the batch ({batch}) for {scheduler}"
        raise ConfigError(msg)
    return code


def _max_tokens(code: int, batch: int, budget: int, prompt: np.ndarray, rows: int = 1) -> int:
    """The largest step a scheduler can run on these prompts, ``rows`` tokens a decode
    (``k + 1`` with speculation) [token]."""
    if code in CHUNKED:
        return int(max(min(budget, batch * rows + int(prompt.sum())), batch * rows))
    largest = np.sort(prompt)[-batch:]
    return int(max(batch * rows, int(largest.sum())))


def _split(requests: Requests, arrivals: Arrivals, replicas: int, seed: int) -> np.ndarray:
    """The replica of each request: at random for Poisson, in turn otherwise [1]."""
    n = requests.prompt.size
    if arrivals.kind == "poisson" and replicas > 1:
        rng = np.random.default_rng([seed, 1])
        return rng.integers(0, replicas, n)
    return np.arange(n) % replicas


def pace(batch: int, prompt: float, output: float, rows: int = 1, acceptance: float = 0.0) -> float:
    """Prompt tokens a paced step carries on average, ``B I / (O - 1)`` at the workload's mean
    lengths (``inf`` at ``O = 1``: the whole budget) [token]; with speculation ``B I / n``,
    ``n`` the verify steps of ``O - 1`` tokens (``sweeps.physics.verify_steps``)."""
    if output <= 1:
        return float("inf")
    if rows == 1:
        return batch * prompt / (output - 1)
    return batch * prompt / float(physics.verify_steps(output - 1, rows - 1, acceptance))


def held_slots(code: int, batch: int, budget: int, paced: float, rows: int, alpha: float) -> int:
    """``chunked-paced``'s loop: ``HELD`` where its slots free at random (``k > 0``,
    ``0 < alpha < 1``) and its pace fits the budget beside every slot's rows (not
    budget-limited, ``B (k + 1) + pace <= tau``): prompts fed at the mean rate into slots that
    free at random would queue for them after their first token, a driftless walk; a prompt
    that holds its slot from its first chunk cannot wait for one (docs/serving.md). Else the
    code as given."""
    random = rows > 1 and 0.0 < alpha < 1.0
    if code == PACED and random and batch * rows + paced <= budget:
        return HELD
    return code


def mean_lengths(
    arrivals: Arrivals, lengths: Lengths, prompt: int, output: int
) -> tuple[float, float]:
    """The mean prompt and output of the workload (a trace's or a CSV's own) [token]."""
    if arrivals.kind == "trace":
        return float(arrivals.prompts.mean()), float(arrivals.outputs.mean())
    if lengths.kind == "csv":
        return float(lengths.pairs[:, 0].mean()), float(lengths.pairs[:, 1].mean())
    return float(prompt), float(output)


def _run_replica(
    costs: StepCosts, req: Requests, code: int, batch: int, budget: int, paced: float,
    use_numba: bool | None, extra: Techniques | None, seed: int,
) -> tuple[np.ndarray, ...]:  # fmt: skip
    n = req.prompt.size
    admit, first, done = np.full(n, -1.0), np.full(n, -1.0), np.full(n, -1.0)
    totals = np.zeros(3)
    arrival = req.arrival.copy()
    if extra is None or (extra.rows == 1 and extra.hit_rate == 0):  # plain: the grid's tables
        step, cache, rows, passes, shift = costs.decode_flops, costs.cache, 1, 0, 0
        draft = (np.zeros(1), np.zeros(1), np.zeros(1))
        draws, starts = np.zeros(0, np.int64), np.zeros(n, np.int64)
        cached, tier = np.zeros(n, np.int64), np.inf
    else:
        step, cache, rows = extra.verify_flops, extra.verify_cache, extra.rows
        passes, shift = extra.draft_passes, extra.draft_shift
        draft = (extra.draft_flops, extra.draft_cache, extra.draft_weights)
        draws, starts = extra.draws(req.output, seed)
        cached, tier = extra.cached(req.prompt), extra.tier_bandwidth
    replica_loop(use_numba)(
        arrival, req.prompt, req.output, req.released, req.warm, step, costs.cache,
        costs.pairs, costs.weights, costs.token_flops, costs.pair_flops, costs.logit_flops,
        costs.peak, costs.bandwidth, batch, budget, code, paced,
        admit, first, done, totals,
        cache, rows, draws, starts, passes, shift, *draft, cached, tier, costs.stages,
        costs.fixed_table(),
    )  # fmt: skip
    return arrival, admit, first, done, totals


def simulate(  # long: the one entry point, its arguments checked and the replicas gathered
    point: Any,
    scheduler: str,
    batch: int,
    *,
    arrivals: Arrivals,
    requests: int = 10_000,
    prompt: int = 2048,
    output: int = 256,
    lengths: Lengths | None = None,
    budget: int = 0,
    replicas: int = 1,
    seed: int = 0,
    use_numba: bool | None = None,
    extra: Techniques | None = None,
) -> Timeline:
    """Simulate ``requests`` requests on ``replicas`` replicas running ``scheduler``.

    ``point`` is the grid's inputs at one point (``point_inputs``) or ``StepCosts`` large
    enough for the requests. ``budget`` is the token budget ``tau`` (0: none; the chunked
    schedulers need one above ``batch``). ``prompt`` and ``output`` are the lengths' means.
    Speculation and prefix hits (``simulate.speculation``) are the point's own where
    it has their axes; with ready ``StepCosts`` they are ``extra`` (None: plain).
    ``use_numba``: None runs the compiled loop where numba (the ``fast`` extra) is installed,
    else the interpreted one (the same numbers); False the interpreted one; True the compiled
    one, a ``MissingExtraError`` where numba is not installed.
    """
    tau = int(budget) if budget > 0 else NO_BUDGET
    code = _check(scheduler, batch, tau, replicas)
    replica_loop(use_numba)  # a compiled loop asked for without numba: said before any work
    if requests < 1 and arrivals.kind != "trace":
        msg = f"simulate = {requests!r} requests must be >= 1"
        raise ConfigError(msg)
    lengths = lengths or Lengths()
    req = draw_requests(arrivals, lengths, prompt, output, requests, seed)
    if isinstance(point, StepCosts):
        costs = point
    else:
        context = int((req.prompt + req.output).max())
        extra = techniques(point, context, batch)
        tokens = _max_tokens(code, batch, tau, req.prompt, extra.rows)
        costs = step_costs(point, context, tokens)
    rows, alpha = (extra.rows, extra.acceptance) if extra is not None else (1, 0.0)
    mean_prompt, mean_output = mean_lengths(arrivals, lengths, prompt, output)
    hit = extra.hit_rate if extra is not None else 0.0
    computed = mean_prompt if hit == 0 else max(mean_prompt * (1 - hit), 1.0)
    paced = pace(batch, computed, mean_output, rows, alpha)
    code = held_slots(code, batch, tau, paced, rows, alpha)
    which = _split(req, arrivals, replicas, seed)
    n = req.prompt.size
    out = {k: np.empty(n) for k in ("arrival", "admit", "first", "done")}
    totals = np.zeros((replicas, 3))
    for r in range(replicas):
        mine = np.flatnonzero(which == r)
        if mine.size == 0:
            continue
        released = _released(arrivals, req, mine, replicas, r)
        warm = min(int(np.count_nonzero(mine < req.warm)), batch)
        part = Requests(req.arrival[mine], req.prompt[mine], req.output[mine], released, warm)
        arrival, admit, first, done, totals[r] = _run_replica(
            costs, part, code, batch, tau, paced, use_numba, extra, seed + r
        )
        for key, values in zip(out, (arrival, admit, first, done), strict=True):
            out[key][mine] = values
    order = np.argsort(out["arrival"], kind="stable")
    return Timeline(
        **{k: v[order] for k, v in out.items()},
        prompt=req.prompt[order],
        output=req.output[order],
        replica=which[order],
        makespan=totals[:, 0],
        busy=totals[:, 1],
        steps=totals[:, 2].astype(np.int64),
        concurrency=int(arrivals.concurrency) if arrivals.kind == "closed" else 0,
    )


def _released(arrivals: Arrivals, req: Requests, mine: np.ndarray, replicas: int, r: int) -> int:
    """Requests of replica ``r`` whose arrival is known at the start."""
    if arrivals.kind != "closed":
        return int(mine.size)
    clients = req.released // replicas + (1 if r < req.released % replicas else 0)
    return int(min(clients, mine.size))
