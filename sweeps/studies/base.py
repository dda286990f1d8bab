"""What a study is: a config table, the axes it adds, its objectives, declared once.

A *study* is an optional part of a sweep that a config turns on with a table of its own (or
with keys of ``[axes]``): ``[serving]`` turns on the serving and pools analyses. A ``Study``
declares, in one place, what the generic code needs to know about it:

- ``table``: the config table that holds its keys (``"serving"``; ``"axes"`` for a study whose
  axes sit among the grid's own, turned on when any of them is given);
- ``keys``: the model (pydantic) of its keys in that table; a key that is an axis carries its
  ``Axis`` row (``sweeps.engine.axis.key_axis``) in its field's metadata: ``axes`` are those
  keys (each expanded like any axis, ranges included, and stored on the ``Sweep`` by name),
  and ``sweeps.axes.AXES`` holds their rows, with ``more_axes`` (the axes it adds that are
  no key: the serving plans' ``mode``, ...);
- ``attrs``: the settings recorded in the grid's attrs (the objectives the charts read);
- ``settings``: how the resolved settings are made from the validated table (what the
  analyses of the study read as ``Inputs.settings``);
- ``check``: cross-checks of the table against the rest of the sweep, as (key, message) pairs.

An analysis names its study (``Analysis.study``); it then runs only when the sweep has it, and
its compute reads the study's settings. Config resolution, the points cap, the unknown-key
messages, the grid's attrs and the scalar loop all read this table: nothing of a study is
threaded by hand through generic code. Each study's folder (``sweeps.studies.<name>``)
declares its ``STUDY``; ``sweeps.studies.STUDIES`` is the registry. To add a study, see
CONTRIBUTING.md.

Imports nothing heavy, so ``sweeps validate`` and ``sweeps --help`` stay fast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweeps.engine.axis import Axis, table_axes

Records = Callable[
    [Mapping[str, tuple[Any, ...]], Mapping[str, Any], Mapping[str, Any]],
    tuple[dict[str, tuple[Any, ...]], list[tuple[str, str]]],
]
"""Labels of a study's axes turned into records: from its axes' values by dim, the sweep's
resolved axes by field (``models``, ``hardware``, ...) and the sources (``models``: the custom
model records, ``catalog``, ``config``: the validated file), the records by dim and the
problems found, each a key (relative to the table; ``/table.key`` for a key of another table
the records read, as the serving study's ``[workload]``) and a message."""

Check = Callable[[Any, Mapping[str, Sequence[Any]]], list[tuple[str, str]]]
"""Cross-checks of a study's validated table against the sweep's resolved axes (by field):
the problems found, each a key (relative to the table) and a message."""


@dataclass(frozen=True, slots=True)
class PostStep:
    """A table a study writes after the grid's tables, from one of them (``simulated.parquet``
    from the pools table): declared by its variables, run and written by the export
    (``sweeps.export.post_steps``), which reads its input table and writes its rows.

    name : The table's name (its file ``<name>.parquet``)
    reads : The grid's table it is made from (``pools``)
    variables : Its columns, in order (``sweeps.engine.base.Variable``: unit, description,
        dtype ``str``, ``int64`` or ``float64``)
    wanted : Whether a sweep asks for it
    prepare : What it reads before the grid, from the sweep (a lengths CSV: a bad one fails
        the run before any work)
    run : Its results from (the input table as a Polars frame, the sweep, the prepared
        value, the grid's inputs at a point: ``sweeps.grid.scalar.point_inputs``, handed in by
        the export): each with ``row``, a value by column name
    """

    name: str
    reads: str
    variables: tuple[Any, ...]
    wanted: Callable[[Any], bool]
    prepare: Callable[[Any], Any]
    run: Callable[[Any, Any, Any, Any], list[Any]]


@dataclass(frozen=True, slots=True)
class Study:
    """One optional part of a sweep, turned on by a config table.

    name : Its name: the key of ``Sweep.studies`` and of ``Analysis.study``
    table : The config table holding its keys (``serving``, or ``axes`` when its axes sit
        among the grid's own)
    keys : The model (pydantic) of its keys in ``table`` (the whole table, or the part of
        ``[axes]`` that is its); the fields carrying an ``Axis`` row are its axes
    attrs : Settings recorded in the grid's attrs (objectives, by key)
    settings : The resolved settings from the validated table (None: the table itself)
    check : Cross-checks of the table against the sweep's other axes (see ``Check``)
    description : One line, what it adds
    defaults : Values of its axes that the table leaves out (a study on ``[axes]`` is on when
        any of its axes is given; the others take these)
    records : Turns the labels of axes that name things (drafts, tiers) into records (see
        ``Records``); None: the values are the labels
    analyses : Its analyses (``sweeps.engine.base.Analysis``), each with ``study = name``, in
        dependency order: ``sweeps.studies.ANALYSES`` holds them
    post_steps : The tables it writes after the grid's, from them (see ``PostStep``)
    more_axes : The axes it adds that are no key of ``table`` (``Axis.derive`` gives their
        labels from the sweep, or ``Axis.field`` names the ``Sweep`` field they take)
    """

    name: str
    table: str
    keys: Any
    attrs: tuple[str, ...] = ()
    settings: Callable[[Any], Any] | None = None
    check: Check | None = None
    description: str = ""
    defaults: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    records: Records | None = None
    analyses: tuple[Any, ...] = ()
    post_steps: tuple[PostStep, ...] = ()
    more_axes: tuple[Axis, ...] = ()

    @property
    def axes(self) -> tuple[str, ...]:
        """Its keys that are axes (their dims and ``Sweep`` fields), in the table's order."""
        return tuple(row.dim for row in table_axes(self.keys))

    @property
    def axis_rows(self) -> tuple[Axis, ...]:
        """The ``Axis`` rows of its axes: its keys', then ``more_axes``."""
        return (*table_axes(self.keys), *self.more_axes)

    def axis(self, dim: str) -> Axis:
        """Its axis ``dim`` (a ``KeyError`` naming its axes where it has none)."""
        for row in self.axis_rows:
            if row.dim == dim:
                return row
        dims = [row.dim for row in self.axis_rows]
        msg = f"study {self.name!r} has no axis {dim!r}; its axes: {dims}"
        raise KeyError(msg)

    def given(self, table: Any, dim: str) -> Any:
        """The value of axis ``dim`` in the validated ``table``, or its default."""
        value = getattr(table, dim, None)
        return self.defaults.get(dim) if value is None else value

    def present(self, table: Any) -> bool:
        """Whether a config whose ``table`` (the validated table, or None) turns the study on."""
        if table is None:
            return False
        if self.table != "axes":
            return True
        return any(getattr(table, dim, None) is not None for dim in self.axes)

    def resolve(self, table: Any) -> Any:
        """The study's resolved settings from its validated table."""
        return self.settings(table) if self.settings is not None else table
