"""``sweep.duckdb``: a DuckDB database of views over a result's Parquet files, for BI tools.

Superset, Metabase, Evidence and the DuckDB shell open one file and see every table as a view
(``decode``, ``prefill``, ``hardware``, ``models``), each column commented with its unit and
meaning, and the same facts as a ``units`` table. The views read the Parquet files by their
paths relative to the result folder, so no data is copied (the database is a few hundred kB
whatever the grid's size) and a copied or moved folder reads its own files, never the
original's. DuckDB resolves a relative path against its ``file_search_path`` setting, else
the working folder: ``connect`` sets it to the database's folder; the DuckDB shell started in
the folder (``duckdb sweep.duckdb``) and a BI tool given
``SET file_search_path = '<folder>'`` read the same files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DATABASE = "sweep.duckdb"
"""The database's file name in a result folder."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def write_database(folder: Path, tables: Mapping[str, Sequence[str]]) -> str:
    """Write ``folder/sweep.duckdb``: one view per table over its files, units and comments.

    ``tables`` maps each table to its Parquet files relative to ``folder`` (DuckDB reads the
    files when it creates a view, so the database is written once they are there; the views
    name relative paths, so a run writes it in its staging folder, before the rename).
    Checkpointed and read back, then renamed from a temporary name: a reader never sees half
    a database, and a full disk is an error. Returns the database's file name.
    """
    from sweeps.export.failures import writing

    building = folder / f".{DATABASE}.tmp-{os.getpid()}"
    try:
        with writing(folder / DATABASE):
            _build(building, folder, tables)
            _check(building, tables)
    except BaseException:
        building.unlink(missing_ok=True)
        raise
    os.replace(building, folder / DATABASE)
    return DATABASE


def _build(building: Path, folder: Path, tables: Mapping[str, Sequence[str]]) -> None:
    """The database at ``building``, complete and on disk (checkpointed: a full disk is an
    error here, not a database that quietly lacks its views)."""
    import duckdb

    from sweeps.export.parquet import read_units

    building.unlink(missing_ok=True)
    # the views are bound (their files read) as they are made: against the folder itself
    with duckdb.connect(str(building), config={"file_search_path": _search(folder)}) as connection:
        connection.execute(
            "CREATE TABLE units (table_name VARCHAR, column_name VARCHAR, unit VARCHAR, "
            "description VARCHAR)"
        )
        for table, files in tables.items():
            paths = ", ".join(_quote(Path(f).as_posix()) for f in files)
            connection.execute(f'CREATE VIEW "{table}" AS SELECT * FROM read_parquet([{paths}])')
            units = read_units(folder / files[0])
            for column, entry in units.items():
                comment = f"[{entry['unit']}] {entry['description']}"
                connection.execute(f'COMMENT ON COLUMN "{table}"."{column}" IS {_quote(comment)}')
            connection.executemany(
                "INSERT INTO units VALUES (?, ?, ?, ?)",
                [[table, c, e["unit"], e["description"]] for c, e in units.items()],
            )
        connection.execute("CHECKPOINT")


def _check(building: Path, tables: Mapping[str, Sequence[str]]) -> None:
    """Read the database back: every view there (a write that failed unseen is found here)."""
    import duckdb

    with duckdb.connect(str(building), read_only=True) as connection:
        views = {
            row[0]
            for row in connection.sql(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        }
    missing = sorted(set(tables) - views)
    if missing:
        msg = f"the database lacks the views {missing} once written"
        raise OSError(msg)


def _search(folder: Path) -> str:
    return str(folder.resolve())


def connect(folder: Path | str, read_only: bool = True) -> Any:
    """A DuckDB connection to ``folder/sweep.duckdb`` (``folder`` may name the file itself)
    whose views read the Parquet files beside it, wherever the folder now is."""
    import duckdb

    path = Path(folder)
    if path.name != DATABASE:
        path = path / DATABASE
    return duckdb.connect(
        str(path), read_only=read_only, config={"file_search_path": _search(path.parent)}
    )
