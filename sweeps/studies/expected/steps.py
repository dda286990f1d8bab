"""Expected step costs of a replica: any step a scheduler runs, priced from measured kernels.

The serving closed forms and the simulator price steps that carry ``n`` decodes at their own
contexts and prompt tokens in chunks (docs/serving.md sections 3 and 7); the bound prices each
as the roofline of its FLOPs and bytes. The expected step of one configuration at batch ``B``
(``ExpectedSteps``) is, in place of that roofline (docs/expected.md, "Serving"):

    t(T, {S_i}, chunks) = body(T) + sum_i a_B(S_i) + sum_chunks (P_m(p + c) - P_m(p))

- ``body(T)``: every operation but attention of a step of ``T`` tokens (the GEMMs at ``m = T``,
  the all-reduces, the MoE experts, the embedding gather; the LM head at ``min(T, B)`` rows:
  every decode's and at most ``B`` prompts' last tokens), read from ``step`` at batch ``T``;
- ``a_B(S)``: decode attention per sequence at context ``S``, the measured attention of ``B``
  sequences over ``B`` (measured at the plan's own batch);
- ``P_m(n)``: the prefill attention of a prompt of ``n`` tokens in a step of ``m`` prompts (the
  measured attention of ``m`` prompts over ``m``: batched, short prompts share the device far
  better than one alone, 2-3x at 512 tokens); a chunk of ``c`` tokens after a prefix of ``p``
  costs its increment. The tables hold it for the prompt counts asked for (``prompts``); the
  simulator reads one of them, the count its scheduler's prefill steps carry.

Each table is ``step`` evaluated on a grid of ``T``, ``S`` and ``n`` (every integer to ``DENSE``,
then ``PER_DECADE`` log-spaced points a decade, the batch itself included) and interpolated
linearly between them, as the database interpolates its own tables; beyond the grid nothing is
read (the grid covers what the caller asks for). A step of ``B`` decodes at one context on the
grid is ``step``'s own decode step exactly; a prefill of ``m`` prompts is ``m`` single-prompt
attentions (the measured batched attention is within a few per cent of it).

On a parallel layout (``Config.ep``, ``dp_attention``, ``pp``) each table is read from ``step``
at the layout, as ``step.compose`` composes its decode step and TTFT: ``body(T)`` is a step of
``T`` tokens spread as a decode step's sequences (the busiest rank's share of one micro-batch,
through every stage, with the hand-offs), ``a_B(S)`` the rank's micro-batch's attention over
``B`` and ``P_m(n)`` the busiest rank's prompts' over ``m``; so a decode step of ``B`` at a
context on the grid is still ``step``'s exactly. In place of the affine prefill's share of
``body``, a step of ``m`` whole prompts crosses the stages at once, its prompts whole on their
ranks: ``ExpectedSteps.crossing`` adds what that costs beyond ``body(m n)`` (``_whole``), so
one prompt's prefill is ``compose``'s TTFT. A chunked step's prompt pieces are spread with its
decodes, as the bound's simulator spreads them: they pay no crossing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sweeps.measured.database import OPERATIONS
from sweeps.studies.expected.step import Config, step
from sweeps.studies.serving.simulate.costs import StepCosts

DENSE = 64
"""Every integer up to this is a point of the tables' grids [token]."""
PER_DECADE = 24
"""Log-spaced points a decade of the tables' grids beyond ``DENSE`` [1]."""
_RANK = {"measured": 0, "interpolated": 1, "extrapolated": 2, "": 3}


def grid(largest: int, *also: int) -> np.ndarray:
    """The points a table is read at, from 1 to ``largest`` (and ``also``) [token]: every
    integer to ``DENSE``, then ``DENSE 10^(k / PER_DECADE)`` rounded (the same points whatever
    ``largest``, so tables of different sizes share their readings)."""
    top = max(int(largest), 1)
    steps = math.ceil(max(math.log10(top / DENSE), 0.0) * PER_DECADE)
    spaced = np.round(DENSE * 10.0 ** (np.arange(steps + 1) / PER_DECADE))
    points = np.concatenate([np.arange(1, DENSE + 1), spaced, [top, *also]])
    return np.unique(points[(points >= 1) & (points <= max(top, *also, 1))]).astype(np.int64)


_READ: dict[tuple[Any, ...], Any] = {}
"""Readings already composed, by configuration and shape: the serving pass asks for the same
ones at every batch (a memo, like the database's own; cleared past ``_MEMO`` entries)."""
_MEMO = 200_000


