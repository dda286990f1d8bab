"""The axes of a sweep, declared once: every other list of them derives from ``AXES``.

An axis is a dimension of the grid and a field of the ``Sweep``: its name, how its labels are
stored in the tables (``name``: an Enum of ids; ``size``: an integer; ``heads``: the KV-head
setting, ``"native"`` or a count, stored as the effective count), its unit and description, and
its place in the chunk plan (``split``: the outer axes a grid is cut along, outermost first).
The dims of each analysis, the points of a sweep, the Enum categories of a chunked export, the
manifest, the summary, the CLI's labels and the bench sample all read this table.

Imports nothing heavy, so ``sweeps validate`` and ``sweeps --help`` stay fast.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

AxisKind = Literal["name", "size", "heads"]


@dataclass(frozen=True, slots=True)
class Axis:
    """One axis of the sweep.

    dim : Dimension name in the grid
    field : Attribute of the ``Sweep`` holding its values (records or numbers)
    kind : ``name`` (Enum column of ids), ``size`` (Int64 column) or ``heads``
    unit : Unit of its values (``-`` for labels)
    description : One line, what it means
    title : Short label for tables and chart axes
    column : Parquet column (defaults to ``dim``)
    split : Position among the axes a grid is cut along for chunks (0 outermost); None: never
    """

    dim: str
    field: str
    kind: AxisKind
    unit: str
    description: str
    title: str
    column: str = ""
    split: int | None = None

    @property
    def column_name(self) -> str:
        """The Parquet column name."""
        return self.column or self.dim

    def labels(self, sweep: Any) -> list[Any]:
        """The axis labels of ``sweep``: ids of records, numbers, or KV-head settings."""
        return [_label(value) for value in getattr(sweep, self.field)]


def _label(value: Any) -> Any:
    if isinstance(value, str | int | float):
        return value
    return getattr(value, "id", None) or value.name


AXES: tuple[Axis, ...] = (
    Axis(
        "model",
        "models",
        "name",
        "-",
        "Model id (catalog id or [models.*] table name)",
        "model",
        split=0,
    ),
    Axis(
        "hardware",
        "hardware",
        "name",
        "-",
        "Device id (catalog id or [hardware.*] table name)",
        "hardware",
        split=1,
    ),
    Axis(
        "tp",
        "tp",
        "size",
        "device",
        "Tensor-parallel degree: devices the model is split across",
        "tp",
        split=2,
    ),
    Axis(
        "batch",
        "batch",
        "size",
        "sequence",
        "Sequences processed together in one step",
        "batch",
        split=3,
    ),
    Axis(
        "context",
        "context",
        "size",
        "token",
        "Tokens in each sequence's KV cache at the decode step",
        "context",
    ),
    Axis(
        "prompt",
        "prompt",
        "size",
        "token",
        "Prompt tokens per sequence in the prefill",
        "prompt",
        column="context",
    ),
    Axis(
        "kv_heads",
        "kv_heads",
        "heads",
        "head",
        "Key/value heads: the model's own ('native') or a GQA override",
        "kv heads",
    ),
    Axis("kv_dtype", "kv_dtype", "name", "-", "Number format of the KV cache", "kv dtype"),
    Axis("weight_dtype", "weight_dtype", "name", "-", "Number format of the weights", "weights"),
)

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
    return math.prod(len(getattr(sweep, AXIS[dim].field)) for dim in dims)


def categories(sweep: Any) -> dict[str, list[str]]:
    """The labels of every name axis of ``sweep``: the Enum categories of its tables."""
    return {dim: [str(label) for label in AXIS[dim].labels(sweep)] for dim in NAME_DIMS}
