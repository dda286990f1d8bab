"""``summary.parquet``: the answers per configuration, at the wall itself (issue 46, item 1)."""

from __future__ import annotations

import math

import duckdb
import polars as pl
import pytest

from sweeps.config import load_config, parse_config
from sweeps.export.parquet import read_units
from sweeps.grid import Variable
from sweeps.pipeline import pieces, run_to_folder
from sweeps.pipeline.stream import configurations
from sweeps.views.summary_table import (
    EXTENSIONS,
    SUMMARY,
    Extension,
    summary_columns,
    summary_frame,
)

from .conftest import SEED_CONFIG

TP_CONFIG = """
[sweep]
name = "tp"
[axes]
model = ["llama-3-8b", "mixtral-8x7b"]
hardware = ["h100-sxm", "l4"]
tp = [1, 2]
batch = [1, 8, 64]
context = [512, 8192]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = []
grid = "none"
"""


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    out = tmp_path_factory.mktemp("seed")
    return run_to_folder(load_config(SEED_CONFIG), out)


def test_seed_wall_throughput_from_one_query(seed):
    """The acceptance: 40,084 tokens/s per device at the wall at 512 tokens, as the terminal
    says, from one query over the file; the decode table's best grid point is lower (the
    wall is no grid point)."""
    path = (seed.folder / "summary.parquet").as_posix()
    [(value,)] = duckdb.sql(
        f"SELECT device_tokens_per_s_wall FROM '{path}' WHERE context = 512"
    ).fetchall()
    assert round(value) == 40_084
    terminal = seed.summary().filter(pl.col("context") == 512)["device_tokens_per_s_wall"]
    assert value == terminal[0]
    decode = (seed.folder / "decode.parquet").as_posix()
    [(best,)] = duckdb.sql(
        f"SELECT max(tokens_per_s / tp) FROM '{decode}' WHERE feasible AND context = 512"
    ).fetchall()
    assert best < value


def test_the_wall_at_a_grid_point_equals_the_decode_table(tmp_path):
    """Where the grid's batch axis holds the wall's batch, the summary's closed form there is
    the decode table's row divided by the replica's devices."""
    text = SEED_CONFIG.read_text("utf-8")
    text = text.replace(
        "batch = { start = 1, stop = 256, geometric = true }", "batch = [1, 57, 912]"
    )
    text = text.replace(
        'charts = ["ceiling", "bottleneck", "ai-vs-batch", "roofline"]', "charts = []"
    )
    sweep = parse_config(text, "wall.toml")
    result = run_to_folder(sweep, tmp_path)
    summary = pl.read_parquet(result.folder / "summary.parquet")
    decode = pl.read_parquet(result.folder / "decode.parquet")
    joined = summary.join(
        decode, left_on=["context", "max_batch"], right_on=["context", "batch"], how="inner"
    )
    assert joined.height == summary.height == 2
    for row in joined.iter_rows(named=True):
        assert row["device_tokens_per_s_wall"] == pytest.approx(row["tokens_per_s"] / row["tp"])
        assert row["token_time_wall_s"] == pytest.approx(row["step_time_s"])


def test_per_replica_is_per_device_times_the_replica(tmp_path):
    result = run_to_folder(parse_config(TP_CONFIG, "tp.toml"), tmp_path)
    frame = pl.read_parquet(result.folder / "summary.parquet")
    assert frame.height == 2 * 2 * 2 * 2 * 2
    assert (frame["replica_devices"] == frame["tp"]).all()
    fits = frame.filter(pl.col("fits"))
    assert fits.height > 0
    ratio = fits["replica_tokens_per_s_wall"] / fits["device_tokens_per_s_wall"]
    assert ratio.to_list() == pytest.approx(fits["tp"].cast(pl.Float64).to_list())
    unfit = frame.filter(~pl.col("fits"))
    assert unfit["replica_tokens_per_s_wall"].null_count() == unfit.height
    units = read_units(result.folder / "summary.parquet")
    assert "per device" in units["device_tokens_per_s_wall"]["description"]
    assert "per replica" in units["replica_tokens_per_s_wall"]["description"]
    assert units["replica_tokens_per_s_wall"]["unit"] == "token/s"


def test_whole_batches_round_up_and_types(tmp_path):
    result = run_to_folder(parse_config(TP_CONFIG, "tp.toml"), tmp_path)
    frame = pl.read_parquet(result.folder / "summary.parquet")
    for name in ("knee_batch", "ceiling_batch"):
        whole = frame[f"{name}_whole"].to_list()
        for real, first in zip(frame[name].to_list(), whole, strict=True):
            assert first == max(1, math.ceil(real - 1e-9 * real))
        assert frame.schema[f"{name}_whole"] == pl.Int64
    assert frame.schema["max_batch"] == pl.Int64
    assert (frame["ceiling_fraction"] == 0.9).all()
    floats = [c for c, t in frame.schema.items() if t == pl.Float64]
    assert all(frame[c].is_nan().sum() == 0 for c in floats)
    assert set(read_units(result.folder / "summary.parquet")) == set(frame.columns)


