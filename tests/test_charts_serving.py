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
from sweeps.charts.workloads import label
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


def _front(points: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    """The keys of ``(key, x, y)`` points that no other point beats in both (a plain loop)."""
    return {
        key
        for key, x, y in points
        if not any(a >= x and b >= y and (a > x or b > y) for _, a, b in points)
    }


def test_the_front_lines_pass_through_the_front_points(ds: xr.Dataset) -> None:
    spec = pareto_chart(ds).to_dict()
    work = Workload.of(ds)
    assert spec["params"][0]["value"] == work.label()  # the images draw the first workload

    def drawn(layer: dict[str, Any], bound: bool) -> set[tuple[Any, ...]]:
        return {
            (r["hardware"], r["mode"], r["tp"], r["batch"])
            for r in rows(spec, layer)
            if r["workload"] == work.label() and (r["mode"] == "bound") == bound
        }

    names = ["tokens_per_s_per_user", "output_tokens_per_s_per_device", "meets_slo"]
    grid = ds[names].sel(work.at).to_dataframe().reset_index()
    grid = grid[grid["meets_slo"]]
    points = {
        bound: [
            ((r.hardware, r.mode, r.tp, r.batch), r.tokens_per_s_per_user,
             r.output_tokens_per_s_per_device)
            for r in grid.itertuples()
            if (r.mode == "bound") == bound
        ]
        for bound in (False, True)
    }  # fmt: skip
    lines = [layer for layer in spec["layer"] if layer["mark"]["type"] == "line"]
    assert drawn(lines[0], False) == _front(points[False])  # the named schedulers' front
    assert drawn(lines[1], True) == _front(points[True])  # the bound's, its own black line
    assert _front(points[False])
    assert _front(points[True])
    assert lines[1]["mark"]["color"] == "#222222"
    dots = [r for r in rows(spec, layer_of(spec, "point")) if r["workload"] == work.label()]
    assert all(r["meets_slo"] and r["mode"] != "bound" for r in dots)
    assert len(dots) == len(points[False])


def test_the_shaded_region_starts_at_one_over_the_tpot_objective(ds: xr.Dataset) -> None:
    spec = pareto_chart(ds).to_dict()
    [region] = rows(spec, layer_of(spec, "rect"))
    assert region["from"] == pytest.approx(1 / 0.04, rel=1e-12)
    assert "TPOT ≤ 40 ms" in " ".join(spec["title"]["subtitle"])
    assert "TTFT ≤ 0.5 s" in " ".join(spec["title"]["subtitle"])


def test_prefill_and_decode_add_up_to_the_request_latency(ds: xr.Dataset) -> None:
    spec = request_time_chart(ds).to_dict()
    data = pl.DataFrame(rows(spec)).filter(pl.col("workload") == Workload.of(ds).label())
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
    default = spec["params"][0]["value"]
    drawn = pl.DataFrame(rows(spec)).filter(pl.col("workload") == default)
    dtype, prompt, output = Workload.of(ds).weight_dtype, 512, 64
    assert default == label(dtype, prompt, output)
    pools = frame(ds, "pools").filter(
        pl.col("feasible"),
        pl.col("weight_dtype").cast(pl.String) == dtype,
        pl.col("prompt_tokens") == prompt,
        pl.col("output_tokens") == output,
    )
    cost = "cost_per_million_output_tokens_usd"
    assert drawn.height == 4  # two modes at two rates
    for r in drawn.iter_rows(named=True):
        apart = pl.col("pool_mode").cast(pl.String) == "disaggregated"
        mine = pools.filter(  # colocated: the best of the named schedulers' one-pool plans
            apart if r["mode"] == "disaggregated" else ~apart,
            pl.col("arrival_rate") == r["arrival_rate"],
        )
        assert r[cost] == pytest.approx(mine[cost].min(), rel=1e-12)
        cheapest = mine.filter(pl.col(cost) <= mine[cost].min() * (1 + 1e-9))
        assert r["devices"] == cheapest["devices"].min()
        assert r["price_as_of"]
    overall = sweeps.cheapest_plans(ds).filter(
        pl.col("weight_dtype").cast(pl.String) == dtype,
        pl.col("prompt_tokens") == prompt,
        pl.col("output_tokens") == output,
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


def test_request_time_greys_what_does_not_fit_and_fades_what_misses(ds: xr.Dataset) -> None:
    spec = request_time_chart(ds).to_dict()
    work = Workload.of(ds)
    data = pl.DataFrame(rows(spec)).filter(pl.col("workload") == work.label())
    counts = {"does not fit": 0, "misses an objective": 0}
    for r in data.filter(pl.col("phase") == "decode").iter_rows(named=True):
        point = {"hardware": r["hardware"], "tp": r["tp"], "mode": r["mode"], "batch": r["batch"]}
        fits = bool(ds["serving_feasible"].sel(work.at).sel(point))
        meets = bool(ds["meets_slo"].sel(work.at).sel(point))
        want = (
            "does not fit"
            if not fits
            else ("meets both objectives" if meets else "misses an objective")
        )
        assert r["status"] == want
        assert r["fill"] == ("does not fit" if not fits else "decode")
        counts[want] = counts.get(want, 0) + 1
    assert sum(counts.values()) > counts["does not fit"]
    total = sum(counts.values())
    caption = " ".join(spec["title"]["subtitle"])
    assert f"do not fit ({counts['does not fit']} of {total} bars)" in caption
    assert f"({counts['misses an objective']} of {total})" in caption
    opacity = spec["spec"]["encoding"]["opacity"]
    assert opacity["scale"]["range"][1] < 1  # a miss is faded, with a legend entry
    assert opacity["legend"]["values"] == ["meets both objectives", "misses an objective"]


def test_every_workload_is_in_the_figure_and_the_html_selects_one(ds: xr.Dataset) -> None:
    expected = {label(w, p, o) for w in ("bf16", "fp8") for p in (512, 4096) for o in (64, 512)}
    for chart in (pareto_chart(ds), request_time_chart(ds), fleet_chart(ds)):
        spec = chart.to_dict()
        [param] = spec["params"]
        assert set(param["bind"]["options"]) == expected
        assert param["value"] in expected
        names = {r["workload"] for name in spec["datasets"] for r in spec["datasets"][name]
                 if "workload" in r}  # fmt: skip
        assert names <= expected
        assert len(names) > 1


def test_the_disaggregation_sentence_counts_where_it_is_cheaper(ds: xr.Dataset) -> None:
    from sweeps.charts.fleet import disaggregation_sentence, fleet_plans

    plans = fleet_plans(ds, Workload.of(ds))
    cost = "cost_per_million_output_tokens_usd"
    pairs: dict[tuple[str, float], dict[str, float]] = {}
    for r in plans.iter_rows(named=True):
        if r[cost] is not None:
            pairs.setdefault((r["workload"], r["arrival_rate"]), {})[r["pool_mode"]] = r[cost]
    both = [p for p in pairs.values() if len(p) == 2]
    wins = sum(p["disaggregated"] < p["colocated"] for p in both)
    text = disaggregation_sentence(plans)
    if wins:
        assert text.startswith(f"Disaggregated is cheaper in {wins} of {len(both)} ")
    else:
        assert text == (
            f"Colocated is never costlier than disaggregated ({len(both)} workload and rate "
            "pairs with both priced)."
        )


def test_the_report_carries_the_cheapest_plans_table(ds: xr.Dataset, tmp_path: Path) -> None:
    write_figures(ds, tmp_path, ["serving"], [])
    page = (tmp_path / "report.html").read_text("utf-8")
    assert '<h2 id="plans">Cheapest serving plans</h2>' in page
    plans = sweeps.cheapest_plans(ds)
    section = page[page.index('id="plans"') :]
    body = section[: section.index("</table>")]
    assert body.count("<tr>") == plans.height + 1  # the header and one row a plan
    assert "cost per M output tokens [USD]" in body


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


def test_request_time_draws_the_named_schedulers_where_neither_phase_mode_is_asked() -> None:
    """``[serving] schedulers = ["chunked-greedy"]`` has no serial-prefill rows: the chart
    draws the scheduler named in its place beside static (it raised a KeyError)."""
    axes = {**AXES, "hardware": ["h100-sxm"], "tp": [1], "weight_dtype": ["bf16"]}
    serving = {**SERVING, "schedulers": ["chunked-greedy"], "chunk_tokens": 512}
    one = sweeps.run({"sweep": {"name": "greedy-only"}, "axes": axes, "serving": serving})
    assert "serial-prefill" not in one["mode"].values
    data = pl.DataFrame(rows(request_time_chart(one).to_dict()))
    assert set(data["mode"]) == {"static", "chunked-greedy"}


def _log_axes(node: Any) -> list[dict[str, Any]]:
    """Every x or y channel of ``node`` on a log scale."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            log = isinstance(value, dict) and value.get("scale", {}).get("type") == "log"
            if key in ("x", "y") and log:
                found.append(value)
            found += _log_axes(value)
    elif isinstance(node, list):
        for value in node:
            found += _log_axes(value)
    return found


@pytest.mark.parametrize("span", [(40.0, 50.0), (3.0, 4.0), (0.087, 39.3), (1.0, 228.0)])
def test_a_log_axis_labels_each_tick_once_on_any_span(span: tuple[float, float]) -> None:
    """On a span inside one decade Vega's own ticks ran "40" and "50" together ("4050" on
    both fleet axes); the axis now names its ticks: at least two, each written once, inside
    the domain, none touching (``thinned``), never "100m" for 0.1."""
    import numpy as np

    from sweeps.charts.ticks import log_axis

    scale, axis = log_axis(np.linspace(*span, 7), 300, 10, True)
    domain, values = scale.to_dict()["domain"], axis.to_dict()["values"]
    assert len(values) >= 2
    assert all(domain[0] <= v <= domain[1] for v in values)
    labels = [f"{v:g}" for v in values]
    assert len(set(labels)) == len(labels)
    assert axis.to_dict()["format"] == "~g"


def test_the_fleet_names_its_log_ticks(ds: xr.Dataset) -> None:
    spec = fleet_chart(ds).to_dict()
    axes = _log_axes(spec)
    assert len(axes) == 4  # rate twice, devices, cost
    for channel in axes:
        values = channel["axis"]["values"]
        assert len(values) >= 2, channel["field"]
        assert values == sorted(set(values))


def test_the_serving_dims_are_read_off_the_declarations() -> None:
    """The dims only the serving study's variables have, written out by hand once here."""
    from sweeps.charts.served import SERVING_DIMS

    by_hand = {
        "prompt_tokens", "output_tokens", "mode", "arrival_rate", "concurrency",
        "prefill_hardware", "prefill_tp", "decode_hardware", "decode_tp", "pool_mode",
    }  # fmt: skip
    assert by_hand == SERVING_DIMS
