"""Chart builders, checked on ``chart.to_dict()``; rendering to PNG and SVG checked for content."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import xarray as xr

from sweeps.charts import (
    ai_vs_batch_chart,
    bottleneck_chart,
    ceiling_chart,
    chart_specs,
    render,
    roofline_chart,
)
from sweeps.charts.data import altair_row_limit, select
from sweeps.charts.theme import COLORS, DOES_NOT_FIT
from sweeps.config import parse_config
from sweeps.errors import ConfigError
from sweeps.grid import build_grid
from sweeps.grid.variables import REGISTRY

CONFIG = """
[sweep]
name = "charts-test"
title = "Charts test"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 8, 64, 512]
context = [512, 32768]
kv_heads = ["native", 1]
kv_dtype = ["bf16", "int4"]
[options]
ceiling_fraction = 0.5
"""


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    return build_grid(parse_config(CONFIG))


def walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every dict in a spec, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    inner = spec.get("spec", spec)
    return list(inner["layer"])


def rows(spec: dict[str, Any], node: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    data = (node or spec)["data"]
    return list(spec["datasets"][data["name"]])


def passes(row: dict[str, Any], layer: dict[str, Any]) -> bool:
    """Apply a layer's field-equal / expression filters to one data row."""
    for transform in layer.get("transform", []):
        if "calculate" in transform:
            continue
        rule = transform["filter"]
        if isinstance(rule, dict):
            if row[rule["field"]] != rule["equal"]:
                return False
        elif rule.startswith("(datum.fraction_of_ceiling >= "):
            if not row["fraction_of_ceiling"] >= float(rule.split(">= ")[1].rstrip(")")):
                return False
        elif rule == "datum.ridge_mark":
            if not row["ridge_mark"]:
                return False
        else:  # pragma: no cover - a new filter this helper does not know
            raise AssertionError(rule)
    return True


def infeasible_cells(ds: xr.Dataset) -> set[tuple[int, int, str, str]]:
    sel = select(ds)
    flags = sel.ds["feasible"].transpose("batch", "context", "kv_heads", "kv_dtype")
    labels = {"native": "native (8)", "1": "1"}
    return {
        (int(b), int(c), labels[str(h)], str(d))
        for b in flags["batch"].values
        for c in flags["context"].values
        for h in flags["kv_heads"].values
        for d in flags["kv_dtype"].values
        if not bool(flags.sel(batch=b, context=c, kv_heads=h, kv_dtype=d))
    }


def key(row: dict[str, Any]) -> tuple[int, int, str, str]:
    return (row["batch"], row["context"], row["kv_heads"], row["kv_dtype"])


