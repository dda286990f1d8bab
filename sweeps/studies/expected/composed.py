"""The named schedulers on expected steps with speculation and prefix caching (issue 43).

Where a sweep has the speculative axes (``spec_tokens``, ``spec_acceptance``, ``spec_draft``)
or the prefix ones (``prefix_hit_rate``, ``kv_tier``), ``serving_expected`` prices each point
off their plain values (``k > 0`` or ``h > 0``; the plain points are ``priced``'s, bit for
bit) with the bound's algebra (``sweeps.studies.serving.closed_forms``, ``served``) on
expected steps (docs/expected.md, "Serving"):

- a decode token of a slot costs the expected verify step of ``B (k + 1)`` rows and the
  expected draft (``steps.Verify``), times the verify steps a token
  (``served.steps_per_token``), as the bound's ``token_time``: the steady step of
  serial- and batched-prefill, the sum of a static batch's steps (its slowest request's cycle
  ``E[max_B N] / n`` longer), and in a chunked step each decoding slot's ``k + 1`` rows and
  the draft of the decoding slots;
- a prefill of ``m`` prompts is the better of the expected hit prefill (``Hits``: the
  measured ``step.hit_prefill``, its ``h I`` whole tokens cached, the reload of their prefixes
  from ``kv_tier`` overlapped, ``physics.hit_time``) and recomputing it (the plain expected
  prefill), as the bound's ``served.prefill_time``;
- a chunked step carries the ``(1 - h) I`` tokens a prompt computes, each paying its share of
  their attention against the whole prompt ``P(I) - P(h I)`` (the plain ``P(I) c / I`` at
  ``h = 0``), each piece that begins a prompt reads its cached ``h I`` once (one decode's
  attention at that context: the bound's ``starts``, priced) and the prompts' reload is
  overlapped with the step, as ``Terms.mixed_step``.

``chunked-greedy`` is the bound's closed form itself on these steps (``Composed`` is its
``Terms``); ``chunked-paced`` where slots free at random (``0 < alpha < 1``) below its budget
holds them as the bound does (``serving.paced.held``, on a trailing axis here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sweeps import physics
from sweeps.physics._array import where
from sweeps.studies.expected.priced import _result
from sweeps.studies.expected.steps import ExpectedSteps, Verify, _read
from sweeps.studies.serving import closed_forms, served

UNPRICED = "no expected figure here (a step without an expectation)"
"""Why a point with a technique has no expected figure, where no other reason is known."""
ONE_TOKEN = (
    "at O = 1 no expected figure here: a step this mode's closed form reads is not in the "
    "expected steps' tables"
)
"""Why a point of one output token has no expected figure."""
GREEDY_NULL = (
    "chunked-greedy's schedule does not hold here (serving.greedy: slots freed at random whose "
    "prompts queue for the budget), as in the serving table"
)
"""Why a chunked-greedy point with a technique has no expected figure."""


@dataclass(frozen=True)
class Hits:
    """The expected hit prefills of one configuration at one hit rate, at the workload's
    prompts.

    counts : The prompt counts ``m`` of the steps tabulated [prompt]
    compute : The hit prefill of ``m`` prompts, (counts, prompts), the prefix in HBM, its LM
        head at the plain expected prefill's rows (``ExpectedSteps.linear``) [s]
    cached : Each prompt's cached tokens, whole (``physics.whole_cached_tokens``) [token]
    reload : One prompt's prefix reload from its tier, ``physics.reload_time`` (a step of
        ``m`` prompts reloads ``m`` of them) [s]
    reason : Why a prompt has no hit prefill ("" where it has one), per prompt
    """

    counts: np.ndarray
    compute: np.ndarray
    cached: np.ndarray
    reload: np.ndarray
    reason: np.ndarray


class _Point:
    """The technique values of one point, as ``served`` reads them of its inputs."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


