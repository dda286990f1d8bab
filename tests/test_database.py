"""``sweep.duckdb``: views over the Parquet files, units as a table and as column comments
(issue 14, item 6)."""

from __future__ import annotations

import shutil

import duckdb
import polars as pl
import pytest

from sweeps.config import parse_config
from sweeps.export import DATABASE, connect, read_units
from sweeps.pipeline import run_to_folder

CONFIG = """
[sweep]
name = "bi"
[axes]
model = ["llama-3-8b", "qwen2.5-7b"]
hardware = ["h100-sxm", "mi300x"]
batch = [1, 16, 256]
context = [2048, 32768]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = []
grid = "none"
"""

# docs/outputs.md's dashboard query: best decode throughput per model and device that fits
DASHBOARD = """
SELECT d.model, m.params, d.hardware, h.vendor, d.kv_dtype,
       max(d.tokens_per_s) AS best_tokens_per_s,
       arg_max(d.batch, d.tokens_per_s) AS at_batch
FROM decode d JOIN models m USING (model) JOIN hardware h USING (hardware)
WHERE d.feasible AND d.context = 32768
GROUP BY ALL ORDER BY best_tokens_per_s DESC
"""


@pytest.mark.parametrize("layout", ["single", "partitioned"])
def test_views_units_and_comments(tmp_path, layout):
    sweep = parse_config(CONFIG, "bi.toml")
    result = run_to_folder(sweep, tmp_path, layout=layout, duckdb=True)
    assert DATABASE in result.files
    with connect(result.folder) as db:
        views = {
            row[0]
            for row in db.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        }
        assert views == {"decode", "prefill", "hardware", "models", "summary"}
        assert db.sql("SELECT count(*) FROM decode").fetchall() == [(result.rows["decode"],)]
        rows = db.sql(DASHBOARD).fetchall()
        assert len(rows) == 2 * 2 * 2
        assert all(r[5] > 0 for r in rows)
        units = dict(
            db.sql("SELECT column_name, unit FROM units WHERE table_name = 'decode'").fetchall()
        )
        first = next(f for f in result.files if f.startswith("decode"))
        expected = read_units(result.folder / first)
        assert units == {c: e["unit"] for c, e in expected.items()}
        comment = db.sql(
            "SELECT comment FROM duckdb_columns() WHERE table_name = 'decode' AND column_name = 'step_time_s'"
        ).fetchall()
        assert comment == [(f"[s] {expected['step_time_s']['description']}",)]


def test_no_database_unless_asked(tmp_path):
    result = run_to_folder(parse_config(CONFIG, "bi.toml"), tmp_path)
    assert not (result.folder / DATABASE).exists()
    assert DATABASE not in result.files


def test_a_copied_folder_reads_its_own_files(tmp_path, monkeypatch):
    result = run_to_folder(parse_config(CONFIG, "bi.toml"), tmp_path / "first", duckdb=True)
    copy = tmp_path / "copy"
    shutil.copytree(result.folder, copy)
    one = pl.read_parquet(copy / "hardware.parquet").head(1)  # the copy's own, different file
    one.write_parquet(copy / "hardware.parquet")
    with connect(copy) as db:
        assert db.sql("SELECT count(*) FROM hardware").fetchall() == [(1,)]
        assert db.sql("SELECT count(*) FROM decode").fetchall() == [(result.rows["decode"],)]
    monkeypatch.chdir(copy)  # the DuckDB shell started in the folder reads the same
    with duckdb.connect(DATABASE, read_only=True) as db:
        assert db.sql("SELECT count(*) FROM hardware").fetchall() == [(1,)]
    monkeypatch.chdir(tmp_path)  # and from elsewhere, it never reads the original's files
    with (
        duckdb.connect(str(copy / DATABASE), read_only=True) as db,
        pytest.raises(duckdb.IOException, match=r"hardware\.parquet"),
    ):
        db.sql("SELECT count(*) FROM hardware").fetchall()
