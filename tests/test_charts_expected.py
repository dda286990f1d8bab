"""The expected-against-the-bound figures (``sweeps.charts.expected``, issue 43 item 7): the
share of the roofline the measured kernels reach, and where the step goes at batch 1, the knee
and the wall; drawn with an engine, never without one.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.charts import output_hooks
from sweeps.charts.expected import (
    KERNELS,
    NO_DATA,
    ROOFLINE_SHARE,
    SHARE_TITLE,
    kernels_chart,
    regime_batches,
    regimes,
    share_chart,
)
from sweeps.charts.spec import spec_of
from sweeps.charts.theme import DOES_NOT_FIT
from sweeps.grid import build_grid
from sweeps.outputs import default_charts
from sweeps.pipeline import run_to_folder
from sweeps.pipeline.mapping import sweep_from_mapping

pytest.importorskip("aiconfigurator_core")

MODEL = "llama-3.1-8b"
AXES = {
    "model": [MODEL],
    "hardware": ["h100-sxm", "mi300x"],
    "batch": [1, 8, 64, 256],
    "context": [1024, 8192],
}
ENGINES = ["vllm", "trtllm"]
NAMES = (ROOFLINE_SHARE.name, KERNELS.name)


@pytest.fixture(scope="module")
def grid() -> xr.Dataset:
    """Two engines on a device the database holds and on one it does not (MI300X)."""
    return build_grid(
        sweep_from_mapping({"sweep": {"name": "e"}, "axes": {**AXES, "engine": ENGINES}})
    )


def _rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    (rows,) = spec["datasets"].values()
    return list(rows)


def _subtitle(spec: dict[str, Any]) -> str:
    return " ".join(spec["title"]["subtitle"])


def test_the_share_heatmap_draws_the_grids_roofline_share_per_engine(grid: xr.Dataset) -> None:
    spec = spec_of(share_chart(grid, MODEL, "h100-sxm"), "screen")
    assert spec["facet"]["column"]["field"] == "engine"
    colour = spec["spec"]["layer"][0]["encoding"]["color"]
    assert colour["field"] == "roofline_share"
    assert colour["title"] == SHARE_TITLE
    assert "[%]" in SHARE_TITLE
    assert colour["legend"]["format"] == ".0%"
    rows = _rows(spec)
    assert len(rows) == 4 * 2 * 2  # batch x context x engine
    at = grid.sel(model=MODEL, hardware="h100-sxm").squeeze(drop=True)
    for row in rows:
        point = at.sel(batch=row["batch"], context=row["context"], engine=row["engine"])
        assert row["feasible"] == bool(point["feasible"])
        if row["feasible"]:
            assert row["roofline_share"] == float(point["roofline_share"])  # the grid's, exact
            assert row["status"] != DOES_NOT_FIT
        else:
            assert row["status"] == DOES_NOT_FIT
    assert "the measured kernels reach vllm" in _subtitle(spec)


def test_a_device_without_data_is_pale_and_says_why(grid: xr.Dataset) -> None:
    spec = spec_of(share_chart(grid, MODEL, "mi300x"), "screen")
    fits = [r for r in _rows(spec) if r["feasible"]]
    assert fits
    assert {r["status"] for r in fits} == {NO_DATA}
    assert all(r["roofline_share"] is None for r in fits)
    assert "device 'mi300x' not in the database" in _subtitle(spec)


def test_the_share_heatmap_is_thinned_on_a_big_grid(grid: xr.Dataset) -> None:
    spec = spec_of(share_chart(grid, MODEL, "h100-sxm", max_cells=8), "screen")
    assert len(_rows(spec)) < 16
    assert "Thinned to" in _subtitle(spec)


def test_the_breakdown_stacks_each_operation_beside_its_bound(grid: xr.Dataset) -> None:
    spec = spec_of(kernels_chart(grid, MODEL, "h100-sxm"), "screen")
    assert spec["facet"]["column"]["field"] == "engine"
    assert spec["facet"]["row"]["field"] == "context"
    encoding = spec["spec"]["encoding"]
    assert encoding["x"]["aggregate"] == "sum"
    assert "[ms]" in encoding["x"]["title"]
    assert encoding["yOffset"]["field"] == "time"
    assert encoding["y"]["sort"] == ["batch 1", "knee", "wall"] == list(regimes(grid))
    # a dense model at tp 1: no router, experts or all-reduce, each other operation its colour
    shown = ["embedding", "qkv", "attention", "o_proj", "ffn_up", "ffn_down", "lm_head"]
    assert encoding["color"]["scale"]["domain"] == shown
    assert len(set(encoding["color"]["scale"]["range"])) == len(shown)
    at = grid.sel(model=MODEL, hardware="h100-sxm").squeeze(drop=True)
    rows = _rows(spec)
    assert {r["regime"] for r in rows} == set(regimes(grid))
    for row in rows:
        point = at.sel(
            batch=row["batch"],
            context=row["context"],
            engine=row["engine"],
            operation=row["operation"],
        )
        name = "kernel_expected_s" if row["time"] == "expected" else "kernel_bound_s"
        assert row["ms"] == pytest.approx(float(point[name]) * 1e3, rel=1e-12)
        assert bool(point["feasible"])
    first = [r for r in rows if r["regime"] == "batch 1"]
    assert {r["batch"] for r in first} == {1}
    assert "the GEMMs reach" in _subtitle(spec)


def test_the_breakdown_names_the_grids_first_batch(grid: xr.Dataset) -> None:
    """A grid without batch 1 draws its first batch, named as such (never called batch 1)."""
    spec = spec_of(kernels_chart(grid.isel(batch=slice(1, None)), MODEL, "h100-sxm"), "screen")
    assert spec["spec"]["encoding"]["y"]["sort"] == ["batch 8", "knee", "wall"]
    assert "at batch 8 and" in _subtitle(spec)


def test_the_breakdown_of_a_device_without_data_says_why(grid: xr.Dataset) -> None:
    spec = spec_of(kernels_chart(grid, MODEL, "mi300x"), "screen")
    assert "device 'mi300x' not in the database" in _subtitle(spec)


def _plain_regimes(batch: np.ndarray, fits: np.ndarray, knee: np.ndarray) -> np.ndarray:
    """The regimes' batch indices by a plain loop over each context."""
    out = np.full((fits.shape[1], 3), -1)
    for c in range(fits.shape[1]):
        fitting = [b for b in range(len(batch)) if fits[b, c]]
        if not fitting:
            continue
        target = np.log(max(knee[c], 1.0))
        nearest = min(fitting, key=lambda b: (abs(np.log(batch[b]) - target), b))
        out[c] = (0, nearest, max(fitting))
    return out


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 4096), min_size=1, max_size=8, unique=True),
    st.lists(st.tuples(st.integers(0, 4096), st.floats(0.1, 5000)), min_size=1, max_size=4),
)
def test_the_regimes_batches_match_a_plain_loop(
    batches: list[int], walls: list[tuple[int, float]]
) -> None:
    batch = np.array(sorted(batches))
    wall = np.array([w for w, _ in walls])
    knee = np.array([k for _, k in walls])
    fits = batch[:, None] <= wall[None, :]
    ds = xr.Dataset(
        {
            "feasible": (("batch", "context"), fits),
            "knee_batch": (("context",), knee),
        },
        coords={"batch": batch, "context": np.arange(len(walls))},
    )
    np.testing.assert_array_equal(regime_batches(ds), _plain_regimes(batch, fits, knee))


