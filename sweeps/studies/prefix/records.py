"""``Study.records`` of the prefix study: the tiers resolved (``tiers``), ``"trace"`` among the
hit rates made the trace's record (``trace``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sweeps.studies.prefix.tiers import Problem, tier_records
from sweeps.studies.prefix.trace import trace_records


def prefix_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[Problem]]:
    """The prefix study's records and the problems found (keys relative to ``[axes]``)."""
    tiers, problems = tier_records(values, axes, sources)
    config = sources["config"]
    workload = getattr(config, "workload", None)
    path = sources.get("path", "<config>")
    rates, found = trace_records(values, config.axes, path, workload and workload.trace)
    return {**tiers, **rates}, [*problems, *found]
