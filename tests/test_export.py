"""Export: Parquet equals the grid (read back with Polars), DuckDB reads it, units travel,
and the output folder is written atomically."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.errors import OutputExistsError
from sweeps.export import decode_frame, open_grid, read_units, to_parquet
from sweeps.export import frame as frame_module
from sweeps.export import parquet as parquet_module
from sweeps.export.atomic import STAGING
from sweeps.grid import BOTTLENECK_FLAGS, DECODE_DIMS, REGISTRY, build_grid
from sweeps.pipeline import run_to_folder

SMALL = """
[sweep]
name = "small"
[axes]
model = ["llama-3-8b", "qwen2.5-7b"]
hardware = ["h100-sxm", "h200"]
batch = [1, 16, 256, 1024]
context = [512, 32768]
prompt = [256]
kv_heads = ["native", 1]
kv_dtype = ["bf16", "int4"]
"""

AXIS_COLUMNS = ["model", "hardware", "batch", "context", "kv_heads", "kv_dtype", "weight_dtype"]
ROOFLINE_COLUMNS = ["flops", "bytes", "arithmetic_intensity", "ridge_point", "bottleneck",
                    "attainable_flops", "utilization"]  # fmt: skip
DECODE_COLUMNS = [*AXIS_COLUMNS, *ROOFLINE_COLUMNS, "ceiling", "fraction_of_ceiling", "knee_batch",
                  "ridge_batch", "max_batch", "feasible", "step_time_s", "tokens_per_s"]  # fmt: skip
PREFILL_COLUMNS = [*AXIS_COLUMNS, *ROOFLINE_COLUMNS, "feasible", "ttft_s"]


@pytest.fixture(scope="module")
def grid() -> xr.Dataset:
    return build_grid(parse_config(SMALL))


@pytest.fixture(scope="module", params=["whole", "blocks"])
def folder(
    request: pytest.FixtureRequest, grid: xr.Dataset, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The grid exported as is (this small grid is one block) and with blocks of 4 rows, so
    that repeated columns are built from shared blocks (see ``sweeps.export.frame._Layout``)."""
    out = tmp_path_factory.mktemp(f"parquet-{request.param}")
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "blocks":
            _small_blocks(patch)
        to_parquet(grid, out)
    return out


