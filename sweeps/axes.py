"""The axes of a sweep, declared once each: every list of them derives from ``AXES``.

An axis is a dimension of the grid and a field of the ``Sweep``: its name, how its labels are
stored in the tables (``name``: an Enum of ids; ``size``: an integer; ``heads``: the KV-head
setting, ``"native"`` or a count, stored as the effective count), its unit and description, and
its place in the chunk plan (``split``: the outer axes a grid is cut along, outermost first).
The grid's own axes are ``sweeps.engine.axis.GRID_AXES``; a study's are declared in its folder,
beside the keys of its config table that give their values (``sweeps.engine.axis.key_axis``),
with those it adds that are no key (``Study.more_axes``); ``sweeps.studies.AXES`` gathers them
in the canonical order, and this module derives the rest from it. The dims of each analysis, the
points of a sweep, the Enum categories of a chunked export, the manifest, the summary, the CLI's
labels and the bench sample all read it.

Imports nothing heavy, so ``sweeps validate`` and ``sweeps --help`` stay fast.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from sweeps.engine.axis import GRID_AXES, NATIVE, Axis, AxisKind
from sweeps.studies import AXES, DIMS, STUDIES

__all__ = [
    "AXES",
    "AXIS",
    "DIMS",
    "GRID_AXES",
    "NAME_DIMS",
    "NATIVE",
    "SPLIT_DIMS",
    "STUDY_FIELDS",
    "Axis",
    "AxisKind",
]

STUDY_FIELDS: frozenset[str] = frozenset(dim for study in STUDIES for dim in study.axes)
"""The ``Sweep`` fields the studies' keys give, by their keys' names (``Sweep.study_axes``)."""


AXIS: dict[str, Axis] = {axis.dim: axis for axis in AXES}
"""Every axis by its dim."""

SPLIT_DIMS: tuple[str, ...] = tuple(
    axis.dim
    for axis in sorted((a for a in AXES if a.split is not None), key=lambda a: a.split or 0)
)
"""The outer dims a grid is cut along for chunks, outermost first."""

NAME_DIMS: tuple[str, ...] = tuple(axis.dim for axis in AXES if axis.kind == "name")
"""Dims whose labels are ids, written as Enum columns."""


def canonical(dims: Iterable[str]) -> tuple[str, ...]:
    """``dims`` in the canonical order of ``AXES`` (an unknown dim is a ``KeyError``)."""
    wanted = set(dims)
    unknown = sorted(wanted - set(AXIS))
    if unknown:
        msg = f"unknown dims {unknown}; the axes are {[a.dim for a in AXES]}"
        raise KeyError(msg)
    return tuple(axis.dim for axis in AXES if axis.dim in wanted)


def points(sweep: Any, dims: Sequence[str]) -> int:
    """Points of ``sweep``'s grid over ``dims`` [1]: the product of the axis lengths."""
    return math.prod(AXIS[dim].size(sweep) for dim in dims)


def categories(sweep: Any) -> dict[str, list[str]]:
    """The labels of every name axis of ``sweep``: the Enum categories of its tables."""
    return {dim: [str(label) for label in AXIS[dim].labels(sweep)] for dim in NAME_DIMS}
