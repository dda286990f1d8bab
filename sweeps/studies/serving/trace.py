"""``[workload] trace = "..."``: a production trace as the serving study's workload
(docs/workloads.md).

The trace (``sweeps.traces``: any format ``sweeps workload`` reads), located relative to the
config file (``sweeps.traces.locate``), is read once when the config is resolved and gives
the serving axes: ``prompt_tokens`` and ``output_tokens`` its mean lengths (rounded, at least
1), ``arrival_rate`` its mean rate ``(n - 1) / (t_n - t_1)`` times each ``rate_scale``. The
named schedulers' rows of the serving and pools tables are then their closed forms at those
means (estimates for the trace's distribution, docs/workloads.md); the serving table's
``bound`` rows are the bound of the distribution itself, from every request's lengths
(``Requests``, the derived input ``_trace_requests``: ``sweeps.studies.serving.distribution``);
the simulated plans replay the trace itself, its first ``[serving] simulate`` requests at
their recorded times divided by the scale, with their own lengths. Each rate is a
``TraceLoad`` record whose label is the rate. Imports nothing heavy (numpy when the
distribution is made).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FROM_TRACE = ("prompt_tokens", "output_tokens", "arrival_rate", "concurrency", "lengths")
"""The ``[serving]`` keys a workload trace gives (``lengths``: the replays take the trace's
own): the table must leave them out."""

Problem = tuple[str, str]


@dataclass(frozen=True, eq=False)
class TraceLoad:
    """One value of ``arrival_rate`` under ``[workload]``: the trace at a time scale.

    rate : The trace's mean rate times ``scale`` [request/s]
    scale : Its multiple of the trace's load [1]
    source : The trace file read
    trace : The trace (``sweeps.traces.Trace``)
    """

    rate: float
    scale: float
    source: str
    trace: Any

    @property
    def id(self) -> float:
        """Its label on the axis: the rate [request/s]."""
        return self.rate

    def arrivals(self, requests: int) -> Any:
        """The trace's first ``requests`` requests (all of them where it has fewer) at their
        recorded times divided by ``scale``, with their own lengths, as simulator arrivals."""
        from sweeps.studies.serving.simulate.workload import Arrivals

        n = min(requests, self.trace.requests)
        return Arrivals(
            "trace", times=self.trace.arrival[:n] / self.scale, prompts=self.trace.prompt[:n],
            outputs=self.trace.output[:n], source=self.source,
        )  # fmt: skip


def mean_rate(arrival: Any) -> float:
    """Requests per second over a trace's span, ``(n - 1) / (t_n - t_1)`` [request/s]."""
    span = float(arrival[-1] - arrival[0]) if len(arrival) > 1 else 0.0
    return (len(arrival) - 1) / span if span > 0 else 0.0


def _read(table: Any, config: str) -> tuple[Any, str, str]:
    """The trace ``[workload]`` names, its path, or the problem with it."""
    from sweeps.errors import TraceError
    from sweeps.traces.locate import locate
    from sweeps.traces.read import read_trace

    try:
        path = locate(table.trace, config, "workload.trace")
        return read_trace(path, table.format), str(path), ""
    except TraceError as error:
        return None, "", str(error).removeprefix(f"{config}: workload.trace = ")


def _scale_problems(
    scales: Sequence[float], rate: float, trace: Any, simulate: int
) -> list[Problem]:
    """Each ``rate_scale`` whose rate is below ``limits.MIN_RATE``, or whose replay of the
    first ``simulate`` requests spans more than ``limits.MAX_SIMULATED_SPAN_S``."""
    from sweeps import limits

    n = min(simulate, trace.requests)
    span = float(trace.arrival[n - 1] - trace.arrival[0]) if n > 1 else 0.0
    problems = []
    for index, scale in enumerate(scales):
        key = f"/workload.rate_scale[{index}]"
        if rate * scale < limits.MIN_RATE:
            problems.append(
                (key, f"{scale:g} makes the trace's {rate:g} request/s {rate * scale:g}; "
                      f"allowed: a rate of at least {limits.MIN_RATE:g} request/s "
                      f"(limits.MIN_RATE), a scale of at least {limits.MIN_RATE / rate:g}")
            )  # fmt: skip
        elif span / scale > limits.MAX_SIMULATED_SPAN_S:
            problems.append(
                (key, f"{scale:g} spreads the {n:,} requests simulated over "
                      f"{span / scale:.3g} s; allowed: at most "
                      f"{limits.MAX_SIMULATED_SPAN_S:g} s (limits.MAX_SIMULATED_SPAN_S)")
            )  # fmt: skip
    return problems


def workload_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[Problem]]:
    """``Study.records`` of the serving study: with ``[workload]``, its axes from the trace
    (module docstring); problems keyed relative to ``[serving]`` (``/workload.trace``: the
    workload table's own)."""
    config = sources["config"]
    table = config.workload
    if table is None:
        return {}, []
    given = sorted(set(FROM_TRACE) & config.serving.model_fields_set)
    problems = [
        (key, f"comes from workload.trace ({table.trace!r}); leave it out of [serving]")
        for key in given
    ]
    trace, path, problem = _read(table, sources.get("path", "<config>"))
    if trace is None:
        return {}, [*problems, ("/workload.trace", problem)]
    rate = mean_rate(trace.arrival)
    if not rate > 0:
        found = f"{trace.requests} requests over 0 s"
        problems.append(("/workload.trace", f"{path}: {found}: no arrival rate; allowed: a span"))
        return {}, problems
    problems += _scale_problems(table.rate_scale, rate, trace, config.serving.simulate)
    loads = tuple(TraceLoad(rate * s, s, path, trace) for s in table.rate_scale)
    return {
        "prompt_tokens": (max(1, round(float(trace.prompt.mean()))),),
        "output_tokens": (max(1, round(float(trace.output.mean()))),),
        "arrival_rate": loads,
        "concurrency": (),
    }, problems


@dataclass(frozen=True, eq=False)
class Requests:
    """A trace's length distribution: its distinct ``(I, O)`` pairs and how often each comes.

    prompt, output : Each pair's tokens [token]
    count : Its requests [1]
    """

    prompt: Any
    output: Any
    count: Any

    @classmethod
    def of(cls, trace: Any) -> Requests:
        """The distribution of every request of ``trace``."""
        import numpy as np

        pairs = np.stack([trace.prompt, trace.output], axis=1)
        distinct, count = np.unique(pairs, axis=0, return_counts=True)
        as_float = distinct.astype(np.float64)
        return cls(as_float[:, 0], as_float[:, 1], count.astype(np.float64))


def workload_inputs(sweep: Any) -> dict[str, tuple[tuple[str, ...], Any]]:
    """``_trace_requests``: the workload trace's length distribution (``Requests``, one value:
    ``sweeps.studies.serving.distribution`` reads it); none without ``[workload]``."""
    import numpy as np

    for load in getattr(sweep, "arrival_rate", ()):
        if isinstance(load, TraceLoad):
            return {"_trace_requests": ((), np.array(Requests.of(load.trace), dtype=object))}
    return {}


def trace_load(sweep: Any, rate: Any) -> TraceLoad | None:
    """The ``TraceLoad`` of ``sweep``'s ``arrival_rate`` axis at ``rate``, or None (no
    ``[workload]``, or a closed loop)."""
    for load in getattr(sweep, "arrival_rate", ()):
        if isinstance(load, TraceLoad) and load.rate == rate:
            return load
    return None
