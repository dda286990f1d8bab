"""The named schedulers priced on expected step costs (docs/expected.md, "Serving").

The serving table's closed forms (docs/serving.md sections 1 and 3) are sums and ratios of
step times: ``t_d(B, S_mean)``, ``t_p(m, I)``, a chunked step's ``t_mix``. Here each of those
steps is the expected one (``steps.ExpectedSteps``) evaluated at exactly the points the closed
form names, and the algebra is the package's own (``sweeps.physics``: the slot groups, the
rates, the TPOTs), so a mode's expected figure is what that scheduler is expected to reach on
the measured kernels, saturated. No bound is priced here: an expectation bounds nothing.

Each function takes the steps of one configuration at its batch ``B`` and the workload's
``I``, ``O`` (arrays, broadcast) and returns ``ttft``, ``tpot`` (NaN at ``O = 1``),
``latency``, ``steady`` (the mode's steady step), ``rate`` (requests/s a replica) [s, 1/s].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from sweeps import physics
from sweeps.studies.expected.steps import ExpectedSteps
from sweeps.studies.serving import closed_forms


def _result(ttft: Any, tpot: Any, rate: Any, steady: Any, output: Any) -> dict[str, Any]:
    decodes = np.asarray(output) > 1
    tpot = np.where(decodes, tpot, np.nan)
    latency = ttft + np.where(decodes, (output - 1) * np.nan_to_num(tpot), 0.0)
    return {"ttft": ttft, "tpot": tpot, "latency": latency, "steady": steady, "rate": rate}


def _steady(e: ExpectedSteps, prompt: Any, output: Any) -> Any:
    """``t_d(B, S_mean)`` on expected steps, ``S_mean = I + O / 2`` [s]."""
    return e.decode(e.batch, physics.mean_context(prompt, output))


def serial_prefill(e: ExpectedSteps, prompt: Any, output: Any, budget: float) -> dict[str, Any]:
    """Each prompt prefilled alone, as its own step, when a slot frees."""
    batch, steady, alone = e.batch, _steady(e, prompt, output), e.prefills(1, prompt)
    rate = physics.colocated_request_rate(batch, output, steady, alone)
    tpot = physics.serial_prefill_tpot(batch, output, steady, alone)
    return _result(alone, tpot, rate, steady, output)


def batched_prefill(e: ExpectedSteps, prompt: Any, output: Any, budget: float) -> dict[str, Any]:
    """The waiting prompts with a free slot prefilled together, one step per slot group."""
    batch, steady, cycle = e.batch, _steady(e, prompt, output), output - 1
    small, _ = physics.slot_groups(batch, cycle)
    large, less = e.prefills(small + 1, prompt), e.prefills(small, prompt)
    prefills, own = physics.grouped(batch, cycle, large, less)
    rate = physics.batched_prefill_rate(batch, output, steady, prefills)
    tpot = physics.batched_prefill_tpot(output, steady, prefills, own)
    return _result(own, tpot, rate, steady, output)


def static(e: ExpectedSteps, prompt: Any, output: Any, budget: float) -> dict[str, Any]:
    """``B`` requests start together: ``t_p(B, I)``, then the decode steps at ``I + j``."""
    batch = e.batch
    prompt, output = np.broadcast_arrays(np.asarray(prompt), np.asarray(output))
    ttft = e.prefills(batch, prompt)
    decode = np.zeros(prompt.shape)
    for at in np.ndindex(prompt.shape):  # the sum over j = 1 .. O - 1, each I once
        steps = np.arange(1, int(output[at]))
        decode[at] = float(np.sum(e.decode(batch, prompt[at] + steps)))
    latency = ttft + decode
    tpot = decode / np.maximum(output - 1, 1)
    result = _result(ttft, tpot, batch / latency, tpot, output)
    return {**result, "latency": latency}


def chunked_paced(e: ExpectedSteps, prompt: Any, output: Any, budget: float) -> dict[str, Any]:
    """Sarathi-Serve: each step the decodes and the chunk that keeps them fed (balanced), the
    mean mixed step on expected steps (``ExpectedSteps.mixed``)."""
    batch = e.batch
    decoders = physics.balanced_decoders(batch, prompt, output, budget)
    chunk = physics.paced_chunk(decoders, prompt, output, budget)
    step = e.mixed(decoders, physics.mean_context(prompt, output), chunk, prompt)
    rate = physics.chunked_request_rate(prompt, chunk, step)
    ttft = physics.chunked_ttft(prompt, chunk, step)
    return _result(ttft, step, rate, step, output)


class _Plain:
    """Inputs of a grid with no technique axes (no speculation, no prefix hit, no parallel
    layout): what the serving closed forms ask of their inputs beside the terms."""

    values: dict[str, Any] = {}  # noqa: RUF012 - read only


class _Terms:
    """What ``sweeps.studies.serving.closed_forms``' chunked-greedy reads of its ``Terms``, on
    expected steps: the workload, the steady decode step and the mixed step of
    ``decoders`` decodes at the mean context and ``tokens`` prompt tokens in ``chunks`` pieces
    after a mean ``prefix`` (each piece its increment of the prompt's attention; a piece longer
    than what is left of a prompt spans prompts, each paying its share, ``P(I) c / I``)."""

    def __init__(self, e: ExpectedSteps, prompt: Any, output: Any, budget: float) -> None:
        self.e, self.x = e, cast(Any, _Plain())
        self.batch, self.prompt, self.output, self.budget = e.batch, prompt, output, budget
        self.decodes = np.asarray(output) > 1
        self.context = physics.mean_context(prompt, output)
        self.computed, self.cached, self.rows, self.random = prompt, 0.0, 1.0, False
        self.steps = output - 1
        self.steady = _steady(e, prompt, output)

    def mixed_step(
        self, decoders: Any, tokens: Any, prefix: Any, chunks: Any, starts: Any = 0.0
    ) -> Any:
        """A step of decodes and prompt pieces on expected steps [s]. ``starts``, the pieces
        that begin a prompt and read its cached prefix hit (``Terms.mixed_step``), costs
        nothing here: these are the plain points, no prompt has a cached prefix to read (with
        a hit, ``composed.Composed.mixed_step`` prices it)."""
        e, piece = self.e, tokens / np.maximum(chunks, 1)
        within = prefix + piece <= self.computed  # else a piece spans prompts: the mean share
        increments = chunks * (e.prompt(prefix + piece) - e.prompt(prefix))
        attention = np.where(within, increments, tokens / self.computed * e.prompt(self.computed))
        return e.linear(decoders + tokens) + decoders * e.per_decode(self.context) + attention

    def result(self, ttft: Any, tpot: Any, rate: Any, steady: Any, share: Any) -> dict[str, Any]:
        """A mode's figures, as ``Terms.result`` gives them (per device left to the caller)."""
        return {**_result(ttft, tpot, rate, steady, self.output), "share": share}


