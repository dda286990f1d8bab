"""The serving charts: each draws the grid's own numbers (front points, the TPOT bound, the split
of a request's time, the cheapest plans), and a sweep without [serving] draws none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt
import polars as pl
import pytest
import xarray as xr

import sweeps
from sweeps.charts.output import (
    Settings,
    chart_specs,
    serving_figures,
    serving_part,
    slices,
    write_figures,
)
from sweeps.charts.palette import device_colour, device_shape
from sweeps.charts.serving import (
    Workload,
    fleet_chart,
    has_serving,
    pareto_chart,
    request_time_chart,
)
from sweeps.export.parquet import frame

AXES = {
    "model": ["llama-3-8b"],
    "hardware": ["h100-sxm", "h200"],
    "tp": [1, 2],
    "batch": {"start": 1, "stop": 256, "geometric": True},
    "context": [2048],
    "kv_heads": ["native"],
    "kv_dtype": ["bf16"],
    "weight_dtype": ["bf16", "fp8"],
}
SERVING = {
    "prompt_tokens": [512, 4096],
    "output_tokens": [64, 512],
    "arrival_rate": [1.0, 50.0],
    "ttft_slo_s": 0.5,
    "tpot_slo_s": 0.04,
}


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    return sweeps.run({"sweep": {"name": "serving-charts"}, "axes": AXES, "serving": SERVING})


def rows(spec: dict[str, Any], part: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The data rows of ``part`` of ``spec`` (default: the top level)."""
    name = (part or spec)["data"]["name"]
    data: list[dict[str, Any]] = spec["datasets"][name]
    return data


def layer_of(spec: dict[str, Any], mark: str) -> dict[str, Any]:
    [found] = [
        layer
        for layer in spec["layer"]
        if (layer["mark"] if isinstance(layer["mark"], str) else layer["mark"]["type"]) == mark
    ]
    return found


def test_the_objectives_are_in_the_grid(ds: xr.Dataset) -> None:
    assert ds.attrs["ttft_slo_s"] == 0.5
    assert ds.attrs["tpot_slo_s"] == 0.04


def test_the_front_lines_pass_through_the_front_points(ds: xr.Dataset) -> None:
    spec = pareto_chart(ds).to_dict()
    drawn = {
        (r["hardware"], r["mode"], r["tp"], r["batch"]) for r in rows(spec, layer_of(spec, "line"))
    }
    at = Workload.of(ds).at
    front = ds["on_pareto_front"].sel(at).to_dataframe().reset_index()
    expected = {
        (r.hardware, r.mode, r.tp, r.batch) for r in front.itertuples() if r.on_pareto_front
    }
    assert drawn == expected
    assert expected  # the workload has a front to draw
    dots = rows(spec, layer_of(spec, "point"))
    assert all(r["meets_slo"] for r in dots)
    meets = int(ds["meets_slo"].sel(at).sum())
    assert len(dots) == meets


def test_the_shaded_region_starts_at_one_over_the_tpot_objective(ds: xr.Dataset) -> None:
    spec = pareto_chart(ds).to_dict()
    [region] = rows(spec, layer_of(spec, "rect"))
    assert region["from"] == pytest.approx(1 / 0.04, rel=1e-12)
    assert "TPOT ≤ 40 ms" in " ".join(spec["title"]["subtitle"])
    assert "TTFT ≤ 0.5 s" in " ".join(spec["title"]["subtitle"])


def test_prefill_and_decode_add_up_to_the_request_latency(ds: xr.Dataset) -> None:
    spec = request_time_chart(ds).to_dict()
    data = pl.DataFrame(rows(spec))
    assert set(data["phase"]) == {"prefill", "decode"}
    assert set(data["mode"]) == {"static", "serial-prefill"}
    total = data.group_by("hardware", "tp", "mode", "batch").agg(
        pl.col("s").sum(), pl.col("request_latency_s").first()
    )
    at = Workload.of(ds).at
    for r in total.iter_rows(named=True):
        point = {"hardware": r["hardware"], "tp": r["tp"], "mode": r["mode"], "batch": r["batch"]}
        latency = float(ds["request_latency_s"].sel(at).sel(point))
        assert r["s"] == pytest.approx(latency, rel=1e-12)
        assert r["request_latency_s"] == pytest.approx(latency, rel=1e-12)
        ttft = float(ds["serving_ttft_s"].sel(at).sel(point))
        prefill = data.filter(
            *(pl.col(k) == v for k, v in point.items()), pl.col("phase") == "prefill"
        )["s"]
        assert prefill.item() == pytest.approx(ttft, rel=1e-12)


