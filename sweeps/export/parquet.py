"""Parquet files of a grid: decode, prefill and the specs, with units in the schema metadata."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import xarray as xr

from sweeps.axes import AXIS, DIMS, NAME_DIMS
from sweeps.catalog.records import HARDWARE_SPECS, MODEL_SPECS
from sweeps.export.frame import SPEC_TABLES, TABLE_NAMES, frame, table_names
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
    """The registry entry behind each column ``table`` (one of ``TABLES``) can have, by column,
    in the order a table with every one of its extra dims is written."""
    if table in _SPEC_DIMS:
        dim, specs = _SPEC_DIMS[table]
        entries = [REGISTRY[dim], *(REGISTRY[spec.name] for spec in specs)]
    else:
        analysis = BY_NAME[table]  # every dim it can have, in a written table's order
        dims = analysis.dims_over(analysis.extra_dims, DIMS)
        entries = [*_axis_entries(dims), *(REGISTRY[n] for n in analysis.columns)]
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


def arrow_schema(frame: pl.DataFrame, info: dict[str, dict[str, str]]) -> Any:
    """The Arrow schema of ``frame`` with each column's unit and description in its field
    metadata, and the whole map in the schema metadata (``sweeps:columns``, and
    ``PANDAS_ATTRS``, which pandas reads into ``DataFrame.attrs["units"]``)."""
    import pyarrow as pa

    fields = [
        field.with_metadata({**(field.metadata or {}), **info[field.name]})
        for field in frame.head(0).to_arrow().schema
    ]
    units = {column: entry["unit"] for column, entry in info.items()}
    attrs = {"units": units, "descriptions": {c: e["description"] for c, e in info.items()}}
    return pa.schema(
        fields, metadata={"sweeps:columns": json.dumps(info), "PANDAS_ATTRS": json.dumps(attrs)}
    )


def parquet_metadata(frame: pl.DataFrame, info: dict[str, dict[str, str]]) -> dict[str, str]:
    """The Parquet footer's key-value metadata of ``frame``: ``sweeps:columns``, one
    ``unit:<column>`` per column (DuckDB's ``parquet_kv_metadata``), and the Arrow schema
    (``ARROW:schema``, from ``arrow_schema``) with the units in its field and schema metadata.

    The Arrow schema is given here rather than as Polars' ``arrow_schema``, which drops the
    schema metadata of a frame with Enum columns; Polars writes the one given instead of its
    own, and reads its Enums back from the field metadata it keeps.
    """
    metadata = {"sweeps:columns": json.dumps(info)}
    metadata.update({f"unit:{column}": entry["unit"] for column, entry in info.items()})
    schema = arrow_schema(frame, info).serialize().to_pybytes()
    metadata["ARROW:schema"] = base64.b64encode(schema).decode("ascii")
    return metadata


def write_frame(frame: pl.DataFrame, path: Path, table: str) -> dict[str, dict[str, str]]:
    """Write ``frame`` with its columns' units and descriptions in the file's metadata.

    Three places, one per kind of reader (``parquet_metadata``): the footer's key-value pairs
    (DuckDB), the Arrow schema's field metadata (pyarrow) and its schema metadata (pandas'
    ``DataFrame.attrs["units"]``). Returns the ``{column: {unit, description}}`` map
    (``column_info``).
    """
    info = column_info(frame, table)
    write_with_units(frame, path, info)
    return info


def write_with_units(frame: pl.DataFrame, path: Path, info: dict[str, dict[str, str]]) -> None:
    """Write ``frame`` with ``info`` (``{column: {unit, description}}``) in the file's
    metadata, in the three places of ``parquet_metadata``."""
    from sweeps.export.failures import writing

    with writing(path):
        frame.write_parquet(path, metadata=parquet_metadata(frame, info), **WRITE_OPTIONS)


def frames(ds: xr.Dataset) -> dict[str, pl.DataFrame]:
    """Every table of the result ``ds`` (``table_names``), by name."""
    return {name: frame(ds, name) for name in table_names(ds)}


@dataclass(frozen=True)
class Written:
    """One table written: its rows, its columns' units, its files and the seconds it took."""

    rows: int
    columns: dict[str, dict[str, str]]
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0