def _key(config: Config) -> tuple[Any, ...]:
    m, d = config.model, config.device
    return (m.id, d.id, *(getattr(config, f) for f in _FIELDS), repr(config.choice))


_FIELDS = ("tp", "kv_heads", "kv_dtype", "weight_dtype", "kv_bytes", "weight_bytes", "peak",
           "attention_peak", "ep", "dp_attention", "pp")  # fmt: skip


def _memo(key: tuple[Any, ...], make: Any) -> Any:
    if key not in _READ:
        if len(_READ) > _MEMO:
            _READ.clear()
        _READ[key] = make()
    return _READ[key]


def _body(config: Config, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """Every operation but attention and the LM head at each ``T`` of ``tokens``, the LM head
    there, and the reason there is none ("" where there is) [s]."""
    key = _key(config)
    missing = np.array([t for t in tokens if (key, "body", int(t)) not in _READ], dtype=np.int64)
    if missing.size:
        rows = step(config, missing, np.array([2]))
        others = [op for op in OPERATIONS if op not in ("attention", "lm_head")]
        body = np.sum([rows.expected[op][:, 0] for op in others], axis=0)
        for i, t in enumerate(missing):
            got = (float(body[i]), float(rows.expected["lm_head"][i, 0]), rows.reason)
            _memo((key, "body", int(t)), lambda got=got: got)
    found = [_READ[(key, "body", int(t))] for t in tokens]
    return np.array([f[0] for f in found]), np.array([f[1] for f in found]), found[0][2]


@dataclass(frozen=True)
class ExpectedSteps:
    """The expected step costs of one configuration at batch ``batch``.

    batch : The replica's slots, ``B`` [sequence]
    tokens, body : ``body(T)`` on its grid of step tokens [token], [s]
    contexts, attention : ``a_B(S)`` on its grid of contexts [token], [s]
    prompts : The grid of prompt lengths of ``prefill`` (0 included) [token]
    prefill : ``P_m(n)`` on that grid, by prompt count ``m`` [s]
    basis : The least certain basis of its decode steps at batch ``B`` and its single-prompt
        prefills (``measured``, ``interpolated``, ``extrapolated``); "" where there is none
    reason : Why there is no expectation ("" where there is one)
    whole : On a parallel layout, what each of ``m`` whole prompts of ``n`` tokens adds to
        their prefill step beyond ``body(m n)`` (``crossing``) on the grid of ``prefill``, by
        ``m`` [s]; empty without one
    """

    batch: int
    tokens: np.ndarray
    body: np.ndarray
    contexts: np.ndarray
    attention: np.ndarray
    prompts: np.ndarray
    prefill: dict[int, np.ndarray]
    basis: str = ""
    reason: str = ""
    whole: dict[int, np.ndarray] = field(default_factory=dict)

    def linear(self, tokens: Any) -> Any:
        """``body(T)``: 0 for a step of no token, a fraction of one read as one [s]."""
        count = np.asarray(tokens, dtype=np.float64)
        return np.where(count > 0, _read(np.maximum(count, 1.0), self.tokens, self.body), 0.0)

    def per_decode(self, context: Any) -> Any:
        """``a_B(S)``: one decode's attention at context ``S`` [s]."""
        return _read(context, self.contexts, self.attention)

    def prompt(self, length: Any, count: Any = 1) -> Any:
        """``P_m(n)``: the attention of a prompt of ``n`` tokens among ``m`` [s] (NaN: ``m``
        not tabulated)."""
        counts = np.asarray(count)
        out = np.full(np.broadcast_shapes(np.shape(length), counts.shape), np.nan)
        for m, table in self.prefill.items():
            out = np.where(counts == m, _read(length, self.prompts, table), out)
        return out

    def decode(self, decoders: Any, context: Any) -> Any:
        """A step of ``decoders`` decodes at context ``context`` [s]."""
        return self.linear(decoders) + decoders * self.per_decode(context)

    def crossing(self, length: Any, count: Any = 1) -> Any:
        """What each of ``m`` whole prompts of ``n`` tokens adds to their prefill step beyond
        ``body(m n)``: on a parallel layout they cross the stages at once, ``ceil(m / r)`` of
        them on the busiest rank, where ``body`` spreads a step's tokens as a decode step's
        (``_whole``); 0 without a layout [s]."""
        counts = np.asarray(count)
        out = np.zeros(np.broadcast_shapes(np.shape(length), counts.shape))
        for m, table in self.whole.items():
            out = np.where(counts == m, _read(length, self.prompts, table), out)
        return out

    def prefills(self, count: Any, length: Any) -> Any:
        """A step of ``count`` whole prompts of ``length`` tokens, nothing else (0: none) [s]."""
        m = np.maximum(count, 1)
        each = self.prompt(length, m) + self.crossing(length, m)
        time = self.linear(count * length) + count * each
        return np.where(np.asarray(count) > 0, time, 0.0)

    def mixed(self, decoders: Any, context: Any, tokens: Any, length: Any) -> Any:
        """A step of ``decoders`` decodes at ``context`` and ``tokens`` prompt tokens of
        prompts of ``length`` streaming through, the mean step (a prompt's attention spread
        over its chunks, ``P(I) c / I``) [s]."""
        share = np.asarray(tokens) / np.maximum(length, 1)
        return (
            self.linear(decoders + tokens)
            + decoders * self.per_decode(context)
            + share * self.prompt(length)
        )

    def step_costs(
        self, max_context: int, max_tokens: int, devices: int, prompts: int = 1, whole: bool = False
    ) -> StepCosts:
        """The tables the simulator's loop reads, as ``StepCosts``: the FLOP terms carry
        seconds at a peak of 1 (``decode_flops`` the per-decode attention, ``pairs`` the prompt
        attention ``P_m`` of ``m = prompts`` with ``pair_flops`` 1), no bytes (bandwidth
        infinite) and ``fixed`` the body of a step of ``T`` tokens, so that its time is this
        class's step (each prompt's attention at ``prompts`` a step; with ``whole``, a
        scheduler's whose prefill steps carry whole prompts, its ``crossing`` too)."""
        contexts = np.arange(max_context + 1, dtype=np.float64)
        tokens = np.arange(max_tokens + 1, dtype=np.float64)
        body = np.where(tokens > 0, self.linear(np.maximum(tokens, 1)), 0.0)
        each = self.prompt(contexts, prompts)
        if whole:
            each = each + self.crossing(contexts, prompts)
        return StepCosts(
            peak=1.0,
            bandwidth=math.inf,
            decode_flops=np.ascontiguousarray(self.per_decode(np.maximum(contexts, 1))),
            cache=np.zeros(max_context + 1),
            pairs=np.ascontiguousarray(np.where(contexts > 0, each, 0.0)),
            weights=np.zeros(max_tokens + 1),
            token_flops=0.0,
            pair_flops=1.0,
            logit_flops=0.0,
            tp=int(devices),
            fixed=np.ascontiguousarray(body),
        )


def _read(at: Any, points: np.ndarray, values: np.ndarray) -> Any:
    """``values`` interpolated linearly at ``at`` over ``points`` (no reading beyond them)."""
    array = np.asarray(at, dtype=np.float64)
    out = np.interp(array, points, values)
    beyond = (array > points[-1] * (1 + 1e-12)) | (array < points[0] * (1 - 1e-12))
    return np.where(beyond, np.nan, out)


def _worst(*bases: np.ndarray) -> str:
    """The least certain of the bases (object arrays) [-]."""
    names = {str(b) for array in bases for b in np.asarray(array).reshape(-1)}
    return max(names, key=_RANK.__getitem__) if names else ""


def expected_steps(
    config: Config,
    batch: int,
    max_context: int,
    max_tokens: int,
    prompts: tuple[int, ...] = (1,),
    reach: int = 0,
) -> ExpectedSteps:
    """``ExpectedSteps`` of ``config`` at batch ``batch``, its tables covering contexts and
    prompts to ``max_context``, steps to ``max_tokens`` tokens and prefill steps of each count
    of ``prompts``; ``reach`` beyond ``max_tokens``, the steps' grid extends to it with
    ``max_tokens`` kept a point (``_tokens``: the readings to ``max_tokens`` the same)."""
    tokens = _tokens(max_tokens, reach, batch)
    contexts = lengths = grid(max_context)
    body, head, reason = _body(config, tokens)
    if reason:
        return _empty(batch, reason)
    at = np.searchsorted(tokens, np.minimum(tokens, batch))
    key, shape = _key(config), tuple(lengths.tolist())
    decode = _memo((key, "decode", batch, shape), lambda: step(config, np.array([batch]), contexts))
    counts = sorted({int(m) for m in prompts if m >= 1} | {1})
    prefill = {
        m: _memo(
            (key, "prefill", m, shape),
            lambda m=m: step(config, np.array([m]), lengths, prefill=True),
        )
        for m in counts
    }
    reason = decode.reason or prefill[1].reason
    if reason:
        return _empty(batch, reason)
    basis = _worst(decode.step_basis(), prefill[1].step_basis())  # the steps it mostly prices
    whole = {  # a prefill's prompts cross the stages at once, each on one rank
        m: np.concatenate([[0.0], _whole(config, batch, m, lengths, got) / m])
        for m, got in prefill.items()
        if laid_out(config)
    }
    return ExpectedSteps(
        batch=int(batch),
        tokens=tokens.astype(np.float64),
        body=body + head[at],
        contexts=contexts.astype(np.float64),
        attention=decode.expected["attention"][0] / batch,
        prompts=np.concatenate([[0.0], lengths]),
        prefill={
            m: np.concatenate([[0.0], got.expected["attention"][0] / m])
            for m, got in prefill.items()
        },
        basis=basis,
        whole=whole,
    )


def _tokens(max_tokens: int, reach: int, *also: int) -> np.ndarray:
    """The grid of a table's step tokens: to ``max_tokens`` (and ``also``), or past it to
    ``reach`` with ``max_tokens`` kept a point, so that every reading to ``max_tokens`` is
    the one without ``reach`` (the same points bracket it) [token]."""
    top = max(max_tokens, *also)
    if reach <= top:
        return grid(top, *also)
    return grid(reach, *also, top)


def laid_out(config: Config) -> bool:
    """Whether ``config`` has a parallel layout (``ep`` or ``pp`` above 1): its prompts are
    not spread over its step's tokens as its decodes are (``_whole``)."""
    return config.ep > 1 or config.pp > 1


def _whole(config: Config, batch: int, count: int, lengths: np.ndarray, prefill: Any) -> np.ndarray:
    """What a prefill of ``count`` whole prompts of each of ``lengths`` tokens costs beyond
    ``body(count n)`` on a parallel layout at batch ``batch`` [s], ``body`` as read at grid
    points (its LM head at ``min(T, B)`` rows): the prefill crosses the stages at once, the
    busiest rank's ``ceil(m / r)`` prompts with all their tokens (``step``'s prefill at
    ``count``: every operation but attention, the LM head at its decode step's rows, as
    ``compose`` sums its TTFT), where ``body`` spreads a step's tokens as a decode step's
    sequences (a micro-batch of ``ceil(T / pp)``, its rank's share)."""
    others = [op for op in OPERATIONS if op not in ("attention", "lm_head")]
    spent = np.sum([prefill.expected[op][0] for op in others], axis=0)
    _, head, _ = _body(config, np.array([count]))
    tokens = count * lengths
    spread, _, _ = _body(config, tokens)
    _, rows, _ = _body(config, np.minimum(tokens, batch))
    return spent + head[0] - (spread + rows)


def _empty(batch: int, reason: str) -> ExpectedSteps:
    one, nan = np.ones(1), np.full(1, np.nan)
    return ExpectedSteps(int(batch), one, nan, one, nan, one, {1: nan}, "", reason)


@dataclass(frozen=True)
class Verify:
    """A slot's verify step and its draft at one configuration, batch ``B`` and ``k`` drafts:
    speculation on expected steps (docs/expected.md, "Serving").

    A verify step of ``n`` slots is a decode step of ``n (k + 1)`` rows, as
    ``speculative_expected`` prices it (``step.decode`` with ``rows_each``): every operation
    but attention at ``T = n (k + 1)`` tokens (``body``, the LM head at ``min(T, B (k + 1))``
    rows: every row's logits), and attention over the rows as single-query sequences at the
    context, each row's share of the measured attention of ``B (k + 1)`` of them
    (``attention``, as ``ExpectedSteps.per_decode`` is ``B``'s). The draft that proposes the
    ``k`` tokens is ``speculative._draft`` (ngram nothing, an MTP head ``k`` passes, a
    draft model ``k`` of its decode steps) on a grid of batches (0 included: no slot drafts
    nothing) and contexts, read linearly in both.

    rows : A slot's rows a step, ``k + 1`` [token]
    tokens, body : ``body(T)`` on its grid of step tokens [token], [s]
    contexts, attention : One row's attention on the grid of contexts [token], [s]
    batches, drafts : The draft of ``n`` slots at each context, (batches, contexts) [s]
    basis : The least certain basis of the verify step at ``B`` and its draft
    reason : Why there is no expectation ("" where there is one)
    slots, whole : On a parallel layout, the batch ``B`` and what its verify step's whole
        sequences add beyond ``body(B (k + 1))`` (``expected_verify``: the rank's micro-batch
        of ``B`` sequences, each with its ``k + 1`` rows, where ``body`` spreads the rows as
        sequences) [s]; a step of ``n`` slots adds ``n / B`` of it; 0 without a layout
    """

    rows: int
    tokens: np.ndarray
    body: np.ndarray
    contexts: np.ndarray
    attention: np.ndarray
    batches: np.ndarray
    drafts: np.ndarray
    basis: str = ""
    reason: str = ""
    slots: int = 1
    whole: float = 0.0

    def step(self, slots: Any, context: Any) -> Any:
        """A verify step of ``slots`` slots at (mean) ``context``, the draft left out [s]; on a
        layout at ``B`` slots ``step.decode``'s with ``rows_each`` (``whole``)."""
        rows = np.asarray(slots, dtype=np.float64) * self.rows
        body = np.where(rows > 0, _read(np.maximum(rows, 1.0), self.tokens, self.body), 0.0)
        body = body + self.whole * np.asarray(slots, dtype=np.float64) / self.slots  # + 0: none
        return body + rows * _read(context, self.contexts, self.attention)

    def linear(self, rows: Any) -> Any:
        """``body(T)`` of a step of ``T`` rows (0: none) [s]."""
        count = np.asarray(rows, dtype=np.float64)
        return np.where(count > 0, _read(np.maximum(count, 1.0), self.tokens, self.body), 0.0)

    def per_row(self, context: Any) -> Any:
        """One row's attention at context ``S`` [s]."""
        return _read(context, self.contexts, self.attention)

    def draft(self, slots: Any, context: Any) -> Any:
        """The draft of ``slots`` slots at (mean) ``context`` [s], read linearly in both."""
        slots, context = np.broadcast_arrays(
            np.asarray(slots, dtype=np.float64), np.asarray(context, dtype=np.float64)
        )
        (b_lo, b_hi, b_w), (c_lo, c_hi, c_w) = (
            _between(slots, self.batches),
            _between(context, self.contexts),
        )
        d = self.drafts
        low = d[b_lo, c_lo] * (1.0 - c_w) + d[b_lo, c_hi] * c_w
        high = d[b_hi, c_lo] * (1.0 - c_w) + d[b_hi, c_hi] * c_w
        out = low * (1.0 - b_w) + high * b_w
        beyond = (slots > self.batches[-1] * (1 + 1e-12)) | (slots < 0)
        beyond = beyond | (context > self.contexts[-1] * (1 + 1e-12)) | (context < 1 - 1e-12)
        return np.where(beyond, np.nan, out)


def _between(at: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid points below and above each of ``at`` and its weight on the upper one (1 on
    a point of the grid: its value exactly)."""
    if points.size == 1:
        zero = np.zeros(at.shape, dtype=np.int64)
        return zero, zero, np.zeros(at.shape)
    hi = np.clip(np.searchsorted(points, at), 1, points.size - 1)
    lo = hi - 1
    return lo, hi, (at - points[lo]) / (points[hi] - points[lo])


def expected_verify(  # long: the verify step, its draft and on a layout its whole rows
    config: Config,
    batch: int,
    k: int,
    record: Any,
    max_context: int,
    max_tokens: int,
    reach: int = 0,
) -> Verify:
    """``Verify`` of ``config`` at batch ``batch`` with ``k`` drafts from ``record`` (a
    ``spec_draft`` record), its tables covering contexts to ``max_context`` and steps to
    ``max_tokens`` tokens (``reach``: as ``expected_steps``'). On a parallel layout the verify
    step of ``B`` slots is ``step.decode``'s with ``rows_each = k + 1`` (speculative_expected's:
    a rank's micro-batch of whole sequences, each with its rows), its attention a row's share
    of it and ``whole`` the rest beyond ``body``; the draft is placed as
    ``speculative._draft`` places it (``sweeps.engine.drafts``)."""
    from sweeps.measured.kernels import NAMES
    from sweeps.studies.expected.speculative import _draft
    from sweeps.studies.expected.step import decode

    rows = int(batch) * (int(k) + 1)
    tokens = _tokens(max_tokens, reach, batch, rows)
    contexts = grid(max_context)
    body, head, reason = _body(config, tokens)
    if reason:
        return _no_verify(k, reason)
    at = np.searchsorted(tokens, np.minimum(tokens, rows))
    key, shape = _key(config), tuple(contexts.tolist())
    if laid_out(config):
        return _laid_out_verify(config, batch, k, record, contexts, tokens, body + head[at])
    verify = _memo((key, "decode", rows, shape), lambda: step(config, np.array([rows]), contexts))
    batches = grid(batch)
    plain = _memo(
        (key, "decoded", tuple(batches.tolist()), shape), lambda: decode(config, batches, contexts)
    )
    if isinstance(plain, str) or verify.reason:
        return _no_verify(k, plain if isinstance(plain, str) else verify.reason)
    drafted, codes, why = _memo(
        (key, "draft", repr(record), int(k), tuple(batches.tolist()), shape),
        lambda: _draft(config, record, plain, np.array([int(k)]), batches, contexts),
    )
    if why:
        return _no_verify(k, why)
    at_batch = int(np.searchsorted(batches, batch))
    return Verify(
        rows=int(k) + 1,
        tokens=tokens.astype(np.float64),
        body=body + head[at],
        contexts=contexts.astype(np.float64),
        attention=verify.expected["attention"][0] / rows,
        batches=np.concatenate([[0.0], batches.astype(np.float64)]),
        drafts=np.concatenate([np.zeros((1, contexts.size)), drafted[0]]),
        basis=_worst(verify.step_basis(), NAMES[codes[0, at_batch]]),
    )


def _laid_out_verify(
    config: Config,
    batch: int,
    k: int,
    record: Any,
    contexts: np.ndarray,
    tokens: np.ndarray,
    body: np.ndarray,
) -> Verify:
    """``expected_verify`` on a parallel layout: the verify step of ``B`` slots
    ``step.decode``'s at ``rows_each = k + 1``, ``body`` (the rows spread as sequences, on its
    grid of ``tokens``) and ``whole`` its other operations' excess over ``body(B (k + 1))``."""
    from sweeps.measured.kernels import NAMES
    from sweeps.studies.expected.speculative import _draft
    from sweeps.studies.expected.step import decode

    rows = int(batch) * (int(k) + 1)
    key, shape = _key(config), tuple(contexts.tolist())
    verify = _memo(
        (key, "verify", int(batch), int(k) + 1, shape),
        lambda: decode(config, np.array([batch]), contexts, int(k) + 1),
    )
    batches = grid(batch)
    plain = _memo(
        (key, "decoded", tuple(batches.tolist()), shape), lambda: decode(config, batches, contexts)
    )
    if isinstance(verify, str) or isinstance(plain, str):
        return _no_verify(k, verify if isinstance(verify, str) else str(plain))
    if verify.reason or plain.reason:
        return _no_verify(k, verify.reason or plain.reason)
    drafted, codes, why = _memo(
        (key, "draft", repr(record), int(k), tuple(batches.tolist()), shape),
        lambda: _draft(config, record, plain, np.array([int(k)]), batches, contexts),
    )
    if why:
        return _no_verify(k, why)
    others = [v[0, 0] for op, v in verify.expected.items() if op != "attention"]
    spent = float(np.sum(others))
    at_rows = float(_read(float(rows), tokens.astype(np.float64), body))
    at_batch = int(np.searchsorted(batches, batch))
    return Verify(
        rows=int(k) + 1,
        tokens=tokens.astype(np.float64),
        body=body,
        contexts=contexts.astype(np.float64),
        attention=verify.expected["attention"][0] / rows,
        batches=np.concatenate([[0.0], batches.astype(np.float64)]),
        drafts=np.concatenate([np.zeros((1, contexts.size)), drafted[0]]),
        basis=_worst(NAMES[verify.step_basis[0]], NAMES[codes[0, at_batch]]),
        slots=int(batch),
        whole=spent - at_rows,
    )


def _no_verify(k: int, reason: str) -> Verify:
    one, nan, drafts = np.ones(1), np.full(1, np.nan), np.full((2, 1), np.nan)
    return Verify(int(k) + 1, one, nan, one, nan, np.array([0.0, 1.0]), drafts, "", reason)


def heads(config: Config, rows: Any) -> np.ndarray:
    """The LM head of ``config`` at each count of ``rows`` (whole, at least 1) [s]."""
    rows = np.maximum(np.asarray(rows, dtype=np.int64), 1)
    found, where = np.unique(rows, return_inverse=True)
    _, head, _ = _body(config, found)
    return head[where.reshape(rows.shape)]
