"""The docs' column reference (``sweeps.export.columns``) lists every declared dim and variable
of every table, extra dims marked, in the order a real export writes them."""

from __future__ import annotations

import re

import pytest

from sweeps.axes import AXIS
from sweeps.catalog.records import HARDWARE_SPECS, MODEL_SPECS
from sweeps.config import parse_config
from sweeps.export.columns import CONDITIONAL, column_reference
from sweeps.export.frame import TABLE_NAMES
from sweeps.export.parquet import frames
from sweeps.export.post_steps import declared
from sweeps.grid import REGISTRY, build_grid
from sweeps.grid.analyses import TABLES
from sweeps.studies.serving.simulated import SIMULATED

CLOSED_LOOP = """
[sweep]
name = "closed"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 8]
context = [512]
spec_tokens = [0, 2]
[serving]
prompt_tokens = [512]
output_tokens = [128]
concurrency = [4]
"""


@pytest.fixture(scope="module")
def sections() -> dict[str, list[tuple[str, str, str]]]:
    """The page's rows ``(column, unit, meaning)`` by table."""
    parts = re.split(r"^### `(\w+)\.parquet`$", column_reference(), flags=re.M)
    assert parts[0].strip() == ""
    row = re.compile(r"^\| `([^`]+)` \| ([^|]+) \| (.*) \|$", re.M)
    return {name: row.findall(body) for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def _declared(table: str) -> dict[str, str]:
    """Every column ``table`` declares, by column, with its unit, from the declarations."""
    if table in ("models", "hardware"):
        dim, specs = ("model", MODEL_SPECS) if table == "models" else ("hardware", HARDWARE_SPECS)
        return {AXIS[dim].column_name: AXIS[dim].unit} | {s.column_name: s.unit for s in specs}
    analysis = next(a for a in TABLES if a.name == table)
    columns = {}
    for dim in (*analysis.dims, *analysis.extra_dims):
        columns[AXIS[dim].column_name] = AXIS[dim].unit
        if AXIS[dim].kind == "heads":
            columns[f"{dim}_native"] = REGISTRY[f"{dim}_native"].unit
    for name in analysis.columns:
        columns[REGISTRY[name].column_name] = REGISTRY[name].unit
    return columns


def test_every_table_has_a_section(sections) -> None:
    assert list(sections) == [*TABLE_NAMES, *(step.name for step in declared())]
    assert {"simulated", "simulated_expected"} <= set(sections)


@pytest.mark.parametrize("table", TABLE_NAMES)
def test_every_declared_dim_and_variable_is_on_the_page(sections, table: str) -> None:
    listed = {column: unit for column, unit, _ in sections[table]}
    declared = _declared(table)
    assert sorted(listed) == sorted(declared)
    for column, unit in declared.items():
        assert listed[column].strip() == unit, column


def test_the_closed_loop_and_simulated_columns_are_on_the_page(sections) -> None:
    """Issue 19's ``concurrency`` was missing: one tiny run has a rate or a concurrency."""
    pools = {column for column, _, _ in sections["pools"]}
    assert {"arrival_rate", "concurrency"} <= pools
    assert [c for c, _, _ in sections["simulated"]] == [v.column_name for v in SIMULATED]


def test_extra_dims_are_marked_and_own_dims_are_not(sections) -> None:
    for analysis in TABLES:
        meaning = {column: text for column, _, text in sections[analysis.name]}
        for dim in analysis.extra_dims:
            assert meaning[AXIS[dim].column_name].endswith(CONDITIONAL), (analysis.name, dim)
        for dim in analysis.dims:
            assert CONDITIONAL not in meaning[AXIS[dim].column_name], (analysis.name, dim)


def test_a_real_export_writes_the_columns_in_the_page_order(sections) -> None:
    """A closed-loop speculative run's tables: their columns in the page's order, none extra."""
    written = frames(build_grid(parse_config(CLOSED_LOOP)))
    assert {"decode", "speculative", "serving", "pools"} <= set(written)
    for table, frame in written.items():
        page = [column for column, _, _ in sections[table]]
        assert [c for c in page if c in frame.columns] == frame.columns, table
    assert "concurrency" in written["pools"].columns
    assert "arrival_rate" not in written["pools"].columns
