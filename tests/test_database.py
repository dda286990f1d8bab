"""``sweep.duckdb``: the tables copied in (views over the Parquet files beyond
``EMBED_ROWS``), units as a table and as column comments (issue 14, item 6; issue 46, item 2)."""

from __future__ import annotations

import shutil

import duckdb
import polars as pl
import pytest

from sweeps.config import load_config, parse_config
from sweeps.export import DATABASE, connect, database, read_units
from sweeps.pipeline import run_to_folder

from .conftest import SEED_CONFIG

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


ALL = {"decode", "prefill", "hardware", "models", "summary"}


@pytest.mark.parametrize(("layout", "embed"), [("single", True), ("partitioned", False)])
def test_tables_units_and_comments(tmp_path, layout, embed, monkeypatch):
    if not embed:
        monkeypatch.setattr(database, "EMBED_ROWS", 0)
    sweep = parse_config(CONFIG, "bi.toml")
    result = run_to_folder(sweep, tmp_path, layout=layout, duckdb=True)
    assert DATABASE in result.files
    with connect(result.folder) as db:
        kinds = dict(db.sql("SELECT table_name, kind FROM tables").fetchall())
        assert kinds == dict.fromkeys(ALL, "table" if embed else "view")
        names = "SELECT view_name FROM duckdb_views() WHERE NOT internal"
        if embed:
            names = "SELECT table_name FROM duckdb_tables() WHERE table_name IN ?"
        assert {
            row[0] for row in db.sql(names, params=[list(ALL)] if embed else None).fetchall()
        } == ALL
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
    """Views (tables over ``EMBED_ROWS``) read the files of the folder ``connect`` opens."""
    monkeypatch.setattr(database, "EMBED_ROWS", 0)
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


SEED_WALL = "SELECT round(device_tokens_per_s_wall) FROM summary WHERE context = 512"


def test_opened_from_anywhere_it_reads_its_own_rows(tmp_path, monkeypatch):
    """Copied in, the tables read the same from another folder, from inside another study's
    folder, and after the folder is moved (issue 46: a view read the other study's rows)."""
    seed = run_to_folder(load_config(SEED_CONFIG), tmp_path / "out", duckdb=True)
    other = run_to_folder(parse_config(CONFIG, "bi.toml"), tmp_path / "out", duckdb=True)
    path = str(seed.folder / DATABASE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for folder in (elsewhere, other.folder):
        monkeypatch.chdir(folder)
        with duckdb.connect(path, read_only=True) as db:
            assert db.sql(SEED_WALL).fetchall() == [(40_084.0,)]
            assert db.sql("SELECT count(*) FROM decode").fetchall() == [(seed.rows["decode"],)]
            assert db.sql("SELECT list(model) FROM models").fetchall() == [(["llama-3-8b"],)]
    moved = tmp_path / "moved"
    seed.folder.rename(moved)
    with duckdb.connect(str(moved / DATABASE), read_only=True) as db:
        assert db.sql(SEED_WALL).fetchall() == [(40_084.0,)]
