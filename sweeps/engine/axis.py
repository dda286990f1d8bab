"""What an axis is: a dimension of the grid, declared once, where its values are given.

A study's axis is a key of its config table: the field of that table carries its ``Axis``
row in its metadata (``Annotated[..., key_axis(...)]``), and ``table_axes`` reads the rows
back, each named by its key. The grid's own axes (model, hardware, ...) are ``GRID_AXES``;
``sweeps.studies.AXES`` gathers every row. Here, below the studies, so that a study's folder
declares its rows beside its table, and the core analyses know the grid's axes.

Imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

NATIVE = "native"
"""The ``kv_heads`` setting that keeps each model's own KV heads."""

AxisKind = Literal["name", "size", "heads", "value"]


@dataclass(frozen=True, slots=True)
class Axis:
    """One axis of the sweep.

    dim : Dimension name in the grid
    field : Attribute of the ``Sweep`` holding its values (records or numbers)
    kind : ``name`` (Enum column of ids), ``size`` (Int64 column), ``value`` (Float64 column)
        or ``heads``
    unit : Unit of its values (``-`` for labels)
    description : One line, what it means
    title : Short label for tables and chart axes
    column : Parquet column (defaults to ``dim``)
    split : Position among the axes a grid is cut along for chunks (0 outermost); None: never
    derive : The labels as a function of the sweep, for an axis that is no field of it
        (``field`` then names what they come from)
    most : The most labels ``derive`` gives (what the points cap counts before resolving)
    """

    dim: str
    field: str
    kind: AxisKind
    unit: str
    description: str
    title: str
    column: str = ""
    split: int | None = None
    derive: Callable[[Any], Sequence[Any]] | None = None
    most: int = 0

    @property
    def column_name(self) -> str:
        """The Parquet column name."""
        return self.column or self.dim

    def labels(self, sweep: Any) -> list[Any]:
        """The axis labels of ``sweep``: ids of records, numbers, or KV-head settings."""
        values = self.derive(sweep) if self.derive else getattr(sweep, self.field)
        return [_label(value) for value in values]

    def size(self, sweep: Any) -> int:
        """How many labels the axis has in ``sweep`` [1]."""
        return len(self.labels(sweep)) if self.derive else len(getattr(sweep, self.field))


def _label(value: Any) -> Any:
    if isinstance(value, bool):  # axes.dp_attention: the TOML spelling, an Enum label
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return value
    return getattr(value, "id", None) or value.name


def key_axis(kind: AxisKind, unit: str, description: str, title: str) -> Axis:
    """The ``Axis`` row of a study's table key, as the key's field metadata: its dim and its
    ``Sweep`` field are the key's name (``table_axes`` fills them in)."""
    return Axis("", "", kind, unit, description, title)


@functools.cache
def table_axes(table: Any) -> tuple[Axis, ...]:
    """The ``Axis`` rows a config table model (pydantic) declares on its fields, in the
    fields' order, each named by its key."""
    return tuple(
        dataclasses.replace(row, dim=name, field=name)
        for name, info in table.model_fields.items()
        for row in info.metadata
        if isinstance(row, Axis)
    )


GRID_AXES: tuple[Axis, ...] = (
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
"""The grid's own axes (the core keys of ``[axes]``), outermost first; the studies' follow
(``sweeps.studies.AXES``)."""
