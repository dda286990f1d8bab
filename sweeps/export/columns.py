"""The output files' column reference (the docs' tables), generated from the declarations.

Every table is listed with every column it can have: its axis columns (its own dims and the
extra dims it takes on where the sweep has them, ``Analysis.extra_dims``), then its value
columns, each with the unit and meaning the export writes into the file
(``sweeps.export.parquet.declared_columns``, the lookup ``column_info`` checks every written
column against), and the studies' post-step tables (``simulated.parquet``) from their declared
variables (``sweeps.export.post_steps.declared``), each under a heading of its own (a link
to each table). ``scripts/generate_docs.py`` writes them into ``docs/outputs.md`` (a test
keeps the page in step) and the site's build fills them the same way, so they never fall
behind the declarations.

An earlier version rendered the columns of one tiny run; a run has either ``arrival_rate`` or
``concurrency`` and only the studies its config names, so ``concurrency`` and the
speculative, prefix and parallel tables and columns never reached the page.
"""

from __future__ import annotations

from collections.abc import Iterable

CONDITIONAL = "(only where the sweep has this axis)"
"""Appended to the meaning of a column that a table has only where the sweep has its axis."""


def _rows(entries: Iterable[tuple[str, str, str]]) -> list[str]:
    rows = ["| column | unit | meaning |", "|---|---|---|"]
    rows += [f"| `{column}` | {unit} | {meaning} |" for column, unit, meaning in entries]
    return rows


def _table_columns(table: str) -> list[tuple[str, str, str]]:
    """``(column, unit, meaning)`` of every column ``table`` can have, in the export's order."""
    from sweeps.axes import AXIS
    from sweeps.export.parquet import declared_columns
    from sweeps.grid.analyses import BY_NAME

    declared = declared_columns(table)
    extra = BY_NAME[table].extra_dims if table in BY_NAME else ()
    optional = {AXIS[dim].column_name for dim in extra}
    return [
        (column, v.unit, f"{v.description} {CONDITIONAL}" if column in optional else v.description)
        for column, v in declared.items()
    ]


def column_reference() -> str:
    """Markdown tables of every output file's columns with unit and meaning."""
    from sweeps.export.parquet import TABLES
    from sweeps.export.post_steps import declared

    parts = []
    for name in TABLES:
        parts += [f"### `{name}.parquet`\n", *_rows(_table_columns(name)), ""]
    for step in declared():
        columns = [(v.column_name, v.unit, v.description) for v in step.variables]
        parts += [f"### `{step.name}.parquet`\n", *_rows(columns), ""]
    return "\n".join(parts).rstrip() + "\n"
