"""``prefix_hit_rate = "trace"``: the hit rate a trace's prefix blocks give at each grid
point's own cache (docs/workloads.md).

The value ``"trace"`` of the ``prefix_hit_rate`` axis is a record, ``TraceHitRate``: the
trace named by ``[axes] prefix_trace`` (else ``[workload] trace``; relative to the config
file: ``sweeps.traces.locate``) and its exact LRU hit curve (``sweeps.traces.reuse``), read
once when the config is resolved. Its coordinate on the axis is NaN (a null in the tables):
no one number. The hit rate at a point is ``sweeps.engine.steps.prefix_hit``'s, the curve at
the cache that point's device leaves; the prefix table's ``hit_rate`` column says it.
Imports nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeps.studies.prefix.tiers import Problem

if TYPE_CHECKING:
    from sweeps.traces.reuse import HitCurve

TRACE = "trace"
"""The ``prefix_hit_rate`` label that takes the trace's hit rate."""


@dataclass(frozen=True, eq=False)
class TraceHitRate:
    """The ``"trace"`` value of ``prefix_hit_rate``.

    source : The trace file read
    curve : Its exact LRU hit curve [block -> 1]
    """

    source: str
    curve: HitCurve

    @property
    def id(self) -> float:
        """Its coordinate on the axis: NaN, no one number (a null in the tables) [1]."""
        return math.nan


def _read(value: str, config: str) -> tuple[TraceHitRate | None, str]:
    """The record of the trace ``value`` names in ``config``, or the problem with it."""
    from sweeps.errors import TraceError
    from sweeps.traces.locate import locate
    from sweeps.traces.read import read_trace
    from sweeps.traces.reuse import hit_curve

    key = "axes.prefix_trace"
    try:
        path = locate(value, config, key)
        trace = read_trace(path)
        if not trace.has_hashes:
            msg = f"{trace.format} trace {path.name} has no prefix-block hashes; allowed: a "
            msg += "trace with them (the mooncake format's hash_ids)"
            return None, msg
        return TraceHitRate(str(path), hit_curve(trace)), ""
    except TraceError as error:
        return None, str(error).removeprefix(f"{config}: {key} = {value!r}").lstrip(": ")


def trace_records(
    values: Mapping[str, tuple[Any, ...]], table: Any, config: str, workload: str | None = None
) -> tuple[dict[str, tuple[Any, ...]], list[Problem]]:
    """``"trace"`` among ``values["prefix_hit_rate"]`` made a ``TraceHitRate`` of ``table``'s
    ``prefix_trace`` (the validated ``[axes]``; the ``[workload]`` trace, ``workload``, where
    it names none), read relative to the file ``config``."""
    rates, named = values["prefix_hit_rate"], table.prefix_trace
    if TRACE not in rates:
        if named is None:
            return {}, []
        return {}, [("prefix_trace", f"{named!r} is read only where prefix_hit_rate has 'trace'")]
    if named is None and workload is None:
        msg = "'trace' needs prefix_trace = \"FILE\" (a trace with prefix-block hashes)"
        return {}, [("prefix_hit_rate", msg)]
    record, problem = _read(named or str(workload), config)
    if record is None and named is None:
        return {}, [("prefix_hit_rate", f"'trace' takes workload.trace {workload!r}: {problem}")]
    if record is None:
        return {}, [("prefix_trace", f"{named!r}: {problem}")]
    return {"prefix_hit_rate": tuple(record if r == TRACE else r for r in rates)}, []