def test_ceiling_axes_name_units_from_the_registry(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    encoding = layers(spec)[0]["encoding"]
    assert encoding["x"]["field"] == "batch"
    assert encoding["x"]["title"] == REGISTRY["batch"].label == "batch [sequence]"
    assert encoding["y"]["field"] == "context"
    assert encoding["y"]["type"] == "ordinal"
    assert encoding["y"]["sort"] == [512, 32768]
    assert encoding["y"]["title"] == "context [token]"
    colour = encoding["color"]
    assert colour["field"] == "fraction_of_ceiling"
    assert colour["title"] == REGISTRY["fraction_of_ceiling"].label
    assert colour["scale"]["domain"] == [0, 1]


def test_ceiling_facets_kv_heads_by_kv_dtype(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    assert spec["facet"]["column"]["field"] == "kv_heads"
    assert spec["facet"]["column"]["sort"] == ["native (8)", "1"]
    assert spec["facet"]["row"]["field"] == "kv_dtype"
    assert spec["facet"]["row"]["sort"] == ["bf16", "int4"]


def test_titles_name_model_hardware_dtypes_and_ceilings(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    text = spec["title"]["text"]
    for word in ("llama-3-8b", "H100", "weights bf16", "KV bf16/int4", "tp 1"):
        assert word in text
    subtitle = " ".join(spec["title"]["subtitle"])
    assert "ceiling" in subtitle
    assert "FLOP/byte" in subtitle
    assert "≥ 50% of ceiling" in subtitle
    for chart in (bottleneck_chart, ai_vs_batch_chart, roofline_chart):
        assert "llama-3-8b on H100" in chart(ds).to_dict()["title"]["text"]


def test_tooltips_cover_the_asked_quantities(ds: xr.Dataset) -> None:
    fields = {t["field"] for t in layers(ceiling_chart(ds).to_dict())[0]["encoding"]["tooltip"]}
    assert {
        "arithmetic_intensity",
        "ceiling",
        "fraction_of_ceiling",
        "max_batch",
        "step_time_s",
        "tokens_per_s",
    } <= fields


def test_does_not_fit_layer_holds_exactly_the_infeasible_cells(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    expected = infeasible_cells(ds)
    assert expected, "the test grid must have cells that do not fit"
    grey = [layer for layer in layers(spec) if "fill" in layer.get("encoding", {})]
    assert len(grey) == 1
    fill = grey[0]["encoding"]["fill"]
    assert fill["scale"] == {"domain": [DOES_NOT_FIT], "range": [COLORS[DOES_NOT_FIT]]}
    drawn = [row for row in rows(spec) if passes(row, grey[0])]
    assert {key(row) for row in drawn} == expected
    assert {row["status"] for row in drawn} == {DOES_NOT_FIT}
    heat = layers(spec)[0]
    assert not {key(row) for row in rows(spec) if passes(row, heat)} & expected


def test_cells_at_the_ceiling_fraction_are_outlined(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    outline = next(layer for layer in layers(spec) if "stroke" in layer.get("encoding", {}))
    assert outline["mark"]["fillOpacity"] == 0
    drawn = [row for row in rows(spec) if passes(row, outline)]
    assert drawn
    assert all(row["fraction_of_ceiling"] >= 0.5 and row["feasible"] for row in drawn)
    reached = [row for row in rows(spec) if row["feasible"] and row["fraction_of_ceiling"] >= 0.5]
    assert len(drawn) == len(reached)


def test_ridge_mark_sits_on_the_first_compute_bound_batch(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    tick = next(layer for layer in layers(spec) if layer["mark"]["type"] == "tick")
    marked = [row for row in rows(spec) if passes(row, tick)]
    assert marked, "kv_heads 1 in int4 turns compute-bound within the grid"
    for row in marked:
        line = [r for r in rows(spec) if key(r)[1:] == key(row)[1:]]
        first = min(r["batch"] for r in line if r["bottleneck"] == "compute-bound")
        assert row["batch"] == first
        assert row["ridge_batch"] <= row["batch"]


def test_subtitle_says_when_decode_never_turns_compute_bound() -> None:
    never = build_grid(
        parse_config(
            CONFIG.replace('kv_heads = ["native", 1]', 'kv_heads = ["native"]').replace(
                'kv_dtype = ["bf16", "int4"]', 'kv_dtype = ["bf16"]'
            )
        )
    )
    assert np.isnan(never["ridge_batch"].values).all()
    subtitle = " ".join(ceiling_chart(never).to_dict()["title"]["subtitle"])
    assert "never turns compute-bound" in subtitle


def test_bottleneck_colours_three_states_and_greys_the_infeasible(ds: xr.Dataset) -> None:
    spec = bottleneck_chart(ds).to_dict()
    colour = layers(spec)[0]["encoding"]["color"]
    assert colour["field"] == "status"
    assert colour["scale"]["domain"] == ["memory-bound", "compute-bound", DOES_NOT_FIT]
    assert colour["scale"]["range"][2] == COLORS[DOES_NOT_FIT]
    grey = {key(row) for row in rows(spec) if row["status"] == DOES_NOT_FIT}
    assert grey == infeasible_cells(ds)
    assert spec["facet"]["column"]["field"] == "kv_heads"
    assert spec["facet"]["row"]["field"] == "kv_dtype"


def test_ai_vs_batch_is_log_x_with_ceilings_ridge_and_walls(ds: xr.Dataset) -> None:
    spec = ai_vs_batch_chart(ds).to_dict()
    line = layers(spec)[1]["encoding"]
    assert line["x"]["scale"]["type"] == "log"
    assert line["x"]["title"] == "batch [sequence]"
    assert line["y"]["title"] == "arithmetic intensity [FLOP/byte]"
    assert line["color"]["field"] == "context"
    rules = [layer for layer in layers(spec) if layer["mark"]["type"] == "rule"]
    ys = {rule["encoding"]["y"].get("field") for rule in rules}
    assert {"ceiling", "ridge_point", "wall_y"} <= ys
    walls = [row for row in rows(spec) if row["wall"]]
    lines = {key(row)[1:] for row in rows(spec) if row["max_batch"] >= 1}
    assert sorted(key(row)[1:] for row in walls) == sorted(lines)  # one wall on every line
    assert all(row["wall_x"] == min(row["max_batch"], 512) for row in walls)


def test_roofline_is_log_log_with_roof_and_phases(ds: xr.Dataset) -> None:
    spec = roofline_chart(ds).to_dict()
    roof, dots, _ = spec["layer"]
    for layer in (roof, dots):
        assert layer["encoding"]["x"]["scale"]["type"] == "log"
        assert layer["encoding"]["y"]["scale"]["type"] == "log"
    assert dots["encoding"]["y"]["title"] == REGISTRY["attainable_flops"].label
    assert dots["encoding"]["color"]["scale"]["domain"] == ["decode", "prefill", DOES_NOT_FIT]
    points = rows(spec, dots)
    assert {row["phase"] for row in points} == {"decode", "prefill"}
    vertices = rows(spec, roof)
    peak = float(ds["peak_flops"].values.max())
    assert max(v["attainable_flops"] for v in vertices) == pytest.approx(peak)
    for row in points:  # every point lies on or under the roof
        assert row["attainable_flops"] <= peak * (1 + 1e-9)


def test_every_axis_names_a_unit(ds: xr.Dataset) -> None:
    for chart in (ceiling_chart, bottleneck_chart, ai_vs_batch_chart, roofline_chart):
        spec = chart(ds).to_dict()
        titles = [
            node["x"]["title"]
            for node in walk(spec)
            if isinstance(node.get("x"), dict) and "title" in node["x"]
        ]
        titles += [
            node["y"]["title"]
            for node in walk(spec)
            if isinstance(node.get("y"), dict) and "title" in node["y"]
        ]
        assert titles
        assert all("[" in t and t.endswith("]") for t in titles), titles


def test_large_grids_are_thinned_and_say_so(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds, max_cells=16).to_dict()
    assert len(rows(spec)) <= 16
    assert any("thinned" in line for line in spec["title"]["subtitle"])
    assert len(rows(ceiling_chart(ds).to_dict())) == 32
    assert not any("thinned" in line for line in ceiling_chart(ds).to_dict()["title"]["subtitle"])


def test_cell_limit_never_exceeds_altairs_row_limit(ds: xr.Dataset) -> None:
    assert select(ds, max_cells=10**9).max_cells == altair_row_limit() == 5000


def test_unknown_model_names_the_allowed_ones(ds: xr.Dataset) -> None:
    with pytest.raises(ConfigError, match="llama-3-8b"):
        ceiling_chart(ds, "no-such-model")


def test_one_stem_per_chart_model_and_hardware_first_tp_said_in_subtitle() -> None:
    grid = build_grid(
        parse_config(
            CONFIG.replace('kv_dtype = ["bf16", "int4"]', 'kv_dtype = ["bf16"]\ntp = [1, 2]')
        )
    )
    specs = list(chart_specs(grid, ["ceiling", "roofline"]))
    assert [stem for stem, _ in specs] == [
        "ceiling-llama-3-8b-h100-sxm",
        "roofline-llama-3-8b-h100-sxm",
    ]
    for _, spec in specs:
        assert "tp 1, 2" in " ".join(spec["title"]["subtitle"])
        assert "tp 1)" in spec["title"]["text"]
    other = ceiling_chart(grid, tp=2).to_dict()
    assert "tp 2)" in other["title"]["text"]


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the decompressed scanlines of a PNG (filter bytes included)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, width, height = 8, b"", 0, 0
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    return width, height, zlib.decompress(idat)


def test_png_and_svg_render_with_content(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    png = render(spec, "png")
    width, height, raw = png_pixels(png)
    assert width > 800
    assert height > 400
    assert len(png) > 20_000
    values = np.frombuffer(raw, dtype=np.uint8)
    assert len(np.unique(values)) > 50
    assert values.std() > 20
    svg = render(spec, "svg").decode()
    assert svg.startswith("<svg")
    assert len(svg) > 10_000
    assert svg.count("<path") > 20
    assert "batch [sequence]" in svg
    assert "does not fit" in svg


def test_cli_start_up_and_validate_never_import_altair(tmp_path: Any) -> None:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG, "utf-8")
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from sweeps.cli.main import cli\n"
        f"result = CliRunner().invoke(cli, ['validate', {str(config)!r}])\n"
        "assert result.exit_code == 0, result.output\n"
        "result = CliRunner().invoke(cli, ['--help'])\n"
        "assert result.exit_code == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith(('altair', 'sweeps.charts'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