def _run(tmp_path: Path, axes: dict[str, Any]) -> Path:
    config = {"sweep": {"name": "expected-figures"}, "axes": axes}
    config["outputs"] = {"formats": ["html"], "grid": "none"}
    sweep = sweep_from_mapping(config)
    assert set(NAMES) <= set(sweep.charts)  # in the default list: drawn where there is an engine
    return run_to_folder(sweep, tmp_path, hooks=output_hooks(sweep)).folder


def test_a_run_with_an_engine_writes_the_figures_and_the_section(tmp_path: Path) -> None:
    axes = {**AXES, "hardware": ["h100-sxm"], "engine": ["vllm"]}
    folder = _run(tmp_path, axes)
    report = (folder / "report.html").read_text("utf-8")
    for kind in (ROOFLINE_SHARE, KERNELS):
        stem = f"charts/{kind.name}-{MODEL}-h100-sxm"
        assert (folder / f"{stem}.html").is_file()
        assert "roofline" in (folder / f"{stem}.txt").read_text("utf-8")  # its caption
        assert f'id="section-{kind.name}"' in report
        assert kind.title in report
    assert "Expected against the bound" in report


def test_a_run_without_an_engine_draws_none_of_them(tmp_path: Path) -> None:
    assert set(NAMES) <= set(default_charts())
    folder = _run(tmp_path, {**AXES, "hardware": ["h100-sxm"]})
    drawn = [p.name for p in (folder / "charts").iterdir()]
    assert drawn  # the other figures are drawn
    assert not [n for n in drawn if n.startswith(NAMES)]
    report = (folder / "report.html").read_text("utf-8")
    assert "Expected against the bound" not in report
    assert not any(f'id="section-{name}"' in report for name in NAMES)
