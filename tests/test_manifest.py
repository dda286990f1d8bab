"""sweeps.pipeline.manifest: the expected tables' counts, one file or partitioned."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sweeps.pipeline.manifest import EXPECTED_TABLES, expected_counts


def _frame(table: str, below: list[bool | None], basis: list[str | None]) -> pl.DataFrame:
    value = [None if b is None else 1.0 for b in basis]
    return pl.DataFrame(
        {EXPECTED_TABLES[table]: value, "below_bound": below, "basis": basis},
        schema={EXPECTED_TABLES[table]: pl.Float64, "below_bound": pl.Boolean, "basis": pl.Utf8},
    )


@pytest.mark.parametrize("partitioned", [False, True])
def test_each_expected_table_is_counted_under_its_name_in_either_layout(
    tmp_path: Path, partitioned: bool
) -> None:
    frames = {
        "expected": _frame("expected", [True, False, None], ["measured", "extrapolated", None]),
        "prefix_expected": _frame("prefix_expected", [False, False], ["interpolated"] * 2),
    }
    files = []
    for table, frame in frames.items():
        halves = [frame.head(1), frame.tail(frame.height - 1)] if partitioned else [frame]
        for i, half in enumerate(halves):
            name = f"{table}/m{i}.parquet" if partitioned else f"{table}.parquet"
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            half.write_parquet(tmp_path / name)
            files.append(name)
    files.append("kernels.parquet")  # another table: not counted
    counts = expected_counts(tmp_path, files)
    assert set(counts) == {"expected", "prefix_expected"}  # speculative_expected not written
    assert counts["expected"] == {
        "rows": 3, "below_bound": 1, "without_data": 1,
        "measured": 1, "interpolated": 0, "extrapolated": 1,
    }  # fmt: skip
    assert counts["prefix_expected"]["interpolated"] == 2