class Composed:
    """What the closed forms read of a point, on expected steps: the bound's ``Terms``
    (``closed_forms.Terms``) with each step composed from the measured kernels, plain or with
    speculation (``spec``) and a prefix hit (``hits``). A plain point's steps are
    ``ExpectedSteps``' own: the steady step ``t_d(B, I + O/2)``, ``t_p(m, I)``, the mixed
    step of decodes at the mean context and pieces of prompts (a piece longer than what is
    left of a prompt spans prompts, each paying its share, ``P(I) c / I``)."""

    def __init__(  # long: every term the closed forms read
        self,
        e: ExpectedSteps,
        prompt: Any,
        output: Any,
        budget: float,
        spec: tuple[int, float, Verify] | None = None,
        hits: Hits | None = None,
    ) -> None:
        self.e, self.batch, self.budget = e, e.batch, budget
        self.prompt, self.output = prompt, output
        self.decodes = np.asarray(output) > 1
        self.context = physics.mean_context(prompt, output)
        self.spec, self.verify, self.hits = spec, (spec[2] if spec else None), hits
        shape = np.shape(prompt)  # each prompt's row of the hit tables (one prompt: row 0)
        index = np.arange(shape[0]).reshape(-1, *([1] * (len(shape) - 1))) if shape else 0
        self.row = np.broadcast_to(index, shape)
        self.x = cast(Any, _Point({}))
        if spec is not None:
            k, alpha, _ = spec
            self.x = cast(Any, _Point({"spec_tokens": k, "spec_acceptance": alpha}))
        self.rows = served.rows(self.x)
        self.random = served.randomly_accepted(self.x) & self.decodes
        self.per_token = served.steps_per_token(self.x, output)
        self.steps = (output - 1) * self.per_token
        self.cached, self.computed = 0.0, prompt
        if hits is not None:
            self.cached = hits.cached[self.row]
            self.computed = prompt - self.cached
        self.steady = self.token_time()
        self.alone = self.prefills(1)
        whole, cached = self._prompt(prompt), self._prompt(self.cached)
        self.prompt_attention = whole - cached
        self.per_row = self.verify.per_row(self.context) if self.verify else None
        self.per_decode = e.per_decode(self.context)
        at = np.maximum(np.asarray(self.cached, dtype=np.float64), 1.0)
        self.read = np.where(np.asarray(self.cached) > 0, e.per_decode(at), 0.0)

    def _prompt(self, length: Any) -> Any:
        """``P_1(n)``, a prompt's attention alone (``ExpectedSteps.prompt`` at one prompt, read
        from its own table) [s]."""
        return _read(length, self.e.prompts, self.e.prefill[1])

    def token_time(self) -> Any:
        """A decode token of each slot at the mean context: the decode step, or the verify
        step and the draft times the verify steps a token [s]."""
        if self.verify is None:
            return self.e.decode(self.batch, self.context)
        v = self.verify
        return (v.step(self.batch, self.context) + v.draft(self.batch, self.context)) * (
            self.per_token
        )

    def prefills(self, count: Any) -> Any:
        """A step of ``count`` whole prompts (0: none): the plain expected prefill, or the
        better of the hit prefill (its reload overlapped) and recomputing [s]."""
        plain = self.e.prefills(count, self.prompt)
        if self.hits is None:
            return plain
        h, counts = self.hits, np.asarray(count)
        at = np.clip(np.searchsorted(h.counts, counts), 0, h.counts.size - 1)
        found = h.counts[at] == counts
        compute = np.where(found, h.compute[at, self.row], np.nan)
        hit = physics.hit_time(compute, counts * h.reload[self.row])
        return np.where(counts > 0, np.minimum(hit, plain), 0.0)

    def _decodes(self, decoders: Any, tokens: Any) -> tuple[Any, Any]:
        """The body of a step of ``decoders`` decoding slots and ``tokens`` prompt tokens,
        the slots' attention at the mean context, and their draft [s]."""
        if self.verify is None:
            return self.e.linear(decoders + tokens) + decoders * self.per_decode, 0.0
        v, rows = self.verify, decoders * self.rows
        step = v.linear(rows + tokens) + rows * self.per_row
        return step, v.draft(decoders, self.context)

    def _finish(self, step: Any, tokens: Any, starts: Any, draft: Any) -> Any:
        """``step`` with the cached prefixes ``starts`` pieces read, the prompts' reload
        overlapped (``tokens / (1 - h) I`` prompts' worth) and the draft [s]."""
        if self.hits is None:
            return step + draft
        reload = tokens / self.computed * self.hits.reload[self.row]
        return np.maximum(step + starts * self.read, reload) + draft

    def mixed_step(
        self, decoders: Any, tokens: Any, prefix: Any, chunks: Any, starts: Any = 0.0
    ) -> Any:
        """A step of ``decoders`` decoding slots and ``tokens`` prompt tokens in ``chunks``
        pieces after a mean ``prefix``, ``starts`` of them beginning a prompt (reading its
        cached ``h I`` once), on expected steps [s]: each piece its increment of the prompt's
        attention (a piece spanning prompts their mean share, ``(P(I) - P(h I)) / (1 - h) I``
        a token), the verify rows and draft with speculation, the reload overlapped with a
        prefix hit."""
        piece = tokens / np.maximum(chunks, 1)
        within = prefix + piece <= self.prompt
        increments = chunks * (self._prompt(prefix + piece) - self._prompt(prefix))
        attention = np.where(within, increments, tokens / self.computed * self.prompt_attention)
        step, draft = self._decodes(decoders, tokens)
        return self._finish(step + attention, tokens, starts, draft)

    def result(self, ttft: Any, tpot: Any, rate: Any, steady: Any, share: Any) -> dict[str, Any]:
        """A mode's figures, as ``Terms.result`` gives them (per device left to the caller)."""
        return {**_result(ttft, tpot, rate, steady, self.output), "share": share}

    def spread_step(self, decoders: Any, tokens: Any) -> Any:
        """A chunked step with the prompts' attention spread over their chunks (``tokens``
        their share of ``P(I) - P(h I)``; ``ExpectedSteps.mixed`` at ``h = 0``), each of the
        ``tokens / (1 - h) I`` prompts reading its cached prefix once [s]."""
        step, draft = self._decodes(decoders, tokens)
        share = tokens / self.computed
        return self._finish(step + share * self.prompt_attention, tokens, share, draft)


