"""``sweep.duckdb``: a DuckDB database of views over a result's Parquet files, for BI tools.

Superset, Metabase, Evidence and the DuckDB shell open one file and see every table as a view
(``decode``, ``prefill``, ``hardware``, ``models``), each column commented with its unit and
meaning, and the same facts as a ``units`` table. The views read the Parquet files where the
result folder finally lies (absolute paths), so no data is copied: the database is a few
hundred kB whatever the grid's size; a moved folder needs it written again
(``write_database``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

DATABASE = "sweep.duckdb"
"""The database's file name in a result folder."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def write_database(folder: Path, tables: Mapping[str, Sequence[str]]) -> str:
    """Write ``folder/sweep.duckdb``: one view per table over its files, units and comments.

    ``tables`` maps each table to its Parquet files relative to ``folder``, the result folder
    in its final place (DuckDB reads the files when it creates a view, so the database is
    written once they are there). Built under a temporary name and renamed: a reader never
    sees half a database. Returns the database's file name.
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

    where = folder.resolve()
    building.unlink(missing_ok=True)
    with duckdb.connect(str(building)) as connection:
        connection.execute(
            "CREATE TABLE units (table_name VARCHAR, column_name VARCHAR, unit VARCHAR, "
            "description VARCHAR)"
        )
        for table, files in tables.items():
            paths = ", ".join(_quote(str(where / f)) for f in files)
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
