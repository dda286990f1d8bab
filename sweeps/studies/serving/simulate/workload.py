"""The requests a simulation serves: when they arrive and how long they are, seeded.

Arrivals are ``poisson`` at a rate, ``closed`` loop at a concurrency (clients that send the
next request when their last one ends, no think time) or a ``trace`` (a CSV of arrival time,
prompt and output tokens, or any format ``sweeps.traces`` reads). Lengths are ``fixed`` (the
operating point's ``I`` and ``O``), ``uniform`` (integers on ``[1, 2m - 1]``, mean ``m``),
``lognormal`` (mean ``m`` and a CV, rounded, at least 1) or ``csv`` (an empirical CSV of
(prompt, output) pairs drawn with replacement). One ``numpy.random.Generator`` seeded once
draws everything, in a fixed order, so the same seed gives the same requests. Bad values
raise ``ConfigError`` naming the source, the key and the value; trace files are read by
``sweeps.traces`` (Polars), their problems named by file, line and column.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from sweeps.errors import ConfigError

ArrivalKind = Literal["poisson", "closed", "trace"]
LengthKind = Literal["fixed", "uniform", "lognormal", "csv"]
LENGTH_KINDS: tuple[str, ...] = ("fixed", "uniform", "lognormal", "csv")
TRACE_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")
LENGTH_COLUMNS = ("prompt_tokens", "output_tokens")


@dataclass(frozen=True)
class Lengths:
    """How request lengths are drawn (see the module docstring); ``pairs`` for ``csv``."""

    kind: LengthKind = "fixed"
    cv: float = 0.0
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    source: str = "lengths"

    def __post_init__(self) -> None:
        if self.kind not in LENGTH_KINDS:
            msg = (
                f"{self.source}: kind = {self.kind!r} is not a length distribution "
                f"(allowed: {', '.join(LENGTH_KINDS)})"
            )
            raise ConfigError(msg)
        if self.kind == "lognormal" and not (math.isfinite(self.cv) and self.cv > 0):
            msg = f"{self.source}: cv = {self.cv!r} must be a number > 0"
            raise ConfigError(msg)
        if self.kind == "csv" and len(self.pairs) == 0:
            msg = f"{self.source}: no (prompt_tokens, output_tokens) rows"
            raise ConfigError(msg)

    def draw(
        self, prompt: int, output: int, n: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """``n`` prompt and output lengths around the means ``prompt`` and ``output`` [token]."""
        if self.kind == "csv":
            rows = self.pairs[rng.integers(0, len(self.pairs), n)]
            return rows[:, 0].copy(), rows[:, 1].copy()
        return _draw(self.kind, self.cv, prompt, n, rng), _draw(self.kind, self.cv, output, n, rng)


def _draw(kind: str, cv: float, mean: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` integer lengths of mean ``mean`` (about, for lognormal) and at least 1 [token]."""
    if kind == "fixed":
        return np.full(n, mean, np.int64)
    if kind == "uniform":
        return rng.integers(1, 2 * mean, n, endpoint=False).astype(np.int64)
    sigma2 = math.log1p(cv * cv)
    values = rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), n)
    return np.maximum(np.rint(values), 1).astype(np.int64)


@dataclass(frozen=True)
class Arrivals:
    """When requests arrive: ``poisson`` at ``rate``, ``closed`` at ``concurrency``, or a
    ``trace`` of ``times`` with its own ``prompts`` and ``outputs``."""

    kind: ArrivalKind = "poisson"
    rate: float = 0.0
    concurrency: int = 0
    times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    prompts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    outputs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    source: str = "arrivals"
    stagger: int = 0
    """Closed loop: the first ``stagger`` requests start in the slots, prefilled, and end
    evenly spread over one request's decode steps (a warm start, as if the server had been
    running), not all together."""

    def __post_init__(self) -> None:
        if self.kind == "poisson" and not (math.isfinite(self.rate) and self.rate > 0):
            msg = f"{self.source}: arrival_rate = {self.rate!r} must be > 0"
            raise ConfigError(msg)
        if self.kind == "closed" and not (int(self.concurrency) == self.concurrency >= 1):
            msg = f"{self.source}: concurrency = {self.concurrency!r} must be a whole number >= 1"
            raise ConfigError(msg)
        if self.kind == "trace":
            _check_trace(self.times, self.prompts, self.outputs, self.source)


def poisson(rate: float) -> Arrivals:
    """Poisson arrivals at ``rate`` [request/s]."""
    return Arrivals("poisson", rate=rate)


def closed_loop(concurrency: int) -> Arrivals:
    """A closed loop of ``concurrency`` clients [request]."""
    return Arrivals("closed", concurrency=concurrency)


def backlog(requests: int, stagger: int = 0) -> Arrivals:
    """Every request there at time 0: the saturated regime of the closed forms. With
    ``stagger = B`` the first ``B`` start in the slots and end evenly spread
    (``Arrivals.stagger``), so the slots free one group at a time from the start, the steady
    state docs/serving.md section 3 assumes."""
    return Arrivals("closed", concurrency=requests, stagger=stagger)