_SLOWEST: dict[tuple[Any, ...], Any] = {}
"""``E[max_B N] / n`` of a static batch by (outputs, k, alpha, B): the same at every hit rate,
tier and configuration (a memo; cleared past ``_MEMO`` entries)."""
_MEMO = 10_000


def _slowest(output: np.ndarray, k: int, alpha: float, batch: int) -> np.ndarray:
    """The slowest of ``B`` requests' verify steps over the mean request's, 1 where nothing
    decodes (``physics.max_verify_steps`` over ``physics.verify_steps``) [1]."""
    key = (output.shape, output.tobytes(), int(k), float(alpha), int(batch))
    if key not in _SLOWEST:
        if len(_SLOWEST) > _MEMO:
            _SLOWEST.clear()
        tokens = np.maximum(output - 1, 0)
        most = physics.max_verify_steps(tokens, k, alpha, batch)
        mean = physics.verify_steps(tokens, k, alpha)
        _SLOWEST[key] = np.where(tokens > 0, most / np.where(tokens > 0, mean, 1), 1.0)
    return _SLOWEST[key]


def serial_prefill(t: Composed) -> dict[str, Any]:
    """``closed_forms.serial_prefill`` on expected steps: with random verify steps the others'
    prefills as they come."""
    batch, output, steady, alone = t.batch, t.output, t.steady, t.alone
    rate = physics.colocated_request_rate(batch, output, steady, alone)
    tpot = physics.serial_prefill_tpot(batch, output, steady, alone)
    if t.verify is not None:
        stalls = physics.random_stalls(batch, np.maximum(t.steps, 1), 0.5)
        tpot = where(t.random, steady + stalls * alone / np.maximum(output - 1, 1), tpot)
    return _result(alone, tpot, rate, steady, output)


