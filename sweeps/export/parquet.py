"""Parquet files of a grid: decode, prefill and the specs, with units in the schema metadata."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import xarray as xr

from sweeps.axes import AXIS
from sweeps.catalog.records import HARDWARE_SPECS, MODEL_SPECS
from sweeps.export.frame import TABLE_NAMES, frame, table_names
from sweeps.grid import REGISTRY, Variable
from sweeps.grid.analyses import BY_NAME

TABLES = TABLE_NAMES

WRITE_OPTIONS: dict[str, Any] = {"statistics": True, "row_group_size": 1 << 17}
"""Polars ``write_parquet`` settings of every table. Row groups of 131,072 rows (DuckDB's own
are 122,880) whatever the frame's chunks or the writer's thread count, so a file's layout
depends on its rows only."""

_SPEC_DIMS = {"hardware": ("hardware", HARDWARE_SPECS), "models": ("model", MODEL_SPECS)}


def _axis_entries(dims: tuple[str, ...]) -> list[Variable]:
    """The registry entries of a table's axis columns: the KV-head setting is exported as
    the count in effect, with its native flag beside it."""
    entries = []
    for dim in dims:
        if AXIS[dim].kind == "heads":
            entries += [REGISTRY["kv_heads_count"], REGISTRY[f"{dim}_native"]]
        else:
            entries.append(REGISTRY[dim])
    return entries


def declared_columns(table: str) -> dict[str, Variable]:
    """The registry entry behind each column of ``table`` (one of ``TABLES``), by column."""
    if table in _SPEC_DIMS:
        dim, specs = _SPEC_DIMS[table]
        entries = [REGISTRY[dim], *(REGISTRY[spec.name] for spec in specs)]
    else:
        analysis = BY_NAME[table]
        entries = [*_axis_entries(analysis.dims), *(REGISTRY[n] for n in analysis.columns)]
    return {entry.column_name: entry for entry in entries}


def column_info(frame: pl.DataFrame, table: str) -> dict[str, dict[str, str]]:
    """Unit and description of every column of ``frame``, one of the ``TABLES``."""
    lookup = declared_columns(table)
    info = {}
    for column in frame.columns:
        found = lookup.get(column)
        if found is None:
            msg = f"column {column!r} of {table}.parquet is not declared in the registry"
            raise KeyError(msg)
        info[column] = {"unit": found.unit, "description": found.description}
    return info


def write_frame(frame: pl.DataFrame, path: Path, table: str) -> dict[str, dict[str, str]]:
    """Write ``frame``, one of the ``TABLES``, with its columns' units (see ``write_with_units``).

    Returns the ``{column: {unit, description}}`` map written (``column_info``).
    """
    info = column_info(frame, table)
    write_with_units(frame, path, info)
    return info


def write_with_units(frame: pl.DataFrame, path: Path, info: dict[str, dict[str, str]]) -> None:
    """Write ``frame`` with ``info`` (``{column: {unit, description}}``) as Parquet key-value
    metadata: ``sweeps:columns`` (the JSON of ``info``) and one ``unit:<column>`` per column,
    readable with DuckDB's ``parquet_kv_metadata``."""
    metadata = {"sweeps:columns": json.dumps(info)}
    metadata.update({f"unit:{column}": entry["unit"] for column, entry in info.items()})
    frame.write_parquet(path, metadata=metadata, **WRITE_OPTIONS)


def frames(ds: xr.Dataset) -> dict[str, pl.DataFrame]:
    """Every table of the result ``ds`` (``table_names``), by name."""
    return {name: frame(ds, name) for name in table_names(ds)}


@dataclass(frozen=True)
class Written:
    """One table written by ``write_tables``: its row count and its columns' units."""

    rows: int
    columns: dict[str, dict[str, str]]


def write_tables(ds: xr.Dataset, folder: Path) -> dict[str, Written]:
    """Write ``<table>.parquet`` for each of the ``TABLES`` into ``folder``.

    One table at a time: each frame is built, written and freed before the next, so the export
    needs memory for the largest table only, not for all of them. A lazy (dask-backed) grid is
    computed once first, not once per column.
    """
    if any(variable.chunks is not None for variable in ds.variables.values()):
        ds = ds.compute()
    written = {}
    for name in table_names(ds):
        table = frame(ds, name)
        info = write_frame(table, folder / f"{name}.parquet", name)
        written[name] = Written(table.height, info)
        del table
    return written


def to_parquet(ds: xr.Dataset, folder: str | Path) -> dict[str, int]:
    """Write ``<table>.parquet`` for every table of the result (``TABLES``) into ``folder``.

    Returns the row count of each table.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {name: table.rows for name, table in write_tables(ds, folder).items()}


def read_units(path: str | Path) -> dict[str, dict[str, str]]:
    """The ``{column: {unit, description}}`` map stored in a Parquet file by ``write_frame``."""
    metadata = pl.read_parquet_metadata(path)
    return json.loads(metadata["sweeps:columns"])
