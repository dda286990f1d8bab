"""Figures on any grid the run accepts (issue 46, item 5): a chart over Altair's row limit is
drawn at fewer batches and says so; one that still cannot be drawn is named in the manifest
with a reason a command-line user can act on."""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pytest
import xarray as xr

from sweeps.charts.failures import Figure, failed, why
from sweeps.charts.fitting import within_rows
from sweeps.config import parse_config
from sweeps.pipeline import run_to_folder

from .conftest import CONFIGS


def _grid(batches: int) -> xr.Dataset:
    return xr.Dataset(coords={"batch": np.arange(1, batches + 1)})


def _limited(most: int):  # type: ignore[no-untyped-def]
    def build(ds: xr.Dataset) -> dict:
        rows = ds.sizes["batch"] * 100
        if rows > most:
            msg = f"The number of rows in your dataset ({rows}) is greater than the maximum"
            raise alt.MaxRowsError(msg)
        return {"title": {"text": "t", "subtitle": ["one"]}, "batches": ds["batch"].values.tolist()}

    return build


def test_a_chart_in_the_limit_is_built_as_it_is():
    spec = within_rows(_limited(5000), _grid(40))
    assert spec["title"]["subtitle"] == ["one"]
    assert len(spec["batches"]) == 40


def test_a_chart_over_the_limit_is_drawn_at_fewer_batches_and_says_so():
    spec = within_rows(_limited(5000), _grid(128))
    kept = spec["batches"]
    assert 2 <= len(kept) <= 50
    assert kept[0] == 1
    assert kept[-1] == 128
    assert spec["title"]["subtitle"] == [
        "one",
        f"Drawn at {len(kept)} of 128 batches (log-spaced).",
    ]


def test_a_chart_that_cannot_fit_fails_with_advice_not_altairs():
    with pytest.raises(alt.MaxRowsError) as caught:
        within_rows(_limited(100), _grid(64))
    reason = why(caught.value)
    assert "VegaFusion" not in reason
    assert "fewer values on the config's other axes" in reason
    assert "200 rows" in reason  # the last try: two batches
    figure = failed(Figure("serving-pareto-x", "serving", "x", None, None), caught.value)
    assert figure.reason.startswith("chart serving-pareto-x failed: too many points")


def test_other_errors_are_not_retried():
    def broken(ds: xr.Dataset) -> dict:
        msg = "batch"
        raise KeyError(msg)

    with pytest.raises(KeyError):
        within_rows(broken, _grid(8))


def test_the_serving_example_at_batch_step_8_draws_every_figure(tmp_path):
    """The acceptance: the shipped serving example with a batch step of 8 (the Pareto chart
    had 5,128 rows, the request-time chart 36,864) draws all its figures."""
    from sweeps.charts.hooks import output_hooks

    text = (CONFIGS / "serving-llama3-70b.toml").read_text("utf-8")
    text = text.replace(
        "batch = { start = 1, stop = 1024, geometric = true }",
        "batch = { start = 8, stop = 1024, step = 8 }",
    )
    sweep = parse_config(text, "s8.toml")
    result = run_to_folder(sweep, tmp_path, hooks=output_hooks(sweep))
    manifest = json.loads((result.folder / "manifest.json").read_text("utf-8"))
    assert manifest["figures_not_drawn"] == []
    charts = result.folder / "charts"
    for name in ("pareto", "request-time", "energy", "fleet"):
        assert (charts / f"serving-{name}-llama-3.1-70b.html").exists()
    caption = (charts / "serving-request-time-llama-3.1-70b.txt").read_text("utf-8")
    assert "of 128 batches (log-spaced)" in caption
