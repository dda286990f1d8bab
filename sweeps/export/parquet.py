"""Parquet files of a grid: decode, prefill and the specs, with units in the schema metadata."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import xarray as xr

from sweeps.export.frame import decode_frame, hardware_frame, models_frame, prefill_frame
from sweeps.grid import Variable, by_phase
from sweeps.grid.variables import Phase

_MAKERS = {
    "decode": decode_frame,
    "prefill": prefill_frame,
    "hardware": hardware_frame,
    "models": models_frame,
}
TABLES = tuple(_MAKERS)


# Registry phases whose entries name each table's columns, first match wins; and the entries
# that stand for something else there (the kv_heads label is exported as its count; the
# prefill's prompt axis is its context column).
_TABLE_PHASES: dict[str, tuple[Phase, ...]] = {
    "decode": ("axis", "decode"),
    "prefill": ("axis", "prefill", "decode"),
    "hardware": ("hardware", "axis"),
    "models": ("model", "axis"),
}
_EXCLUDED = {"decode": {"kv_heads", "prompt"}, "prefill": {"kv_heads", "context"}}


def column_info(frame: pl.DataFrame, table: str) -> dict[str, dict[str, str]]:
    """Unit and description of every column of ``frame``, one of the four ``TABLES``."""
    lookup: dict[str, Variable] = {}
    for phase in _TABLE_PHASES[table]:
        for entry in by_phase(phase):
            if entry.name not in _EXCLUDED.get(table, ()):
                lookup.setdefault(entry.column_name, entry)
    info = {}
    for column in frame.columns:
        found = lookup.get(column)
        if found is None:
            msg = f"column {column!r} of {table}.parquet is not declared in the registry"
            raise KeyError(msg)
        info[column] = {"unit": found.unit, "description": found.description}
    return info


def write_frame(frame: pl.DataFrame, path: Path, table: str) -> dict[str, dict[str, str]]:
    """Write ``frame`` with its columns' units and descriptions as Parquet key-value metadata.

    Keys: ``sweeps:columns`` (JSON of ``{column: {unit, description}}``) and one
    ``unit:<column>`` per column, readable with DuckDB's ``parquet_kv_metadata``. Returns that
    ``{column: {unit, description}}`` map (``column_info``).
    """
    info = column_info(frame, table)
    metadata = {"sweeps:columns": json.dumps(info)}
    metadata.update({f"unit:{column}": entry["unit"] for column, entry in info.items()})
    frame.write_parquet(path, metadata=metadata, **WRITE_OPTIONS)
    return info


WRITE_OPTIONS: dict[str, Any] = {"statistics": True, "row_group_size": 1 << 17}
"""Polars ``write_parquet`` settings of every table. Row groups of 131,072 rows (DuckDB's own
are 122,880) whatever the frame's chunks or the writer's thread count, so a file's layout
depends on its rows only."""


def frames(ds: xr.Dataset) -> dict[str, pl.DataFrame]:
    """The four tables of a result, by name."""
    return {name: make(ds) for name, make in _MAKERS.items()}


@dataclass(frozen=True)
class Written:
    """One table written by ``write_tables``: its row count and its columns' units."""

    rows: int
    columns: dict[str, dict[str, str]]


def write_tables(ds: xr.Dataset, folder: Path) -> dict[str, Written]:
    """Write ``<table>.parquet`` for each of the four ``TABLES`` into ``folder``.

    One table at a time: each frame is built, written and freed before the next, so the export
    needs memory for the largest table only, not for all of them. A lazy (dask-backed) grid is
    computed once first, not once per column.
    """
    if any(variable.chunks is not None for variable in ds.variables.values()):
        ds = ds.compute()
    written = {}
    for name, make in _MAKERS.items():
        frame = make(ds)
        info = write_frame(frame, folder / f"{name}.parquet", name)
        written[name] = Written(frame.height, info)
        del frame
    return written


def to_parquet(ds: xr.Dataset, folder: str | Path) -> dict[str, int]:
    """Write ``decode``, ``prefill``, ``hardware`` and ``models`` ``.parquet`` into ``folder``.

    Returns the row count of each table.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {name: table.rows for name, table in write_tables(ds, folder).items()}


def read_units(path: str | Path) -> dict[str, dict[str, str]]:
    """The ``{column: {unit, description}}`` map stored in a Parquet file by ``write_frame``."""
    metadata = pl.read_parquet_metadata(path)
    return json.loads(metadata["sweeps:columns"])