def batched_prefill(t: Composed) -> dict[str, Any]:
    """``closed_forms.batched_prefill`` on expected steps (its slot groups; with random verify
    steps a prompt's prefill at about ``t_p(1, I)``, its own group's at its size-biased
    mean, the rate as serial-prefill's)."""
    batch, output, steady, cycle = t.batch, t.output, t.steady, t.output - 1
    small, _ = physics.slot_groups(batch, cycle)
    large, less = t.prefills(small + 1), t.prefills(small)
    prefills, own = physics.grouped(batch, cycle, large, less)
    rate = physics.batched_prefill_rate(batch, output, steady, prefills)
    tpot = physics.batched_prefill_tpot(output, steady, prefills, own)
    if t.verify is not None:
        steps = np.maximum(t.steps, 1)
        stalls = physics.random_stalls(batch, steps, 0.0)
        tpot = where(t.random, steady + stalls * t.alone / np.maximum(cycle, 1), tpot)
        rate = where(t.random, physics.colocated_request_rate(batch, output, steady, t.alone), rate)
        own = where(t.random, _prefill_between(t, 1 + (batch - 1) / steps), own)
    return _result(own, tpot, rate, steady, output)


def _prefill_between(t: Composed, count: Any) -> Any:
    """``t_p(m, I)`` at a count ``m`` between the tabulated ones: linear between its floor and
    ceiling (the bound prices the fraction in closed form) [s]."""
    low = np.floor(count)
    high = np.minimum(low + 1, t.batch)
    below, above = t.prefills(low), t.prefills(high)
    return below + (count - low) * (above - below)


def static(t: Composed) -> dict[str, Any]:
    """``closed_forms.static`` on expected steps: ``t_p(B, I)`` (the better of hit and
    recompute), the decode steps at ``I + j`` summed (verify steps and the draft at the mean
    context, times the verify steps a token), the cycle the slowest request's."""
    batch, prompt, output = t.batch, t.prompt, t.output
    prompt, output = np.broadcast_arrays(np.asarray(prompt), np.asarray(output))
    ttft = t.prefills(batch)
    decode = np.zeros(prompt.shape)
    for at in np.ndindex(prompt.shape):  # the sum over j = 1 .. O - 1, each I once
        steps = prompt[at] + np.arange(1, int(output[at]))
        each = t.e.decode(batch, steps) if t.verify is None else t.verify.step(batch, steps)
        decode[at] = float(np.sum(each))
    slowest = decode
    if t.verify is not None:
        draft = t.verify.draft(batch, t.context)
        decode = (decode + (output - 1) * draft) * t.per_token
        k, alpha = t.x["spec_tokens"], t.x["spec_acceptance"]
        slowest = decode * _slowest(np.ascontiguousarray(output), k, alpha, batch)
    latency = ttft + decode
    tpot = decode / np.maximum(output - 1, 1)
    result = _result(ttft, tpot, batch / (ttft + slowest), tpot, output)
    return {**result, "latency": latency}


