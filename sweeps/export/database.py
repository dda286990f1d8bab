"""``sweep.duckdb``: a DuckDB database of a result's tables, for BI tools.

Superset, Metabase, Evidence and the DuckDB shell open one file and see every table
(``decode``, ``prefill``, ``summary``, ``hardware``, ``models``, ...), each column commented
with its unit and meaning, and the same facts as a ``units`` table.

A table of up to ``EMBED_ROWS`` rows is copied into the file (a DuckDB table): it reads the
same wherever the file is opened from, moved or copied, from another folder or from inside
another study's folder. DuckDB resolves a view's relative path against the working folder,
not the database's, so a view over ``decode.parquet`` opened elsewhere failed or, worse, read
another study's file of that name. Copying costs space and time, measured on a 262,144-row
decode table (plus as many prefill rows): 6.2 MB of Parquet became a 68 MB database in 3.2 s,
about 256 bytes and 12 us a row, so a 16.8 M-row grid would take 4 GB and over three minutes.
A larger table stays a view over its Parquet files by their paths relative to the result
folder (no copy; ``connect`` sets DuckDB's ``file_search_path`` to the database's folder; the
DuckDB shell started in the folder and a BI tool given ``SET file_search_path =
'<folder>'`` read the same files). The ``tables`` table says which each one is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DATABASE = "sweep.duckdb"
"""The database's file name in a result folder."""

EMBED_ROWS = 1 << 18
"""Tables of at most this many rows (262,144) are copied into the database, larger ones are
views over their Parquet files (see the module's docstring for the measured cost)."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def write_database(folder: Path, tables: Mapping[str, Sequence[str]]) -> str:
    """Write ``folder/sweep.duckdb``: each table copied in (up to ``EMBED_ROWS`` rows) or a
    view over its files, units and comments.

    ``tables`` maps each table to its Parquet files relative to ``folder`` (DuckDB reads the
    files as it copies them or creates a view, so the database is written once they are
    there; views name relative paths, so a run writes it in its staging folder, before the
    rename).
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
    error here, not a database that quietly lacks its tables)."""
    import duckdb

    from sweeps.export.parquet import read_units

    building.unlink(missing_ok=True)
    # the files are read (a view bound) as each is made: against the folder itself
    with duckdb.connect(str(building), config={"file_search_path": _search(folder)}) as connection:
        connection.execute(
            "CREATE TABLE units (table_name VARCHAR, column_name VARCHAR, unit VARCHAR, "
            "description VARCHAR)"
        )
        connection.execute("CREATE TABLE tables (table_name VARCHAR, kind VARCHAR, files VARCHAR)")
        for table, files in tables.items():
            source = f"read_parquet([{', '.join(_quote(Path(f).as_posix()) for f in files)}])"
            [(rows,)] = connection.sql(f"SELECT count(*) FROM {source}").fetchall()
            kind = "TABLE" if rows <= EMBED_ROWS else "VIEW"
            connection.execute(f'CREATE {kind} "{table}" AS SELECT * FROM {source}')
            connection.execute(
                "INSERT INTO tables VALUES (?, ?, ?)", [table, kind.lower(), ", ".join(files)]
            )
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
    """Read the database back: every table there (a write that failed unseen is found here)."""
    import duckdb

    with duckdb.connect(str(building), read_only=True) as connection:
        found = {
            row[0]
            for row in connection.sql(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal "
                "UNION SELECT table_name FROM duckdb_tables()"
            ).fetchall()
        }
    missing = sorted(set(tables) - found)
    if missing:
        msg = f"the database lacks the tables {missing} once written"
        raise OSError(msg)


def _search(folder: Path) -> str:
    return str(folder.resolve())


def connect(folder: Path | str, read_only: bool = True) -> Any:
    """A DuckDB connection to ``folder/sweep.duckdb`` whose views read the Parquet files beside
    it, wherever the folder now is.

    Parameters
    ----------
    folder
        A run's folder, or the ``sweep.duckdb`` file itself.
    read_only
        Open the database read-only (other processes may read it at the same time).

    Returns
    -------
    duckdb.DuckDBPyConnection
        The connection; close it (or use it as a context manager) when done.
    """
    import duckdb

    path = Path(folder)
    if path.name != DATABASE:
        path = path / DATABASE
    return duckdb.connect(
        str(path), read_only=read_only, config={"file_search_path": _search(path.parent)}
    )
