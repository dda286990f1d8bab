"""Every reader opens every table (issue 14, item 5): pyarrow.dataset, pandas, Polars and
DuckDB read the single and the partitioned layout to the same rows, dtypes and units; the
tables join without casts; the grid file round-trips to the Dataset."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow.dataset as pds
import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.export import open_grid, read_units
from sweeps.pipeline import run_to_folder
from sweeps.views import summarize

CONFIG = """
[sweep]
name = "readers"
[axes]
model = ["qwen2.5-7b", "llama-3-8b", "gemma-2-9b"]
hardware = ["h100-sxm", "mi300x"]
batch = [1, 8, 64]
context = [1024, 8192]
kv_heads = ["native", 1]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = []
"""

LAYOUTS = ("single", "partitioned")
KEYS = ["model", "hardware", "tp", "batch", "context", "kv_heads", "kv_heads_native",
        "kv_dtype", "weight_dtype"]  # fmt: skip


@pytest.fixture(scope="module")
def sweep():
    return parse_config(CONFIG, "readers.toml")


@pytest.fixture(scope="module")
def results(sweep, tmp_path_factory):
    out = tmp_path_factory.mktemp("readers")
    return {
        layout: run_to_folder(sweep, out / layout, layout=layout, grid_format=grid)
        for layout, grid in zip(LAYOUTS, ("zarr", "netcdf"), strict=True)
    }


def _where(result, table: str) -> Path:
    """The path a user hands a reader: the file, or the table's folder."""
    single = result.folder / f"{table}.parquet"
    return single if single.exists() else result.folder / table


def _polars(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path) if path.is_file() else pl.scan_parquet(path).collect()


def _duckdb(path: Path) -> pl.DataFrame:
    glob = path if path.is_file() else path / "*.parquet"
    relation = duckdb.sql(f"SELECT * FROM read_parquet('{glob}')")
    return relation.pl()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("table", ["decode", "prefill"])
def test_every_reader_reads_the_same_rows_and_types(results, layout, table):
    reference = pl.read_parquet(results["single"].folder / f"{table}.parquet")
    path = _where(results[layout], table)
    assert path.is_dir() == (layout == "partitioned")
    arrow = pds.dataset(path, format="parquet").to_table()
    pandas = pd.read_parquet(path)
    frames = {
        "pyarrow.dataset": pl.from_arrow(arrow),
        "pandas": pl.from_pandas(pandas),
        "polars": _polars(path),
        "duckdb": _duckdb(path),
    }
    for reader, frame in frames.items():
        assert frame.columns == reference.columns, reader
        as_text = frame.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))
        expected = reference.with_columns(pl.col(pl.Enum).cast(pl.String))
        assert as_text.sort(KEYS).equals(expected.sort(KEYS)), reader
    # the types each reader gives, the same in both layouts: Enum, dictionary, category
    assert frames["polars"].schema == reference.schema
    assert str(arrow.schema.field("model").type).startswith("dictionary<values=string")
    assert isinstance(pandas["model"].dtype, pd.CategoricalDtype)
    assert list(pandas["model"].cat.categories) == list(reference.schema["model"].categories)
    assert pandas["batch"].dtype == "int64"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_units_are_visible_to_every_reader(results, layout):
    path = _where(results[layout], "decode")
    units = read_units(results["single"].folder / "decode.parquet")
    schema = pds.dataset(path, format="parquet").schema
    for column, entry in units.items():
        field = schema.field(column).metadata
        assert field[b"unit"].decode() == entry["unit"], column
        assert field[b"description"].decode() == entry["description"], column
    assert json.loads(schema.metadata[b"sweeps:columns"]) == units
    pandas = pd.read_parquet(path)
    assert pandas.attrs["units"]["step_time_s"] == "s"
    assert pandas.attrs["units"] == {c: e["unit"] for c, e in units.items()}
    files = [path] if path.is_file() else sorted(path.glob("*.parquet"))
    for file in files:
        rows = duckdb.sql(
            f"SELECT value FROM parquet_kv_metadata('{file}') WHERE key = 'unit:flops'"
        ).fetchall()
        assert rows == [(b"FLOP",)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_tables_join_without_casts(results, layout):
    folder = results[layout].folder
    decode = _polars(_where(results[layout], "decode"))
    models = pl.read_parquet(folder / "models.parquet")
    hardware = pl.read_parquet(folder / "hardware.parquet")
    assert models.schema["model"] == decode.schema["model"]
    assert hardware.schema["hardware"] == decode.schema["hardware"]
    joined = decode.join(models, on="model", suffix="_model").join(hardware, on="hardware")
    assert joined.height == decode.height
    assert (joined["params"] > 0).all()
    summary = summarize(results["single"].dataset)
    on = ["model", "hardware", "tp", "context", "kv_heads", "kv_heads_native", "kv_dtype",
          "weight_dtype"]  # fmt: skip
    per_point = decode.join(summary, on=on, suffix="_summary")
    assert per_point.height == decode.height
    assert (per_point["max_batch"] == per_point["max_batch_summary"]).all()


def test_summary_says_the_head_count_as_decode_does(results):
    summary = summarize(results["single"].dataset)
    assert summary.schema["kv_heads"] == pl.Int64
    native = summary.filter(pl.col("model") == "llama-3-8b", pl.col("kv_heads_native"))
    assert set(native["kv_heads"].to_list()) == {8}
    assert set(summary.filter(~pl.col("kv_heads_native"))["kv_heads"].to_list()) == {1}


@pytest.mark.parametrize(("layout", "name"), [("single", "grid.zarr"), ("partitioned", "grid.nc")])
def test_the_grid_file_round_trips_to_the_dataset(results, layout, name):
    result = results[layout]
    assert name in result.files
    back = open_grid(result.folder / name).load()
    xr.testing.assert_identical(back, result.dataset)
    lazy = open_grid(result.folder / name, chunks={})
    flops = lazy["attainable_flops"]
    assert flops.chunks is not None  # dask-backed: nothing read until asked
    one = flops.isel(model=0, hardware=0).values
    assert (one == result.dataset["attainable_flops"].isel(model=0, hardware=0).values).all()
