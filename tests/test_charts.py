"""Chart builders, checked on ``chart.to_dict()``; rendering to PNG and SVG checked for content."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from sweeps.charts import (
    Settings,
    ai_vs_batch_chart,
    bottleneck_chart,
    ceiling_chart,
    chart_specs,
    compare_chart,
    render,
    roofline_chart,
)
from sweeps.charts.data import (
    altair_row_limit,
    choose,
    first_reached_batch,
    percent_digits,
    percent_labels,
    reached,
    select,
    shown_percent,
    spaced,
)
from sweeps.charts.lines import LABEL_GAP, ridge_label_side, spread
from sweeps.charts.roofline import compute_dtype
from sweeps.charts.spec import spec_of
from sweeps.charts.theme import COLORS, DOES_NOT_FIT, HALO, INK, SCREEN, SIZES
from sweeps.config import load_config, parse_config
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
        elif rule in ("datum.ridge_mark", "datum.reached"):
            if not row[rule.removeprefix("datum.")]:
                return False
        elif rule.startswith("(datum.mark === "):
            if row["mark"] != rule.split("'")[1]:
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
    # two context rows per panel are too short for the title: it moves to the row header
    assert encoding["y"]["title"] is None
    assert spec["facet"]["row"]["title"] == "context [token] by kv dtype"
    colour = encoding["color"]
    assert colour["field"] == "fraction_of_ceiling"
    assert colour["title"] == "fraction of ceiling [%]"  # a percent scale (issue 46)
    assert REGISTRY["fraction_of_ceiling"].label == "fraction of ceiling [1]"
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
    reached_ = [row for row in rows(spec) if row["feasible"] and row["fraction_of_ceiling"] >= 0.5]
    assert len(drawn) == len(reached_)


@pytest.mark.parametrize(
    ("fraction", "threshold", "shown", "hit"),
    [
        (0.895, 0.9, 89.0, False),  # the "90%" cell at 89.5 %: now "89%", not outlined
        (0.9, 0.9, 90.0, True),
        (0.9 - 1e-12, 0.9, 90.0, True),  # float noise of an exact 90 %
        (0.9049, 0.905, 90.4, False),
        (0.905, 0.905, 90.5, True),
        (float("nan"), 0.9, None, False),
    ],
)
def test_the_one_reached_rule_floors_to_the_thresholds_digits(
    fraction: float, threshold: float, shown: float | None, hit: bool
) -> None:
    value = float(shown_percent(np.float64(fraction), threshold))
    assert np.isnan(value) if shown is None else value == pytest.approx(shown)
    assert bool(reached(np.float64(fraction), True, threshold)) is hit
    assert not bool(reached(np.float64(fraction), False, threshold))
    label = percent_labels(np.array([fraction]), threshold)[0]
    assert label == (None if shown is None else f"{shown:.{percent_digits(threshold)}f}%")


@given(st.floats(0, 1), st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.905]))
def test_a_cell_is_reached_exactly_when_its_label_reads_the_threshold(
    fraction: float, threshold: float
) -> None:
    label = percent_labels(np.array([fraction]), threshold)[0]
    assert label is not None
    assert bool(reached(np.float64(fraction), True, threshold)) is (
        float(label.rstrip("%")) >= round(threshold * 100, 4)
    )


@pytest.mark.parametrize("threshold", [0.5, 0.68, 0.9])
def test_label_outline_legend_and_summary_share_the_reached_rule(threshold: float) -> None:
    grid = build_grid(
        parse_config(CONFIG.replace("ceiling_fraction = 0.5", f"ceiling_fraction = {threshold}"))
    )
    spec = ceiling_chart(grid).to_dict()
    outline = next(layer for layer in layers(spec) if "stroke" in layer.get("encoding", {}))
    text = next(layer for layer in layers(spec) if layer["mark"]["type"] == "text")
    assert text["encoding"]["text"]["field"] == "label"
    digits = percent_digits(threshold)
    entry = f"≥ {threshold * 100:.{digits}f}% of ceiling"
    assert outline["encoding"]["stroke"]["scale"]["domain"] == [entry]
    assert entry in " ".join(spec["title"]["subtitle"])
    outlined = {key(row) for row in rows(spec) if passes(row, outline)}
    labelled = {
        key(row)
        for row in rows(spec)
        if row["feasible"] and float(row["label"].rstrip("%")) >= threshold * 100
    }
    assert outlined == labelled
    assert outlined or threshold == 0.9  # the lower thresholds are reached in this grid
    first = first_reached_batch(select(grid).ds, threshold)  # the report's summary column
    for (context, heads, dtype), batch in _first_outlined(rows(spec), outline).items():
        native = "native" if heads.startswith("native") else heads
        value = first.sel(context=context, kv_heads=native, kv_dtype=dtype).item()
        assert value == batch
    assert int(np.isfinite(first.values).sum()) == len(_first_outlined(rows(spec), outline))


def _first_outlined(cells: list[dict[str, Any]], outline: dict[str, Any]) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for row in cells:
        if passes(row, outline):
            line = key(row)[1:]
            out[line] = min(out.get(line, row["batch"]), row["batch"])
    return out


def test_outline_legend_swatch_is_the_outline_itself(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    outline = next(layer for layer in layers(spec) if "stroke" in layer.get("encoding", {}))
    stroke = outline["encoding"]["stroke"]
    assert stroke["scale"]["range"] == [INK]
    legend = stroke["legend"]
    assert legend["symbolStrokeColor"] == INK
    assert legend["symbolFillColor"] == HALO
    assert legend["symbolStrokeWidth"] == outline["mark"]["strokeWidth"]


def test_ridge_marker_is_black_on_a_white_halo(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    ticks = [layer for layer in layers(spec) if layer["mark"]["type"] == "tick"]
    assert [(t["mark"]["color"], t["mark"]["thickness"]) for t in ticks] == [(HALO, 7), (INK, 3)]


def test_ceiling_caption_states_the_wall_share_and_the_ridge_crossing() -> None:
    seed = build_grid(load_config(SEED))
    caption = ceiling_chart(seed).to_dict()["title"]["subtitle"]
    # Llama-3 8B in bf16: W = 16.06 GB on 80 GiB (85.9 GB) less 10 %: 1 - 16.06 / 77.3 = 79 %
    assert caption[0] == (
        "At the memory wall decode reaches 80% of the ceiling, never 90%: the weights' share "
        "of memory sets it, whatever the context."
    )
    # ceiling 2 P / KV_seq-ish: 243 at 512 tokens, 19 at 8,192; H100 ridge 989e12 / 3.35e12
    assert caption[1].startswith("The ceiling (228 at 512, 18 at 8,192 tokens) is below the ridge")
    grid = build_grid(parse_config(CONFIG))
    crossing = " ".join(ceiling_chart(grid).to_dict()["title"]["subtitle"])
    # native in bf16 is below the ridge at 512 tokens too: the sentence counts the settings
    assert (
        "The ceiling is below the ridge point (295 FLOP/byte) in 5 of 8 settings (context x KV "
        "heads x KV dtype): decode stays memory-bound there at any batch; in every KV setting "
        "from 32,768 tokens on."
    ) in crossing


def test_ridge_mark_sits_on_the_first_compute_bound_batch(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds).to_dict()
    tick = next(layer for layer in layers(spec) if layer["mark"]["type"] == "tick")
    marked = [row for row in rows(spec) if passes(row, tick)]
    assert marked, "kv_heads 1 in int4 turns compute-bound within the grid"
    assert all(row["feasible"] for row in marked)  # beyond the memory wall it is never reached
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
    # two facet rows of 220 px: the title breaks before its unit rather than overprint
    assert line["y"]["title"] == ["arithmetic intensity", "[FLOP/byte]"]
    assert line["color"]["field"] == "context"
    rules = [layer for layer in layers(spec) if layer["mark"]["type"] == "rule"]
    assert {rule["encoding"]["y"].get("field") for rule in rules} == {"ceiling", "ridge_point"}
    tick = next(layer for layer in layers(spec) if layer["mark"]["type"] == "tick")
    walls = [row for row in rows(spec) if passes(row, tick)]
    inside = {key(row)[1:] for row in rows(spec) if 1 <= row["max_batch"] <= 512}
    assert sorted(key(row)[1:] for row in walls) == sorted(inside)  # one wall per such line
    batches = [int(b) for b in ds["batch"].values]
    for row in walls:  # at the line's last batch that fits
        assert row["batch"] == max(b for b in batches if b <= row["max_batch"])


def eight_contexts() -> xr.Dataset:
    return build_grid(
        parse_config(
            CONFIG.replace(
                "context = [512, 32768]",
                "context = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]",
            )
            .replace('kv_heads = ["native", 1]', 'kv_heads = ["native"]')
            .replace('kv_dtype = ["bf16", "int4"]', 'kv_dtype = ["bf16"]')
            .replace(
                "batch = [1, 8, 64, 512]", "batch = { start = 1, stop = 1024, geometric = true }"
            )
        )
    )


def test_ai_vs_batch_gives_eight_contexts_eight_looks_and_labels_that_never_overprint() -> None:
    grid = eight_contexts()
    spec = ai_vs_batch_chart(grid).to_dict()
    colour = layers(spec)[1]["encoding"]["color"]
    shape = layers(spec)[2]["encoding"]["shape"]  # the points: a marker beside each hue
    assert colour["scale"]["domain"] == shape["scale"]["domain"]
    looks = set(zip(colour["scale"]["range"], shape["scale"]["range"], strict=True))
    assert len(looks) == len(colour["scale"]["domain"]) == 8
    label = next(
        layer
        for layer in layers(spec)
        if layer["mark"]["type"] == "text" and layer["encoding"]["text"].get("field") == "end_label"
    )
    ends = [row for row in rows(spec) if passes(row, label)]
    assert len(ends) == 8
    assert all(row["batch"] == 1024 for row in ends)  # at the right end of every line
    assert any(row["end_label"].startswith("65,536 tok, wall ") for row in ends)
    lo, hi = layers(spec)[1]["encoding"]["y"]["scale"]["domain"]
    pixels = sorted(
        np.log10(row["label_y"]) / np.log10(hi / lo) * SCREEN.panel_height for row in ends
    )
    assert min(np.diff(pixels)) >= LABEL_GAP * SCREEN.font - 1e-6  # no two labels overlap


def test_spread_keeps_order_and_moves_apart_only_what_is_too_close() -> None:
    placed = spread(np.array([1.0, 1.05, 5.0, 1.1]), 0.5)
    assert placed[2] == 5.0
    # the three close ones keep their mean (1.05) and sit exactly one gap apart
    assert placed[[0, 1, 3]] == pytest.approx([0.55, 1.05, 1.55])
    assert spread(np.array([0.0, 3.0]), 1.0) == pytest.approx([0.0, 3.0])


@given(st.lists(st.floats(-100, 100), min_size=1, max_size=12), st.floats(0.01, 5))
def test_spread_never_leaves_two_labels_closer_than_the_gap(
    values: list[float], gap: float
) -> None:
    placed = spread(np.array(values), gap)
    order = np.argsort(values, kind="stable")
    assert np.all(np.diff(placed[order]) >= gap * (1 - 1e-9))
    assert placed.mean() == pytest.approx(np.mean(values), abs=1e-6)


def test_roofline_has_a_roof_per_compute_dtype_and_a_bandwidth_label(ds: xr.Dataset) -> None:
    spec = roofline_chart(ds).to_dict()
    roof, dots, labels, slope = spec["layer"]
    for layer in (roof, dots):
        assert layer["encoding"]["x"]["scale"]["type"] == "log"
        assert layer["encoding"]["y"]["scale"]["type"] == "log"
    assert dots["encoding"]["y"]["title"] == REGISTRY["attainable_flops"].label
    assert dots["encoding"]["color"]["scale"]["domain"] == ["decode", "prefill", DOES_NOT_FIT]
    points = rows(spec, dots)
    assert {row["phase"] for row in points} == {"decode", "prefill"}
    vertices = rows(spec, roof)
    peaks = {
        r: max(v["attainable_flops"] for v in vertices if v["roof"] == r) for r in ("bf16", "fp8")
    }
    assert peaks["bf16"] == pytest.approx(float(ds["peak_flops_bf16"].values[0]))
    assert peaks["fp8"] == pytest.approx(float(ds["peak_flops_fp8"].values[0]))
    for row in points:  # every point lies on or under the roof of the sweep's compute dtype
        assert row["attainable_flops"] <= peaks["bf16"] * (1 + 1e-9)
    assert [row["label"] for row in rows(spec, slope)] == ["3.35 TB/s"]
    assert {row["label"] for row in rows(spec, labels)} == {"bf16 989 TFLOP/s", "fp8 1,979 TFLOP/s"}
    x_max = roof["encoding"]["x"]["scale"]["domain"][1]
    for row in rows(spec, labels):  # right of the roof's end, clear of the y axis and lines
        assert labels["mark"]["align"] == "left"
        assert row["arithmetic_intensity"] == pytest.approx(x_max)


def test_cross_device_roofline_has_one_roof_per_device() -> None:
    grid = build_grid(
        parse_config(
            CONFIG.replace(
                'hardware = ["h100-sxm"]', 'hardware = ["h100-sxm", "a100-80gb", "b200"]'
            )
        )
    )
    spec = compare_chart(grid).to_dict()
    roof, ridges, dots, labels = spec["layer"]
    devices = {row["hardware"] for row in rows(spec, roof)}
    assert {row["hardware"] for row in rows(spec, ridges)} == devices  # a marker per roof
    assert devices == {str(n) for n in grid["hardware_name"].values}
    assert {row["label"] for row in rows(spec, labels)} == devices
    assert {row["phase"] for row in rows(spec, dots)} == {"decode", "prefill"}
    assert all(row["feasible"] for row in rows(spec, dots))
    stems = [f.stem for f in chart_specs(grid, ["roofline"])]
    assert stems[-1] == "roofline-devices-llama-3-8b"


def test_cross_device_roofline_on_every_catalog_device_shares_the_row_limit() -> None:
    """35 devices at up to 4,500 points each were 72,774 rows, past Altair's 5,000: the chart
    failed. Each device now gets its share of the cells, and the caption says so."""
    from sweeps.catalog import load_catalog

    devices = sorted({h.id for h in load_catalog().hardware.values()})
    assert len(devices) >= 35
    text = CONFIG.replace('hardware = ["h100-sxm"]', f"hardware = {devices!r}").replace(
        "batch = [1, 8, 64, 512]", "batch = { start = 1, stop = 64 }"
    )
    grid = build_grid(parse_config(text))
    cells = 64 * 2 * 2 * 2  # batch x context x kv_heads x kv_dtype, per phase
    assert len(devices) * 2 * cells > altair_row_limit()  # the points of every device
    spec = compare_chart(grid).to_dict()
    roof, _, dots, _ = spec["layer"]
    shown = {row["hardware"] for row in rows(spec, roof)}  # those the model fits on
    drawn = rows(spec, dots)
    assert 0 < len(drawn) <= altair_row_limit()
    counts = {d: sum(row["hardware"] == d for row in drawn) for d in shown}
    assert max(counts.values()) <= 4500 // len(shown)
    subtitle = " ".join(spec["title"]["subtitle"])
    assert f"{len(shown)} devices share the chart's 4,500 cells" in subtitle


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
        titles = [" ".join(t) if isinstance(t, list) else t for t in titles if t is not None]
        assert titles
        assert all("[" in t and t.endswith("]") for t in titles), titles


def test_large_grids_are_thinned_and_say_so(ds: xr.Dataset) -> None:
    spec = ceiling_chart(ds, max_cells=16).to_dict()
    assert len(rows(spec)) <= 16
    assert any("Thinned" in line for line in spec["title"]["subtitle"])
    assert len(rows(ceiling_chart(ds).to_dict())) == 32
    assert not any("Thinned" in line for line in ceiling_chart(ds).to_dict()["title"]["subtitle"])


def test_thinning_is_log_spaced_and_keeps_the_knee_region() -> None:
    values = np.arange(1, 1025)
    kept = values[spaced(values, 21)]
    assert kept[0] == 1
    assert kept[-1] == 1024
    assert np.sum(kept <= 32) >= 10  # half the kept values in the first 3 % of the axis
    ratios = kept[1:] / kept[:-1]
    assert ratios[1:].max() < 1.6  # about 2 ** (10 / 20) = 1.41 apart, not every 51st batch
    linear = np.linspace(-5.0, 5.0, 101)  # not all positive: linear spacing
    assert np.allclose(np.diff(linear[spaced(linear, 11)]), 1.0)


def test_cell_limit_never_exceeds_altairs_row_limit(ds: xr.Dataset) -> None:
    assert select(ds, max_cells=10**9).max_cells == altair_row_limit() == 5000


def test_unknown_model_names_the_allowed_ones(ds: xr.Dataset) -> None:
    with pytest.raises(ConfigError, match="llama-3-8b"):
        ceiling_chart(ds, "no-such-model")


MOE = Path(__file__).resolve().parent.parent / "configs" / "moe-mla-study.toml"
SEED = MOE.with_name("seed-llama3-8b-h100.toml")


@pytest.fixture(scope="module")
def moe() -> xr.Dataset:
    return build_grid(load_config(MOE))


@pytest.mark.parametrize(
    ("model", "device", "tp", "dtype"),
    [
        ("deepseek-v3", "h200", 8, "fp8"),  # 671e9 params: fp8 on 8 x 141 GB, never bf16
        ("deepseek-v3", "b200", 4, "fp8"),
        ("qwen3-235b-a22b", "h200", 2, "fp8"),  # 235e9 fp8 bytes over 2 x 141 GB x 0.9
        ("mixtral-8x7b", "mi300x", 1, "bf16"),
    ],
)
def test_each_model_and_device_is_drawn_at_the_smallest_tp_and_dtype_that_fits(
    moe: xr.Dataset, model: str, device: str, tp: int, dtype: str
) -> None:
    spec = ceiling_chart(moe, model, device).to_dict()
    assert f"(weights {dtype}, KV bf16/fp8, tp {tp})" in spec["title"]["text"]
    caption = " ".join(spec["title"]["subtitle"])
    assert f"Drawn at tp {tp} with {dtype} weights: the smallest tp, then weight dtype" in caption
    assert "the Parquet files have tp 1, 2, 4, 8 and weights bf16, fp8" in caption
    assert any(row["feasible"] for row in rows(spec))


def test_the_caption_says_what_did_not_fit_before_the_choice(moe: xr.Dataset) -> None:
    caption = " ".join(ceiling_chart(moe, "deepseek-v3", "h200").to_dict()["title"]["subtitle"])
    assert "(nothing fits at tp 1, 2, 4; bf16 weights do not at tp 8)" in caption


def test_pick_first_and_fixed_facets_are_honoured(moe: xr.Dataset) -> None:
    first = ceiling_chart(moe, "mixtral-8x7b", "h200", pick="first").to_dict()
    assert "(weights bf16, KV bf16/fp8, tp 1)" in first["title"]["text"]
    fixed = ceiling_chart(moe, "mixtral-8x7b", "h200", tp=4, weight_dtype="fp8").to_dict()
    assert "tp 4)" in fixed["title"]["text"]
    assert "as set in [outputs.figures]" in " ".join(fixed["title"]["subtitle"])
    with pytest.raises(ConfigError, match=r"tp 3 is not in the grid; allowed: \[1, 2, 4, 8\]"):
        ceiling_chart(moe, "mixtral-8x7b", "h200", tp=3)
    with pytest.raises(ConfigError, match=r"pick 'best' is unknown; allowed: \['smallest-fit'"):
        choose(moe, "mixtral-8x7b", "h200", pick="best")


def test_a_chart_whose_every_cell_does_not_fit_is_not_drawn_and_says_why(moe: xr.Dataset) -> None:
    small = moe.sel(tp=[1, 2])
    figures = {f.stem: f for f in chart_specs(small, ["ceiling", "bottleneck"])}
    skipped = figures["ceiling-deepseek-v3-h200"]
    assert skipped.spec is None
    assert skipped.reason == (
        "deepseek-v3 does not fit on H200 SXM 141GB at any tp (1, 2) and weight dtype "
        "(bf16, fp8) drawn"
    )
    assert figures["bottleneck-deepseek-v3-h200"].reason == skipped.reason
    for figure in figures.values():  # every chart drawn has cells that fit
        if figure.spec is not None:
            assert any(row["feasible"] for row in rows(figure.spec))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("tp = 3", r"outputs\.figures\.tp: 3 is not on axes\.tp; allowed: \[1, 2, 4, 8\]"),
        (
            'weight_dtype = "int4"',
            r"outputs\.figures\.weight_dtype: 'int4' is not on axes\."
            r"weight_dtype; allowed: \['bf16', 'fp8'\]",
        ),
        (
            'pick = "best"',
            r"outputs\.figures\.pick: must be one of 'smallest-fit' or 'first' "
            r"\(got 'best'\)",
        ),
        (
            'width = "a4"',
            r"outputs\.figures\.width: must be one of 'screen', 'single-column' "
            r"or 'double-column'",
        ),
        ("tpp = 1", r"outputs\.figures\.tpp: unknown key; did you mean 'tp'\?"),
    ],
)
def test_outputs_figures_is_validated_naming_key_value_and_allowed(
    extra: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(MOE.read_text("utf-8") + f"\n[outputs.figures]\n{extra}\n")


def test_outputs_figures_is_carried_on_the_sweep_and_into_the_charts() -> None:
    sweep = parse_config(
        MOE.read_text("utf-8")
        + '\n[outputs.figures]\ntp = 8\nweight_dtype = "fp8"\nwidth = "single-column"\n'
    )
    settings = Settings.of(sweep)
    assert (settings.tp, settings.weight_dtype, settings.width) == (8, "fp8", "single-column")
    assert parse_config(MOE.read_text("utf-8")).figures.pick == "smallest-fit"


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
        "print(sorted(m for m in sys.modules if m.startswith(('altair', 'sweeps.charts', 'sweeps.outputs'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the config schema reads the chart kinds' registry on the ground floor; no chart is imported
    assert out.stdout.strip() == "['sweeps.outputs']"


def test_charts_carry_their_theme_and_the_session_keeps_its_own(ds: xr.Dataset) -> None:
    assert alt.theme.active == "default"  # importing the builders turned nothing on
    plain = alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q").to_dict()
    assert "font" not in plain.get("config", {})  # a user's own chart keeps Altair's look
    assert ceiling_chart(ds).to_dict()["config"]["font"].startswith("DejaVu Sans")
    printed = ceiling_chart(ds, width="single-column").to_dict()["config"]
    assert printed["axis"]["labelFontSize"] == SIZES["single-column"].font
    side = ceiling_chart(ds) | bottleneck_chart(ds)
    stacked = ai_vs_batch_chart(ds) & roofline_chart(ds)
    for chart in (side, stacked, roofline_chart(ds) + roofline_chart(ds)):
        spec = chart.to_dict()
        assert spec["config"]["font"].startswith("DejaVu Sans")  # the theme, at the top only
        assert not [node for node in walk(spec) if node is not spec and "config" in node]
    assert alt.theme.active == "default"  # and drawing them left it as it was
    svg = render(side.to_dict(), "svg").decode()
    assert "fraction of the decode ceiling" in svg
    assert "what bounds decode" in svg


def test_pdf_is_vector_and_not_blank(ds: xr.Dataset) -> None:
    pdf = render(ceiling_chart(ds).to_dict(), "pdf")
    assert pdf.startswith(b"%PDF-")
    streams = re.findall(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S)
    content = b"".join(zlib.decompress(s) for s in streams if s[:1] == b"x")
    assert content.count(b" re") + content.count(b" l\n") + content.count(b" m\n") > 50
    colours = set(re.findall(rb"([\d.]+ [\d.]+ [\d.]+) scn", content))
    assert len(colours) > 5  # filled with the scale's colours, not an empty page
    box = re.search(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf)
    assert box is not None
    assert 300 < float(box.group(1)) < 2000


@pytest.mark.parametrize(("width", "inches"), [("single-column", 3.5), ("double-column", 7.0)])
def test_print_widths_fit_their_column_at_300_dpi(width: str, inches: float) -> None:
    grid = build_grid(load_config(SEED))
    size = SIZES[width]
    for builder in (ceiling_chart, bottleneck_chart, ai_vs_batch_chart, roofline_chart):
        spec = spec_of(builder(grid, width=width), width)
        assert spec["config"]["axis"]["labelFontSize"] == size.font  # 7 or 8 pt at 300 dpi
        png_width, _, _ = png_pixels(render(spec, "png", size))
        assert png_width / 300 <= inches * 1.05, (builder.__name__, png_width / 300)
        assert png_width / 300 >= inches * 0.6


def test_the_javascript_bundle_is_built_once_and_kept_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweeps.charts import rendering

    built: list[int] = []
    real = rendering.vlc.javascript_bundle

    def counting(*args: Any, **kwargs: Any) -> str:
        built.append(1)
        return str(real(*args, **kwargs))

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(rendering.vlc, "javascript_bundle", counting)
    rendering.javascript.cache_clear()
    try:
        first = rendering.javascript()
        path = rendering.bundle_path()
        assert path.parent == tmp_path / "cache" / "sweeps"
        assert f"vl-convert-{rendering.vlc.__version__}-" in path.name
        assert path.read_text("utf-8") == first
        rendering.javascript.cache_clear()
        assert rendering.javascript() == first  # read back, not built again
        assert built == [1]
        blocked = tmp_path / "not-a-folder"
        blocked.write_text("", "utf-8")
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
        assert rendering.cache_folder().parent == Path(tempfile.gettempdir())
    finally:
        rendering.javascript.cache_clear()


def test_each_chart_is_drawn_once_for_every_format(
    ds: xr.Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweeps.charts import rendering

    drawn: list[int] = []
    real = rendering.vlc.vegalite_to_svg

    def counting(*args: Any, **kwargs: Any) -> str:
        drawn.append(1)
        return str(real(*args, **kwargs))

    monkeypatch.setattr(rendering.vlc, "vegalite_to_svg", counting)
    out = rendering.render_spec(ceiling_chart(ds).to_dict(), ["svg", "png", "pdf", "html"])
    assert list(out) == ["svg", "png", "pdf", "html"]
    assert drawn == [1]
    with pytest.raises(ValueError, match=r"unknown format 'jpg'; allowed: \['html', 'png'"):
        rendering.render_spec({}, ["jpg"])


def test_the_cross_device_roofline_names_the_devices_a_model_does_not_fit_on(
    moe: xr.Dataset,
) -> None:
    figures = {f.stem: f for f in chart_specs(moe.sel(tp=[1, 2]), ["roofline"])}
    none = figures["roofline-devices-deepseek-v3"]
    assert none.spec is None
    assert none.reason.startswith("deepseek-v3 fits on none of H200 SXM 141GB, B200")
    qwen = figures["roofline-devices-qwen3-235b-a22b"].spec  # fits at tp 2 in fp8 on all three
    assert qwen is not None
    assert "(all at tp 2 with fp8 weights)" in " ".join(qwen["title"]["subtitle"])
    with pytest.raises(ConfigError, match="deepseek-v3 fits on none of H200"):
        compare_chart(moe.sel(tp=[1, 2]), "deepseek-v3")


def test_the_roofline_reads_which_peak_the_grid_used(ds: xr.Dataset) -> None:
    fp8 = build_grid(
        parse_config(CONFIG.replace("ceiling_fraction = 0.5", 'compute_dtype = "fp8"'))
    )
    assert compute_dtype(select(fp8)) == "fp8"
    assert compute_dtype(select(ds)) == "bf16"
    roof = roofline_chart(fp8).to_dict()["layer"][0]
    solid = roof["encoding"]["strokeDash"]["scale"]
    assert solid["range"][solid["domain"].index("fp8")] == [1, 0]
    assert "the points use the fp8 roof" in " ".join(
        roofline_chart(fp8).to_dict()["title"]["subtitle"]
    )


def _struck(ridge: float, ceilings: list[float], span: tuple[float, float], height: float,
            font: float, up: bool) -> tuple[bool, float]:  # fmt: skip
    """A plain reading in pixels: whether a ceiling line runs through the band of one label
    line (1.4 x the font) above (``up``) or below the ridge line, and how far the nearest
    ceiling on that side is [px]."""
    px = height / (np.log10(span[1]) - np.log10(span[0]))
    at = np.log10(ridge) * px
    nearest, struck = np.inf, False
    for c in ceilings:
        d = np.log10(c) * px - at
        d = d if up else -d
        if d >= 0:
            nearest = min(nearest, d)
            struck = struck or d <= 1.4 * font
    return struck, nearest


@given(
    ridge=st.floats(10, 1000),
    ceilings=st.lists(st.floats(1, 1e5), max_size=8),
    height=st.floats(100, 600),
    font=st.floats(8, 14),
)
def test_the_ridge_label_goes_where_no_ceiling_strikes_it(
    ridge: float, ceilings: list[float], height: float, font: float
) -> None:
    """Issue 46: ceiling lines struck the ridge label through. It goes above its line where
    no ceiling crosses that band, else below where none crosses that one, else on the side
    whose nearest ceiling is farther."""
    span = (1.0, 1e5)
    side = ridge_label_side(ridge, np.asarray(ceilings, dtype=float), span, height, font)
    above, clear_up = _struck(ridge, ceilings, span, height, font, True)
    below, clear_down = _struck(ridge, ceilings, span, height, font, False)
    if not above:
        assert side == "above"
    elif not below:
        assert side == "below"
    else:
        assert side == ("above" if clear_up >= clear_down else "below")


def test_the_ai_chart_places_its_ridge_label_by_its_ceilings(ds: xr.Dataset) -> None:
    spec = ai_vs_batch_chart(ds).to_dict()
    texts = [
        layer
        for layer in _walk_layers(spec)
        if isinstance(layer.get("mark"), dict)
        and layer["mark"].get("type") == "text"
        and "value" in layer.get("encoding", {}).get("text", {})
        and "ridge point" in str(layer["encoding"]["text"]["value"])
    ]
    assert len(texts) == 1
    sel = select(ds)
    domain = _walk_y_domain(spec)
    side = ridge_label_side(
        float(np.max(sel.ds["ridge_point"].values)),
        np.asarray(sel.ds["ceiling"].values, dtype=float).reshape(-1),
        tuple(domain),
        sel.size.panel_height,
        sel.size.font,
    )
    assert texts[0]["mark"]["baseline"] == ("bottom" if side == "above" else "top")


def _walk_layers(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if "mark" in node:
            found.append(node)
        for value in node.values():
            found += _walk_layers(value)
    elif isinstance(node, list):
        for value in node:
            found += _walk_layers(value)
    return found


def _walk_y_domain(spec: dict[str, Any]) -> list[float]:
    for layer in _walk_layers(spec):
        y = layer.get("encoding", {}).get("y", {})
        if y.get("field") == "arithmetic_intensity":
            return list(y["scale"]["domain"])
    msg = "no intensity axis"
    raise AssertionError(msg)


def test_a_ceiling_at_the_ridge_strikes_both_sides_alike() -> None:
    """Found by hypothesis: a ceiling equal to the ridge (414.5) was read on one side only, as
    the ridge's logarithm came from math and the ceilings' from numpy (one unit apart)."""
    side = ridge_label_side(414.5, np.asarray([414.5]), (1.0, 1e5), 100.0, 8.0)
    assert side == "above"