def test_the_fleet_is_the_cheapest_plan_of_each_mode(ds: xr.Dataset) -> None:
    spec = fleet_chart(ds).to_dict()
    drawn = pl.DataFrame(rows(spec))
    pools = frame(ds, "pools").filter(
        pl.col("feasible"),
        pl.col("weight_dtype").cast(pl.String) == Workload.of(ds).weight_dtype,
        pl.col("prompt_tokens") == 512,
        pl.col("output_tokens") == 64,
    )
    cost = "cost_per_million_output_tokens_usd"
    assert drawn.height == 4  # two modes at two rates
    for r in drawn.iter_rows(named=True):
        mine = pools.filter(
            pl.col("pool_mode") == r["mode"], pl.col("arrival_rate") == r["arrival_rate"]
        )
        assert r[cost] == pytest.approx(mine[cost].min(), rel=1e-12)
        cheapest = mine.filter(pl.col(cost) <= mine[cost].min() * (1 + 1e-9))
        assert r["devices"] == cheapest["devices"].min()
        assert r["price_as_of"]
    overall = sweeps.cheapest_plans(ds).filter(
        pl.col("weight_dtype").cast(pl.String) == Workload.of(ds).weight_dtype,
        pl.col("prompt_tokens") == 512,
        pl.col("output_tokens") == 64,
    )
    best = drawn.group_by("arrival_rate").agg(pl.col(cost).min()).sort("arrival_rate")
    assert best[cost].to_list() == pytest.approx(overall.sort("arrival_rate")[cost].to_list())
    assert "prices as of 20" in " ".join(spec["title"]["subtitle"])


def test_streamed_slices_draw_what_the_whole_grid_draws(ds: xr.Dataset) -> None:
    settings = Settings()
    whole = serving_figures([ds], settings)
    streamed = serving_figures([serving_part(one) for one in slices(ds)], settings)
    assert [f.stem for f in whole] == [
        "serving-pareto-llama-3-8b",
        "serving-request-time-llama-3-8b",
        "serving-fleet-llama-3-8b",
        "serving-energy-llama-3-8b",
    ]
    assert [f.spec for f in streamed] == [f.spec for f in whole]


def test_every_serving_chart_is_valid_vega_lite(ds: xr.Dataset) -> None:
    for chart in (pareto_chart(ds), request_time_chart(ds), fleet_chart(ds)):
        chart.to_dict(validate=True)
        assert isinstance(chart, alt.TopLevelMixin)


def test_written_into_the_report_under_serving(ds: xr.Dataset, tmp_path: Path) -> None:
    written = write_figures(ds, tmp_path, ["roofline", "serving"], ["html"])
    assert "charts/serving-fleet-llama-3-8b.html" in written
    page = (tmp_path / "report.html").read_text("utf-8")
    assert page.index("<h2>Roofline</h2>") < page.index("<h2>Serving: speed per user")


def test_a_sweep_without_serving_draws_none() -> None:
    plain = sweeps.run({"sweep": {"name": "no-serving"}, "axes": AXES})
    assert not has_serving(plain)
    kinds = {f.kind for f in chart_specs(plain, ["ceiling", "serving"])}
    assert kinds == {"ceiling"}


def test_serving_may_be_asked_for_in_outputs() -> None:
    text = Path(__file__).parents[1].joinpath("configs", "serving-llama3-70b.toml").read_text()
    assert list(sweeps.parse_config(text).charts) == ["roofline", "serving"]
    with pytest.raises(sweeps.ConfigError, match="serving"):
        sweeps.parse_config(text.replace('"serving"]', '"servings"]'))


def test_the_pareto_dots_are_solid_and_carry_the_devices_colour_and_marker(
    ds: xr.Dataset,
) -> None:
    grid = ds
    spec = pareto_chart(grid).to_dict()
    dots = layer_of(spec, "point")
    assert dots["mark"]["opacity"] >= 0.7
    assert dots["mark"]["filled"] is True
    devices = [str(h) for h in grid["hardware"].values]
    colour, shape = dots["encoding"]["color"]["scale"], dots["encoding"]["shape"]["scale"]
    assert colour["range"] == [device_colour(d) for d in devices]
    assert shape["range"] == [device_shape(d) for d in devices]