PART = "{table}/{model}.parquet"
"""Where a model's rows of a table go in the partitioned layout, relative to the result
folder. Named by the model id alone, not ``model=<id>``: each file keeps its ``model``
column, and a ``key=value`` folder makes pyarrow, pandas and Polars read a second ``model``
(a plain string from the path) that clashes with the file's own Enum."""


PART_PATTERN = PART.replace("{model}", "<model>")
"""``PART`` as the manifest describes it: ``<table>/<model>.parquet``."""


def table_files(table: str, layout: str, models: Sequence[str]) -> list[str]:
    """The files of ``table`` in ``layout`` (``single`` or ``partitioned``), relative to the
    result folder, in row order."""
    if layout == "partitioned":
        return [PART.format(table=table, model=model) for model in models]
    return [f"{table}.parquet"]


def write_tables(
    ds: xr.Dataset,
    folder: Path,
    layout: str = "single",
    on_file: Callable[[str, int, int], None] | None = None,
) -> dict[str, Written]:
    """Write every table of ``TABLES`` into ``folder``: the spec tables as one file each, the
    analysis tables as ``table_files`` says for ``layout``. ``on_file`` is told each file's
    path (relative to ``folder``) as its writing starts, with the files written before it
    and the files in all.

    File by file, with the next file's frame built on a second thread while Polars writes
    the current one (building is numpy copies, writing Polars' encoder: both release the
    GIL), so at most two frames are held at once. A lazy (dask-backed) grid is computed
    once first.
    """
    if any(variable.chunks is not None for variable in ds.variables.values()):
        ds = ds.compute()
    models = [str(m) for m in ds["model"].values]
    enums = {dim: [str(v) for v in ds[dim].values] for dim in NAME_DIMS if dim in ds.dims}
    jobs: list[tuple[str, str, xr.Dataset]] = []
    for name in table_names(ds):
        files = [f"{name}.parquet"] if name in SPEC_TABLES else table_files(name, layout, models)
        for index, relative in enumerate(files):
            part = ds if len(files) == 1 else ds.isel(model=slice(index, index + 1))  # a view
            jobs.append((name, relative, part))
    written: dict[str, Written] = {}
    with ThreadPoolExecutor(1, thread_name_prefix="sweeps-frame") as pool:
        ahead = pool.submit(frame, jobs[0][2], jobs[0][0], enums)
        for index, (name, relative, _) in enumerate(jobs):
            start = time.perf_counter()
            table = ahead.result()
            if index + 1 < len(jobs):
                following = jobs[index + 1]
                ahead = pool.submit(frame, following[2], following[0], enums)
            if on_file is not None:
                on_file(relative, index, len(jobs))
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            info = write_frame(table, folder / relative, name)
            done = written.get(name, Written(0, info))
            done.files.append(relative)
            written[name] = Written(
                done.rows + table.height,
                info,
                done.files,
                done.seconds + time.perf_counter() - start,
            )
            del table
    return written


def to_parquet(ds: xr.Dataset, folder: str | Path) -> dict[str, int]:
    """Write ``<table>.parquet`` for every table of the result (``TABLES``) into ``folder``.

    Parameters
    ----------
    ds
        A grid (``sweeps.run``).
    folder
        The folder written into (made if missing).

    Returns
    -------
    dict of str to int
        The row count of each table, by table name.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {name: table.rows for name, table in write_tables(ds, folder).items()}


def read_units(path: str | Path) -> dict[str, dict[str, str]]:
    """The ``{column: {unit, description}}`` map stored in a Parquet file by ``write_frame``."""
    metadata = pl.read_parquet_metadata(path)
    return json.loads(metadata["sweeps:columns"])