def chunked_paced(t: Composed) -> dict[str, Any]:
    """``closed_forms.chunked_paced`` on expected steps: the balanced state of ``B (k + 1)``
    rows and the ``(1 - h) I`` tokens computed, the mean step ``Composed.spread_step``; where
    slots free at random below the budget, each prompt holds its slot from its first chunk
    (``_held``)."""
    slots, rows = t.batch * t.rows, t.steps * t.rows + 1
    decoders = physics.balanced_decoders(slots, t.computed, rows, t.budget)
    chunk = physics.paced_chunk(decoders, t.computed, rows, t.budget)
    step = t.spread_step(decoders / t.rows, chunk)
    rate = physics.chunked_request_rate(t.computed, chunk, step)
    ttft = physics.chunked_ttft(t.computed, chunk, step)
    out = _result(ttft, step * t.per_token, rate, step, t.output)
    hold = np.asarray(t.random & ~physics.budget_limited(slots, t.computed, rows, t.budget))
    if not hold.any():
        return out
    slotted = _held(t, chunk, hold)
    return {key: np.where(hold, slotted[key], value) for key, value in out.items()}


def _held(t: Composed, pace: Any, hold: Any) -> dict[str, Any]:
    """``serving.paced.held`` on expected steps: a held prompt's ``p = ceil((1 - h) I /
    pace)`` chunks ride ``p`` steps beside every decode, ``m ~ Bin(B, p / (p + n))`` slots
    prefilling a step; each figure the mean over ``m`` of the expected step of what it
    carries (``Composed.mixed_step``: ``B - m`` verifies and the draft, ``m`` chunks each
    re-reading its prefix), summed over a trailing axis of ``m`` (the bound's over a named
    dim)."""
    batch, computed, steps = t.batch, t.computed, t.steps
    parts = physics.held_prefill_steps(computed, pace)
    share = physics.held_share(parts, steps)
    chunk = computed / parts
    prefix = t.cached + (parts - 1) / 2 * chunk  # a chunk's mean prefix re-read
    reach = physics.binomial_reach(batch, np.where(hold, share, 0.0))
    m = np.arange(reach + 2, dtype=np.float64)
    wide = Composed(t.e, t.prompt[..., None], t.output[..., None], t.budget, t.spec, t.hits)
    times = wide.mixed_step(np.maximum(batch - m, 0), m * chunk[..., None], prefix[..., None], m)
    weights = share[..., None]

    def mean(weight: Any) -> Any:
        return np.sum(weight * times, axis=-1) / np.sum(weight, axis=-1)

    step = mean(physics.binomial_pmf(batch, weights, m))
    seen = mean(physics.binomial_pmf(batch - 1, weights, m))  # while the slot decodes
    own = mean(physics.binomial_pmf(batch - 1, weights, m - 1))  # while it prefills
    rate = physics.held_request_rate(batch, parts, steps, step)
    tpot = seen * steps / np.maximum(t.output - 1, 1)
    return _result(parts * own, tpot, rate, step, t.output)


def chunked_greedy(t: Composed) -> dict[str, Any]:
    """The serving table's closed form (``closed_forms.chunked_greedy``) on ``t``'s steps
    (its nulls, where the schedule does not hold, are divisions it leaves NaN)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return closed_forms.chunked_greedy(cast(Any, t))


COMPOSED = {
    "static": static,
    "serial-prefill": serial_prefill,
    "batched-prefill": batched_prefill,
    "chunked-paced": chunked_paced,
    "chunked-greedy": chunked_greedy,
}
"""The modes priced on expected steps, plain or with the techniques, by name."""


def priced(
    mode: str, e: ExpectedSteps, prompt: Any, output: Any, budget: float = math.inf
) -> dict[str, Any]:
    """``mode``'s expected figures at plain points (no speculation, no prefix hit) of ``e``'s
    configuration and batch (all NaN where it is not priced or ``e`` has no data)."""
    return composed(mode, Composed(e, prompt, output, budget))


def composed(mode: str, t: Composed) -> dict[str, Any]:
    """``mode``'s expected figures at a technique point (all NaN where it is not priced)."""
    if mode not in COMPOSED:
        nan = np.full(np.shape(t.prompt), np.nan)
        return {k: nan for k in ("ttft", "tpot", "latency", "steady", "rate")}
    return COMPOSED[mode](t)
