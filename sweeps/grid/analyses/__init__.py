"""The analyses of the grid, in dependency order: each one module, registered here.

To add an analysis: write its module (dims, variables, compute; see ``base``) and add it to
``ANALYSES`` after the analyses it needs. Its table, memory estimate, registry entries,
streaming and manifest follow from the declaration.
"""

from sweeps.grid.analyses.base import (
    COLUMN_ITEMSIZE,
    ITEMSIZE,
    Analysis,
    DType,
    Engine,
    Inputs,
    Rank,
    Variable,
)
from sweeps.grid.analyses.decode import DECODE
from sweeps.grid.analyses.model import MODEL
from sweeps.grid.analyses.prefill import PREFILL

ANALYSES: tuple[Analysis, ...] = (MODEL, DECODE, PREFILL)
"""Every analysis, each after those it needs."""

BY_NAME: dict[str, Analysis] = {analysis.name: analysis for analysis in ANALYSES}

TABLES: tuple[Analysis, ...] = tuple(a for a in ANALYSES if a.has_table)
"""The analyses that write a table, in order (``decode``, ``prefill``, ...)."""


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
    "owner",
]