@dataclass(frozen=True)
class Requests:
    """The requests of one simulation, in arrival order (closed loop: release order).

    arrival : Arrival times, ``inf`` where a closed loop sets them at a completion [s]
    prompt, output : Tokens of each request [token]
    released : Requests whose arrival is known at the start (all, but ``C`` in a closed loop)
    warm : The first requests already prefilled and decoding at the start, one a slot (a
        staggered backlog's warm start)
    """

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    released: int
    warm: int = 0


def draw_requests(
    arrivals: Arrivals, lengths: Lengths, prompt: int, output: int, n: int, seed: int
) -> Requests:
    """``n`` requests (all of a trace's, whatever ``n``) drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    if arrivals.kind == "trace":
        times = np.asarray(arrivals.times, np.float64)
        return Requests(times.copy(), arrivals.prompts.copy(), arrivals.outputs.copy(), times.size)
    prompts, outputs = lengths.draw(prompt, output, n, rng)
    if arrivals.kind == "poisson":
        times = np.cumsum(rng.exponential(1 / arrivals.rate, n))
        return Requests(times, prompts, outputs, n)
    if arrivals.stagger > 0:
        first = min(arrivals.stagger, n)
        ends = np.ceil(np.arange(1, first + 1) * (outputs[:first] - 1) / first).astype(np.int64)
        outputs[:first] = 1 + ends
    released = min(int(arrivals.concurrency), n)
    times = np.full(n, np.inf)
    times[:released] = 0.0
    return Requests(times, prompts, outputs, released, min(arrivals.stagger, released))


def _check_trace(times: np.ndarray, prompts: np.ndarray, outputs: np.ndarray, source: str) -> None:
    """A trace's times finite, >= 0 and sorted, its lengths whole numbers >= 1; rows counted
    as in its CSV file (row 1 the header) when it has one."""
    times = np.asarray(times, np.float64)
    first = 2 if source.endswith(".csv") else 1
    if times.size == 0:
        msg = f"{source}: the trace has no requests"
        raise ConfigError(msg)
    bad = np.flatnonzero(~np.isfinite(times) | (times < 0))
    if bad.size:
        msg = f"{source}: row {bad[0] + first}: arrival_s = {float(times[bad[0]])!r} must be >= 0"
        raise ConfigError(msg)
    late = np.flatnonzero(np.diff(times) < 0)
    if late.size:
        at = late[0] + 1
        msg = (
            f"{source}: row {at + first}: arrival_s = {float(times[at])!r} is before the row "
            f"above ({float(times[at - 1])!r}); a trace's times must be sorted"
        )
        raise ConfigError(msg)
    for name, values in (("prompt_tokens", prompts), ("output_tokens", outputs)):
        small = np.flatnonzero(np.asarray(values) < 1)
        if small.size:
            at = small[0]
            msg = f"{source}: row {at + first}: {name} = {int(values[at])} must be >= 1"
            raise ConfigError(msg)


def read_trace(path: str | Path, format: str | None = None, rate_scale: float = 1.0) -> Arrivals:
    """A trace file of any format ``sweeps.traces`` reads (recognised by its columns, or
    ``format``) as arrivals: its times, prompts and outputs; ``rate_scale`` times its load
    (its times divided by it: 2 replays it at twice its rate) [1]."""
    from sweeps.traces import read_trace as read

    if not (math.isfinite(rate_scale) and rate_scale > 0):
        msg = f"{path}: rate_scale = {rate_scale!r} must be a number > 0"
        raise ConfigError(msg)
    trace = read(path, format)
    return Arrivals(
        "trace", times=trace.arrival / rate_scale, prompts=trace.prompt, outputs=trace.output,
        source=str(path),
    )  # fmt: skip


def read_lengths(path: str | Path) -> Lengths:
    """An empirical CSV of ``prompt_tokens, output_tokens`` pairs, each at least 1 (or any
    trace ``sweeps.traces`` reads: its lengths)."""
    from sweeps.traces import read_trace as read

    trace = read(path)
    pairs = np.stack([trace.prompt, trace.output], 1).astype(np.int64)
    return Lengths("csv", pairs=pairs, source=str(path))


def write_trace(path: str | Path, requests: Requests) -> None:
    """``requests`` (arrival times known) as a trace CSV that ``read_trace`` reads back."""
    with Path(path).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TRACE_COLUMNS)
        for t, i, o in zip(requests.arrival, requests.prompt, requests.output, strict=True):
            writer.writerow((repr(float(t)), int(i), int(o)))


def write_lengths(path: str | Path, prompts: np.ndarray, outputs: np.ndarray) -> None:
    """(prompt, output) pairs as a lengths CSV that ``read_lengths`` reads back."""
    with Path(path).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(LENGTH_COLUMNS)
        writer.writerows(zip(prompts.tolist(), outputs.tolist(), strict=True))