@pytest.mark.parametrize("how", ["pieces", "streamed"])
def test_every_way_of_running_writes_the_same_summary(tmp_path, how, monkeypatch):
    sweep = parse_config(TP_CONFIG, "tp.toml")
    whole = pl.read_parquet(run_to_folder(sweep, tmp_path / "whole").folder / "summary.parquet")
    if how == "pieces":
        monkeypatch.setattr(pieces, "PIECES_FROM", 0)
        other = run_to_folder(sweep, tmp_path / how)
    else:
        from sweeps.grid.memory import BASE_BYTES, estimate_bytes

        budget = BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // 4
        other = run_to_folder(sweep, tmp_path / how, memory_budget=budget)
        assert other.dataset is None
    again = pl.read_parquet(other.folder / "summary.parquet")
    assert again.equals(whole)
    assert SUMMARY in other.rows


def test_an_extension_adds_declared_columns():
    sweep = parse_config(TP_CONFIG, "tp.toml")
    grid = configurations(sweep, 1 << 40)
    column = Variable("expected_tokens_per_s_wall", "token/s", "An engine's expected figure")
    extension = Extension(
        "engine",
        (column,),
        lambda ds, frame: frame.with_columns(
            (pl.col("device_tokens_per_s_wall") / 2).alias(column.name)
        ),
    )
    EXTENSIONS.append(extension)
    try:
        frame = summary_frame(grid, 0.9)
        assert frame.columns[-1] == column.name
        assert summary_columns(frame)[column.name]["unit"] == "token/s"
    finally:
        EXTENSIONS.remove(extension)
    with pytest.raises(KeyError, match="not declared"):
        summary_columns(frame)


ENGINES_CONFIG = """
[sweep]
name = "engines"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm", "mi300x"]
batch = [1, 64]
context = [1024, 8192]
engine = ["vllm", "trtllm"]
[outputs]
charts = []
grid = "none"
"""


def test_with_engines_a_row_per_engine_every_column_declared(tmp_path):
    """With ``axes.engine`` the summary has a row per configuration and engine, the bound's
    columns the same on each, the expected ones the engine's own (two engines: the wall's
    share spread over the engine's rows too)."""
    pytest.importorskip("aiconfigurator_core")
    result = run_to_folder(parse_config(ENGINES_CONFIG, "engines.toml"), tmp_path)
    summary = pl.read_parquet(result.folder / "summary.parquet")
    assert summary.height == 2 * 2 * 2  # device x context x engine
    units = read_units(result.folder / "summary.parquet")
    assert units["engine"]["unit"] == "-"
    assert units["expected_device_tokens_per_s_wall"]["unit"] == "token/s"
    by = summary.group_by("hardware", "context").agg(
        pl.col("wall_fraction_of_ceiling").n_unique(),
        pl.col("expected_token_time_b1_s").n_unique(),
    )
    assert (by["wall_fraction_of_ceiling"] == 1).all()  # a bound: one value for both engines
    h100 = by.filter(pl.col("hardware") == "h100-sxm")
    assert (h100["expected_token_time_b1_s"] == 2).all()  # each engine its own expectation


NOT_FITTING = """
[sweep]
name = "nofit"
[axes]
model = ["deepseek-v3", "llama-3-8b"]
hardware = ["h200"]
batch = [1, 8]
context = [4096]
[outputs]
charts = []
grid = "none"
"""


def test_a_configuration_that_does_not_fit_has_null_figures_and_a_reason(tmp_path):
    """DeepSeek-V3 at tp 1 on one H200 does not fit (671 B parameters in bf16 against 141 GB):
    the summary printed a batch-1 ms/token and a TTFT for it. Every time and throughput is
    null in the file, the terminal's frame and the --json rows, with the reason beside; the
    row that fits keeps its figures and has no reason."""
    from click.testing import CliRunner

    from sweeps.cli.main import cli
    from sweeps.cli.render import summary_rows

    result = run_to_folder(parse_config(NOT_FITTING), tmp_path)
    figures = [
        "token_time_b1_s",
        "device_tokens_per_s_b1",
        "replica_tokens_per_s_b1",
        "token_time_wall_s",
        "device_tokens_per_s_wall",
        "replica_tokens_per_s_wall",
        "ttft_s",
    ]
    written = pl.read_parquet(result.folder / "summary.parquet")
    for frame in (written, result.summary()):
        deepseek = frame.filter(pl.col("model") == "deepseek-v3").row(0, named=True)
        llama = frame.filter(pl.col("model") == "llama-3-8b").row(0, named=True)
        assert deepseek["max_batch"] == 0
        assert not deepseek["fits"]
        for name in figures:
            if name in frame.columns:
                assert deepseek[name] is None, name
                assert llama[name] is not None, name
                assert llama[name] > 0, name
        assert deepseek["reason"].startswith("does not fit: the weights and one sequence")
        assert llama["reason"] is None
    assert summary_columns(written)["reason"]["unit"] == "-"
    rows = {r["model"]: r for r in summary_rows(result.summary())}
    assert rows["deepseek-v3"]["token_time_b1_s"] is None
    assert rows["deepseek-v3"]["ttft_s"] is None
    assert "does not fit" in rows["deepseek-v3"]["reason"]
    config = tmp_path / "nofit.toml"
    config.write_text(NOT_FITTING)
    printed = CliRunner().invoke(cli, ["run", str(config), "--out", str(tmp_path / "t")])
    assert printed.exit_code == 0, printed.output
    line = next(s for s in printed.output.splitlines() if s.startswith("deepseek-v3"))
    assert "does not fit" in line
    assert not any(ch.isdigit() for ch in line.split("  ")[-1])  # verdict alone at the end
    # after the batches (ceiling, knee, max, ridge) every figure is '-'
    cells = line.split()
    assert cells[-3:] == ["does", "not", "fit"]
    assert cells[-8:-3] == ["-"] * 5