def chunked_greedy(e: ExpectedSteps, prompt: Any, output: Any, budget: float) -> dict[str, Any]:
    """vLLM V1: decodes first, the whole leftover budget to the waiting prompts, ``B`` slots
    counting prefilling requests: the serving table's closed form
    (``closed_forms.chunked_greedy``) on expected steps."""
    return closed_forms.chunked_greedy(cast(Any, _Terms(e, prompt, output, budget)))


Priced = Callable[[ExpectedSteps, Any, Any, float], dict[str, Any]]

PRICED: dict[str, Priced] = {
    "static": static,
    "serial-prefill": serial_prefill,
    "batched-prefill": batched_prefill,
    "chunked-paced": chunked_paced,
    "chunked-greedy": chunked_greedy,
}
"""The modes priced on expected steps, by name (``sweeps.schedulers``)."""

NOT_PRICED: dict[str, str] = {
    "bound": "a bound has no expectation: it holds for every scheduler",
}
"""Why a mode has no expected figure."""


def prompts_a_step(mode: str, batch: int, output: float) -> int:
    """The prompts a prefill step of ``mode`` carries, whose attention the simulator's tables
    price each prompt at (``steps.ExpectedSteps.step_costs``): a static batch's ``B``, the slot
    group most slots free in for batched-prefill (``B / (O - 1)`` rounded, at least 1), one
    for the others (a prompt alone, or a chunk or two a step) [prompt]."""
    if mode == "static":
        return int(batch)
    if mode == "batched-prefill" and output > 1:
        return max(1, round(batch / (output - 1)))
    return 1


def prompt_counts(batch: int, outputs: Any) -> tuple[int, ...]:
    """Every prompt count the modes' closed forms read at batch ``B`` and outputs ``O``: one,
    ``B`` (static) and the slot groups' ``q`` and ``q + 1`` (batched-prefill) [prompt]."""
    cycles = np.maximum(np.atleast_1d(np.asarray(outputs, dtype=np.int64)) - 1, 1)
    small = batch // cycles
    return tuple(sorted({1, int(batch), *(int(q) for q in small), *(int(q) + 1 for q in small)}))


def priced(
    mode: str, e: ExpectedSteps, prompt: Any, output: Any, budget: float = math.inf
) -> dict[str, Any]:
    """``mode``'s expected figures (all NaN where it is not priced or ``e`` has no data)."""
    if mode not in PRICED:
        nan = np.full(np.broadcast_shapes(np.shape(prompt), np.shape(output)), np.nan)
        return {k: nan for k in ("ttft", "tpot", "latency", "steady", "rate")}
    return PRICED[mode](e, prompt, output, budget)
