"""The analyses of the grid: what a sweep asks for, its dims and tables, read from the one
registry (``sweeps.studies.ANALYSES``: the core's and each study's, in dependency order).

To add an analysis: write its module (dims, variables, compute; see ``sweeps.engine.base``)
in its study's folder and list it in its ``STUDY.analyses``. Its table, memory estimate,
registry entries, streaming and manifest follow from the declaration.
"""

from typing import Any

from sweeps.axes import DIMS, canonical
from sweeps.engine.base import (
    COLUMN_ITEMSIZE,
    ITEMSIZE,
    Analysis,
    DType,
    Engine,
    Inputs,
    Rank,
    Variable,
)
from sweeps.studies import ANALYSES, STUDIES

BY_NAME: dict[str, Analysis] = {analysis.name: analysis for analysis in ANALYSES}

TABLES: tuple[Analysis, ...] = tuple(a for a in ANALYSES if a.has_table)
"""The analyses that write a table, in order (``decode``, ``prefill``, ...)."""


def applicable(sweep: Any) -> tuple[Analysis, ...]:
    """The analyses ``sweep`` asks for, in dependency order."""
    return tuple(analysis for analysis in ANALYSES if analysis.wanted(sweep))


def tables(sweep: Any) -> tuple[Analysis, ...]:
    """The analyses whose tables ``sweep`` writes, in order."""
    return tuple(analysis for analysis in TABLES if analysis.wanted(sweep))


def _present(sweep: Any) -> set[str]:
    """The dims ``sweep`` has: those of the analyses it asks for, and the axes of its studies
    that it gives values (``[serving] arrival_rate`` or ``concurrency``, one of the two)."""
    from sweeps.axes import AXIS

    own = {dim for analysis in applicable(sweep) for dim in analysis.dims}
    studies = getattr(sweep, "studies", {})
    given = {
        dim
        for study in STUDIES
        if study.name in studies
        for dim in study.axes
        if AXIS[dim].size(sweep) > 0
    }
    return own | given


def active_dims(sweep: Any) -> tuple[str, ...]:
    """Every dim of the analyses ``sweep`` asks for, in the canonical order of the axes."""
    present = _present(sweep)
    return canonical({dim for a in applicable(sweep) for dim in a.dims_over(present, DIMS)})


def dims_of(analysis: Analysis, sweep: Any) -> tuple[str, ...]:
    """The dims of ``analysis`` in ``sweep``'s grid: its own, and the extra dims it takes on
    that the sweep has (``Analysis.extra_dims``)."""
    return analysis.dims_over(_present(sweep), DIMS)


def table_rows(analysis: Analysis, sweep: Any) -> int:
    """Rows of ``analysis``'s table in ``sweep``: what the run writes (``Analysis.count``
    where its ``rows`` leave grid points out, else every point of its dims) [row]."""
    dims = dims_of(analysis, sweep)
    return analysis.count(sweep, dims) if analysis.count else int(sweep.points(dims))


def owner(name: str) -> Analysis:
    """The analysis that declares the variable ``name`` (``KeyError`` if none does)."""
    for analysis in ANALYSES:
        if any(v.name == name for v in analysis.variables):
            return analysis
    msg = f"no analysis declares the variable {name!r}"
    raise KeyError(msg)


__all__ = [
    "ANALYSES",
    "BY_NAME",
    "COLUMN_ITEMSIZE",
    "ITEMSIZE",
    "TABLES",
    "Analysis",
    "DType",
    "Engine",
    "Inputs",
    "Rank",
    "Variable",
    "active_dims",
    "applicable",
    "dims_of",
    "owner",
    "table_rows",
    "tables",
]