def _small_blocks(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(frame_module, "_MIN_BLOCK_ROWS", 4)
    patch.setattr(frame_module, "_MAX_BLOCKS", 64)


def test_repeated_blocks_are_shared_not_copied(grid: xr.Dataset) -> None:
    whole = decode_frame(grid)
    with pytest.MonkeyPatch.context() as patch:
        _small_blocks(patch)
        layout = frame_module._layout(DECODE_DIMS, tuple(grid.sizes[d] for d in DECODE_DIMS))
        blocks = decode_frame(grid)
    assert layout.outer == 5  # model, hardware, tp, batch, context: blocks of 2 x 2 x 1 rows
    assert blocks.equals(whole)
    assert blocks.schema == whole.schema
    assert whole["weight_bytes"].n_chunks() == 1
    # weight bytes vary over model only: 32 blocks, two distinct, each built once
    assert blocks["weight_bytes"].n_chunks() == 32
    assert blocks["attainable_flops"].n_chunks() == 1  # full rank: the grid's own array
    assert blocks["max_batch"].n_chunks() == 32  # does not vary over batch: shared there too


def test_enum_columns_without_cat_to(grid: xr.Dataset) -> None:
    """Polars versions without ``Series.cat.to`` (it is marked unstable) get the same frame by
    gathering the labels."""
    expected = decode_frame(grid)
    namespace = type(pl.Series([0], dtype=pl.UInt8).cat)

    def missing(*args: object, **kwargs: object) -> None:
        msg = "this Polars has no Series.cat.to"
        raise AttributeError(msg)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(namespace, "to", missing)
        fallback = decode_frame(grid)
    assert fallback.equals(expected)
    assert fallback.schema == expected.schema


def test_row_groups_do_not_follow_the_frame_chunks(grid: xr.Dataset, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        _small_blocks(patch)  # 32 chunks of 4 rows
        patch.setitem(parquet_module.WRITE_OPTIONS, "row_group_size", 48)
        to_parquet(grid, tmp_path)
    sizes = duckdb.sql(
        "select row_group_num_rows from parquet_metadata(?) "
        "group by row_group_id, row_group_num_rows order by row_group_id",
        params=[str(tmp_path / "decode.parquet")],
    ).fetchall()
    assert [n for (n,) in sizes] == [48, 48, 32]


def test_interface_columns_and_types(folder: Path) -> None:
    decode = pl.read_parquet(folder / "decode.parquet")
    prefill = pl.read_parquet(folder / "prefill.parquet")
    assert set(DECODE_COLUMNS) <= set(decode.columns)
    assert set(PREFILL_COLUMNS) <= set(prefill.columns)
    for frame in (decode, prefill):
        for name in ("model", "hardware", "kv_dtype", "weight_dtype", "bottleneck"):
            assert isinstance(frame.schema[name], pl.Enum), name
        for name in ("batch", "context", "kv_heads"):
            assert frame.schema[name] == pl.Int64, name
        assert set(frame["bottleneck"].unique().to_list()) <= set(BOTTLENECK_FLAGS)
    assert decode.schema["feasible"] == pl.Boolean
    assert decode.height == 2 * 2 * 4 * 2 * 2 * 2
    assert prefill.height == 2 * 2 * 4 * 1 * 2 * 2


def _label(row: dict[str, object]) -> str:
    return "native" if row["kv_heads_native"] else str(row["kv_heads"])


def _point(grid: xr.Dataset, row: dict[str, object], context_dim: str) -> xr.Dataset:
    """The grid point a Parquet row stands for (the prefill's prompt is its ``context``)."""
    axes = ("model", "hardware", "tp", "batch", "kv_dtype", "weight_dtype")
    where = {axis: row[axis] for axis in axes}
    return grid.sel(where | {"kv_heads": _label(row), context_dim: row["context"]})


def test_decode_parquet_equals_the_grid(grid: xr.Dataset, folder: Path) -> None:
    decode = pl.read_parquet(folder / "decode.parquet")
    for row in decode.iter_rows(named=True):
        point = _point(grid, row, "context")
        assert int(point["kv_heads_count"]) == row["kv_heads"]
        for name in DECODE_COLUMNS[len(AXIS_COLUMNS) :]:
            value = point[name].item()
            if name == "bottleneck":
                assert row[name] == BOTTLENECK_FLAGS[value]
            elif name == "ridge_batch" and np.isnan(value):
                assert row[name] is None  # null, not NaN, where decode never turns compute-bound
            else:
                assert row[name] == value, (name, row)


def test_prefill_parquet_equals_the_grid(grid: xr.Dataset, folder: Path) -> None:
    prefill = pl.read_parquet(folder / "prefill.parquet")
    names = {
        "flops": "prefill_flops",
        "bytes": "prefill_bytes",
        "arithmetic_intensity": "prefill_arithmetic_intensity",
        "attainable_flops": "prefill_attainable_flops",
        "utilization": "prefill_utilization",
        "feasible": "prefill_feasible",
        "ttft_s": "ttft_s",
        "ridge_point": "ridge_point",
    }
    for row in prefill.iter_rows(named=True):
        point = _point(grid, row, "prompt")
        for column, name in names.items():
            assert row[column] == point[name].item(), (column, row)
        assert row["bottleneck"] == BOTTLENECK_FLAGS[point["prefill_bottleneck"].item()]


def test_units_in_the_schema_metadata(folder: Path) -> None:
    units = read_units(folder / "decode.parquet")
    assert units["step_time_s"]["unit"] == "s"
    assert units["flops"]["unit"] == "FLOP"
    assert units["arithmetic_intensity"]["unit"] == "FLOP/byte"
    assert units["batch"]["unit"] == REGISTRY["batch"].unit
    decode = pl.read_parquet(folder / "decode.parquet")
    assert set(units) == set(decode.columns)


def test_spec_tables(folder: Path) -> None:
    hardware = pl.read_parquet(folder / "hardware.parquet")
    assert {
        "hardware",
        "name",
        "vendor",
        "bandwidth",
        "memory",
        "peak_flops_bf16",
        "peak_flops_fp8",
        "source",
    } <= set(hardware.columns)
    assert hardware.filter(pl.col("hardware") == "h100-sxm")["memory"].item() == 80 * 2**30
    models = pl.read_parquet(folder / "models.parquet")
    assert {
        "model",
        "params",
        "active_params",
        "layers",
        "heads",
        "kv_heads",
        "head_dim",
        "kv_bytes_per_token",
        "source",
    } <= set(models.columns)
    llama = models.filter(pl.col("model") == "llama-3-8b")
    assert llama["kv_bytes_per_token"].item() == 131072
    assert llama["kv_heads"].item() == 8


def test_duckdb_queries_the_parquet(folder: Path) -> None:
    query = f"""
        SELECT model, context, max(arithmetic_intensity) AS ai, any_value(ceiling) AS ceiling,
               count(*) FILTER (WHERE NOT feasible) AS infeasible
        FROM '{folder / "decode.parquet"}'
        WHERE hardware = 'h100-sxm' AND kv_heads_native AND kv_dtype = 'bf16'
        GROUP BY ALL ORDER BY model, context
    """
    rows = duckdb.sql(query).fetchall()
    assert len(rows) == 4
    for _model, _context, ai, ceiling, _ in rows:
        assert ai < ceiling
    units = duckdb.sql(
        f"SELECT value FROM parquet_kv_metadata('{folder / 'decode.parquet'}') "
        "WHERE key = 'unit:step_time_s'"
    ).fetchall()
    assert units == [(b"s",)]


# --- the folder: atomic, replaced only with force -------------------------------------------


def test_run_writes_every_file_and_the_manifest(tmp_path: Path) -> None:
    sweep = parse_config(SMALL)
    result = run_to_folder(sweep, tmp_path)
    folder = tmp_path / "small"
    assert result.folder == folder
    for name in (
        "decode.parquet",
        "prefill.parquet",
        "hardware.parquet",
        "models.parquet",
        "manifest.json",
    ):
        assert (folder / name).is_file(), name
    assert (folder / "grid.zarr" / "zarr.json").is_file()  # the default grid file, a Zarr store
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["config"]["sha256"] == sweep.sha256
    assert manifest["config"]["text"] == SMALL
    assert manifest["rows"]["decode"] == 128
    assert manifest["columns"]["decode"]["tokens_per_s"]["unit"] == "token/s"
    assert manifest["axes"]["kv_heads"] == ["native", "1"]
    assert set(manifest["timings_s"]) >= {"grid", "table_decode", "table_prefill", "grid_file"}
    back = open_grid(folder / "grid.zarr").load()
    xr.testing.assert_identical(back, result.dataset)


def test_existing_result_needs_force_and_failures_keep_it(tmp_path: Path) -> None:
    sweep = parse_config(SMALL)
    run_to_folder(sweep, tmp_path)
    manifest = (tmp_path / "small" / "manifest.json").read_bytes()
    with pytest.raises(
        OutputExistsError, match=r"small: a result is already there; allowed: replacing"
    ):
        run_to_folder(sweep, tmp_path)

    def broken_hook(ds: xr.Dataset, sweep: object, staging: Path) -> list[str]:
        (staging / "half-written.txt").write_text("partial")
        msg = "disk full"
        raise OSError(msg)

    with pytest.raises(OSError, match="disk full"):
        run_to_folder(sweep, tmp_path, force=True, hooks=(broken_hook,))
    assert (tmp_path / "small" / "manifest.json").read_bytes() == manifest
    assert not (tmp_path / "small" / "half-written.txt").exists()
    assert not (tmp_path / STAGING).exists()  # no staging folder left

    run_to_folder(sweep, tmp_path, force=True)
    assert (tmp_path / "small" / "manifest.json").read_bytes() != manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small"]


def test_two_studies_tables_concatenate_as_they_are(grid: xr.Dataset, tmp_path: Path) -> None:
    other = SMALL.replace('"llama-3-8b", "qwen2.5-7b"', '"llama-3-70b"').replace(
        '"h100-sxm", "h200"', '"b200"'
    )
    to_parquet(grid, tmp_path / "one")
    to_parquet(build_grid(parse_config(other.replace('"small"', '"other"'))), tmp_path / "two")
    for table in ("decode", "prefill", "hardware", "models"):
        parts = [pl.read_parquet(tmp_path / name / f"{table}.parquet") for name in ("one", "two")]
        both = pl.concat(parts)  # one Enum per name axis: no cast, no string cache
        assert both.height == parts[0].height + parts[1].height
        assert isinstance(both.schema["hardware" if table == "hardware" else "model"], pl.Enum)
    decode = pl.concat(
        [pl.read_parquet(tmp_path / name / "decode.parquet") for name in ("one", "two")]
    )
    assert set(decode["model"].unique()) == {"llama-3-8b", "qwen2.5-7b", "llama-3-70b"}
    models = pl.concat(
        [pl.read_parquet(tmp_path / name / "models.parquet") for name in ("one", "two")]
    )
    assert decode.join(models, on="model").height == decode.height  # the key types agree


def test_repeats_share_what_does_not_vary_with_the_model_and_change_nothing() -> None:
    """``Repeats``: every model's frames equal those built alone, the columns that do not vary
    with the model (axes, a device's ridge point, its compute dtype) are built for the first
    model only, and a grid of other devices in the same layout gets its own columns."""
    from sweeps.grid.chunks import plan_chunks

    sweep = parse_config(SMALL.replace('["llama-3-8b", "qwen2.5-7b"]', MODELS))
    other = parse_config(SMALL.replace('["h100-sxm", "h200"]', '["l4", "b200"]'))
    grids = [build_grid(c.sweep) for c in plan_chunks(sweep, 1 << 40)]
    grids.append(build_grid(plan_chunks(other, 1 << 40)[0].sweep))  # same shape, other devices
    repeats = frame_module.Repeats()
    spread = frame_module._spread
    built: list[int] = []

    def counted(*args: object) -> pl.Series:
        built[-1] += 1
        return spread(*args)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        _small_blocks(patch)  # blocks of 4 rows, as a big grid's frames are cut
        patch.setattr(frame_module, "_spread", counted)
        for ds in grids:
            for table in ("decode", "prefill"):
                built.append(0)
                shared = frame_module.table_frame(ds, table, None, repeats)
                built.append(0)
                alone = frame_module.table_frame(ds, table)
                assert shared.equals(alone, null_equal=True)
                assert shared.schema == alone.schema
                built.append(0)
                frame_module.table_frame(ds, table, None, repeats)  # the same grid again
    # per grid and table: spreads with repeats, alone, and with repeats again
    first, alone, again = built[0:3]
    assert alone == first > again > 0  # again: only what varies with the model is built
    second, _, second_again = built[6:9]  # the second model's decode frame
    assert second == second_again == again  # found what the first model built, holds no more
    other_devices = built[-6]
    assert other_devices > second  # their own ridge points, compute dtypes
    assert all("model" not in key[-4] for key in repeats._columns)  # own dims, then the values
    columns = {key[0] for key in repeats._columns}
    assert {"batch", "ridge_point", "compute_dtype", "kv_dtype"} <= columns
    assert not columns & {"model", "weight_bytes", "kv_heads", "max_batch"}


MODELS = '["llama-3-8b", "mixtral-8x7b", "qwen2.5-7b"]'
