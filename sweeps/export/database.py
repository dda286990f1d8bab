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

    ``tables`` maps each table to its Parquet files relative to ``folder``, the result folder
    in its final place (DuckDB reads the files when it creates a view, so the database is
    written once they are there). Built under a temporary name and renamed: a reader never
    sees half a database. Returns the database's file name.
    """
    import duckdb

    from sweeps.export.parquet import read_units

    building = folder / f".{DATABASE}.tmp-{os.getpid()}"
    building.unlink(missing_ok=True)
    # the views are bound (their files read) as they are made: against the folder itself
    connection = duckdb.connect(str(building), config={"file_search_path": _search(folder)})
    try:
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
    except BaseException:
        connection.close()
        building.unlink(missing_ok=True)
        raise
    connection.close()
    os.replace(building, folder / DATABASE)
    return DATABASE


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
