"""``sweeps bench``'s expected-pass line (m) on small grids: its fields and its line. No
timing asserts."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from sweeps.bench.expected import (
    added_bytes,
    fill_seconds,
    format_expected,
    grid_text,
    measure_expected,
    measure_pass,
)
from sweeps.config import parse_config

pytest.importorskip("aiconfigurator_core")


def test_the_grid_has_the_points_it_says() -> None:
    sweep = parse_config(grid_text(3), "<g>")
    assert len(sweep.batch) == len(sweep.context) == 3
    dims = ("model", "hardware", "tp", "batch", "context", "kv_dtype", "weight_dtype", "engine")
    assert sweep.points(dims) == 96 * 9
    assert "engine" not in grid_text(3, engine=False)


def test_the_pass_counts_its_points_and_the_estimators_calls() -> None:
    got = measure_pass(3)
    assert got["points"] == 96 * 9
    assert got["estimator_calls"] > 0  # every shape was new: the estimator was asked
    assert got["new_shapes_s"] > 0
    assert got["known_shapes_s"] > 0
    assert got["new_points_per_s"] == pytest.approx(got["points"] / got["new_shapes_s"])
    # the floor: at least the expected table's step time, 8 bytes a point, written somewhere
    assert got["output_bytes"] >= 8 * got["points"]
    assert got["floor_points_per_s"] == pytest.approx(got["points"] / got["floor_s"])


def test_the_added_bytes_are_the_new_variables_only() -> None:
    ds = xr.Dataset({"a": ("x", np.zeros(3)), "b": ("x", np.zeros(3, dtype=np.int8))})
    assert added_bytes(ds, {"a"}) == 3
    assert added_bytes(ds, set()) == 3 * 8 + 3
    assert added_bytes(ds, {"a", "b"}) == 0


def test_the_fill_floor_grows_with_its_bytes() -> None:
    assert fill_seconds(64 << 20, rounds=2) > fill_seconds(1 << 10, rounds=2)


def test_the_line_says_the_seed_overhead_and_each_grid() -> None:
    result = measure_expected(sides=(2,), rounds=1)
    seed = result["seed"]
    assert seed["with_engine_s"] > 0
    assert seed["without_s"] > 0
    assert seed["overhead_s"] == pytest.approx(seed["with_engine_s"] - seed["without_s"])
    assert seed["within_budget"] == (seed["overhead_s"] < 0.3)
    assert seed["grid_overhead_s"] < seed["with_engine_s"]
    line = format_expected(result)
    assert line.startswith("expected pass: the seed study with an engine takes ")
    assert "384 points: " in line
    assert "target 20 M points/s" in line
    assert "the physical floor, its " in line


def test_without_the_extra_the_line_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sweeps.measured.database.installed", lambda: False)
    result = measure_expected(sides=(2,))
    assert result == {"installed": False}
    assert format_expected(result).endswith("(the measured extra is not installed)")
