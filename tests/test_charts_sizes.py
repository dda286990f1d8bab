"""The model-size heatmap (``sweeps.charts.sizes``): one per device, its cells and caption
recomputed from the grid, drawn, and the shipped study run end to end on a small copy."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xarray as xr
from click.testing import CliRunner

from sweeps.charts.output import Settings, chart_specs, slices
from sweeps.charts.sizes import MODEL_SIZE, SHARE, cells, model_size_chart, size_label, size_rows
from sweeps.cli.main import cli
from sweeps.config import parse_config

from .conftest import CONFIGS

GRID = """
[sweep]
name = "sizes-chart"
[axes]
model = ["llama-sizes"]
hardware = ["h100-sxm", "b200"]
tp = [1, 8]
batch = [1, 64]
context = [2048, 131072]
[models.llama-sizes]
base = "llama-3.1-8b"
params = [1e9, 3e10, 3e11]
[outputs]
charts = ["model-size"]
figures = { tp = 8 }
"""


@pytest.fixture(scope="module")
def grid() -> xr.Dataset:
    from sweeps import run

    return run(parse_config(GRID))


def test_one_figure_per_device_with_every_model(grid: xr.Dataset) -> None:
    figures = list(chart_specs(grid, [MODEL_SIZE.name], Settings(tp=8)))
    assert [f.stem for f in figures] == ["model-size-h100-sxm", "model-size-b200"]
    assert all(f.spec is not None and f.kind == MODEL_SIZE.name for f in figures)


def test_the_cells_are_the_share_of_the_ceiling_at_the_wall(grid: xr.Dataset) -> None:
    rows = pl.concat([size_rows(one, tp=8) for one in slices(grid)])
    assert rows.height == 3 * 2 * 2  # models x devices x contexts
    for row in rows.iter_rows(named=True):
        at = grid.sel(model=row["model"], hardware=row["hardware"], tp=8, context=row["context"])
        at = at.isel(kv_heads=0, kv_dtype=0, weight_dtype=0)
        wall, knee = float(at["max_batch"]), float(at["knee_batch"])
        expected = wall / (knee + wall) if wall >= 1 else None  # the seed note's B/(B + W/KV)
        assert row[SHARE] == (pytest.approx(expected) if expected is not None else None)
    # a larger model leaves less memory to caches: its share at the wall is never higher
    for (_, _), part in rows.sort("params").group_by(["hardware", "context"]):
        shares = part[SHARE].fill_null(0.0).to_list()
        assert shares == sorted(shares, reverse=True)


def test_the_caption_says_what_the_cells_show(grid: xr.Dataset) -> None:
    rows = pl.concat([size_rows(one, tp=8) for one in slices(grid)])
    chart = model_size_chart(rows, "h100-sxm")
    subtitle = " ".join(chart.to_dict()["title"]["subtitle"])  # validated against the schema
    mine = cells(rows, "h100-sxm")
    lines = []
    for context in (2048, 131072):
        hit = mine.filter((pl.col("context") == context) & pl.col("reached"))
        lines.append(size_label(float(hit["params"].max())) if hit.height else "none")
    assert lines[0] != "none"
    if lines[0] == lines[1]:
        assert f"up to {lines[0]} at every context (2,048 to 131,072 tokens)" in subtitle
    else:
        assert f"2,048 tokens: up to {lines[0]}" in subtitle
    shares = mine[SHARE].drop_nulls()
    low = int(np.floor(shares.min() * 100 + 1e-6))
    high = int(np.floor(shares.max() * 100 + 1e-6))
    assert f"At the wall decode reaches {low}% to {high}% of its ceiling" in subtitle
    assert "At 8 KV heads, bf16 cache, bf16 weights." in subtitle


def test_the_chart_renders(grid: xr.Dataset) -> None:
    import vl_convert as vlc

    rows = pl.concat([size_rows(one, tp=8) for one in slices(grid)])
    spec = model_size_chart(rows, "b200", width="single-column").to_dict()
    svg = vlc.vegalite_to_svg(spec)
    thirty = float(rows.filter(pl.col("model") == "llama-sizes-30b")["params"][0])
    assert "<svg" in svg
    assert f">{size_label(thirty)}<" in svg  # the row label, e.g. 30 B
    assert "B200" in svg


def test_the_shipped_study_runs_end_to_end_on_a_small_copy(tmp_path: Path) -> None:
    shipped = (CONFIGS / "llama3-model-size.toml").read_text("utf-8")
    study = tomllib.loads(shipped)
    assert study["models"]["llama3-sizes"]["base"] == "llama-3.1-8b"
    assert MODEL_SIZE.name in study["outputs"]["charts"]
    small = shipped.replace(
        "params = { start = 1e9, stop = 1e12, geometric = true }", "params = [1e9, 6.4e10, 5e11]"
    ).replace("batch = { start = 1, stop = 4096, geometric = true }", "batch = [1, 256]")
    small = small.replace('formats = ["html", "png"]', 'formats = ["html"]')
    assert small.count("params = [") == 1
    assert small.count("batch = [1, 256]") == 1
    path = tmp_path / "study.toml"
    path.write_text(small, "utf-8")
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / study["sweep"]["name"]
    charts = sorted(p.name for p in (folder / "charts").iterdir())
    assert charts == [  # each figure and its caption beside it
        f"model-size-{d}.{fmt}"
        for d in sorted(study["axes"]["hardware"])
        for fmt in ("html", "txt")
    ]
    report = (folder / "report.html").read_text("utf-8")
    assert MODEL_SIZE.title in report
    models = pl.read_parquet(folder / "models.parquet")
    assert models["model"].cast(pl.String).to_list() == [
        "llama3-sizes-1b",
        "llama3-sizes-64b",
        "llama3-sizes-500b",
    ]
