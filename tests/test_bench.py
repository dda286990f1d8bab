"""``sweeps bench``: every figure is reported, the scalar loop is the grid's own terms on floats,
and its check against the grid can fail. No timing asserts."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from sweeps.axes import AXES
from sweeps.bench import LINES, chosen, format_report, run_bench
from sweeps.bench.scalar import (
    CHECKED,
    ScalarEngine,
    _worst,
    check,
    sample,
    scalar_loop,
)
from sweeps.bench.timing import interleaved
from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.engine.base import LABELS
from sweeps.grid import ANALYSES, REGISTRY, TABLES, build_grid
from sweeps.grid.analyses import active_dims, applicable, tables

# MoE, sliding windows, a tp that does not divide the heads, a GQA override, int4 weights and a
# prompt axis of its own; then MLA (native heads only): every branch of the wiring.
VARIED = """
[sweep]
name = "bench-varied"
[axes]
model = ["mixtral-8x7b", "gemma-2-9b", "gpt-oss-20b"]
hardware = ["h100-sxm", "l4"]
tp = [1, 3]
batch = [1, 7, 64]
context = [512, 8192]
prompt = [128, 4096]
kv_heads = ["native", 1]
kv_dtype = ["bf16", "fp8"]
weight_dtype = ["bf16", "int4"]
[outputs]
charts = []
"""
MLA = VARIED.replace('"gpt-oss-20b"]', '"deepseek-v3"]').replace('["native", 1]', '["native"]')


@pytest.fixture(scope="module", params=[VARIED, MLA], ids=["gqa", "mla"])
def varied(request):  # type: ignore[no-untyped-def]
    sweep = parse_config(request.param, "<varied>")
    active = active_dims(sweep)
    sizes = [range(axis.size(sweep) if axis.dim in active else 1) for axis in AXES]
    points = list(itertools.product(*sizes))
    return sweep, build_grid(sweep), points, scalar_loop(sweep, points)


QUICK_LINES = "abcdefghilnop"
"""The lines the quick bench's test measures: (j), (k) and (m) have tests of their own
(test_bench_simulated, test_bench_calibrated, test_bench_expected) and take a third of the
quick bench."""


def test_bench_quick_json_reports_every_key():
    result = CliRunner().invoke(cli, ["bench", "--quick", "--json", "--only", QUICK_LINES])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["quick"] is True
    assert report["lines"] == QUICK_LINES
    assert not {"simulated", "calibrated", "expected"} & set(report)
    assert "point" in report
    engine = report["engine"]
    assert engine["decode_points"] > 0
    assert engine["prefill_points"] > 0
    assert engine["points_per_s"] > 0
    scalar = report["scalar"]
    assert scalar["sample_points"] == 2 * 500  # one decode and one prefill cell per sample
    assert scalar["engine_speedup"] > 0
    assert scalar["max_relative_difference"] < 1e-12  # the loop computes the same numbers
    limit = report["write_limit"]
    for key in ("bytes", "fill_bytes_per_s", "copy_bytes_per_s", "engine_percent_of_fill"):
        assert limit[key] > 0
    assert report["export"]["ratio"] > 0
    e2e = report["end_to_end"]
    assert e2e["layout"] == "single"  # the config's (auto: this small grid is one file)
    assert e2e["chunks"] > 1  # streamed all the same
    assert e2e["peak_rss_bytes"] > 0
    assert e2e["rows"]["decode"] + e2e["rows"]["prefill"] == e2e["points"]
    paths = report["run_path"]
    assert paths["in_memory"]["chunks"] == 1
    assert paths["streamed"]["chunks"] > 1
    for path in paths.values():
        assert path["ratio"] > 0
        assert path["polars_s"]["total"] > 0
        assert set(path["polars_s"]) >= {"decode", "prefill"}
        assert len(path["load"]) == 2  # the machine's load beside the figures
    assert "grid.zarr" in paths["in_memory"]["polars_s"]  # xarray's own write of the grid file
    assert {"grid", "table_decode", "grid_file", "figures"} <= set(paths["in_memory"]["split_s"])
    assert "grid.zarr" in paths["in_memory"]["bytes"]
    assert paths["streamed"]["rows"] == e2e["rows"]
    validate = report["validate"]
    assert validate["values"] == 10_000
    assert 0 < validate["parse_seconds"] < validate["command_seconds"]
    pareto = report["pareto"]
    assert pareto["points"] == 100_000
    assert 0 < pareto["on_front"] < pareto["points"]
    assert pareto["budget_s"] == pytest.approx(0.1, rel=1e-12)
    seed = report["seed_run"]
    assert seed["config"] == "configs/seed-llama3-8b-h100.toml"
    assert set(seed["phases_s"]) == {"import", "grid", "export", "figures", "outputs"}
    assert all(seconds > 0 for seconds in seed["phases_s"].values())
    assert len(seed["figures_warm_s"]) == 1  # quick: drawn once warm
    assert all(0 < seconds < 60 for seconds in seed["figures_warm_s"])
    assert seed["rows"]["decode"] == 2 * 9  # batch 1, 2, 4 ... 256 at two contexts
    assert any(name.endswith(".png") for name in seed["bytes"])  # the config's own formats
    traces = report["traces"]
    assert traces["requests"] == 10_000
    assert traces["blocks"] > traces["requests"]
    points = report["points"]
    assert points["points"] == 1_000
    assert points["pairs"] == 20
    assert points["loop_cpu_s"] > 0
    assert points["points_s"] > 0
    assert points["budget_s"] == pytest.approx(0.5, rel=1e-12)
    figures = report["figures"]
    assert figures["pairs"] == 27  # just past PAIRS_DRAWN: the figures across the pairs
    assert figures["points"] > 0
    assert figures["chart_files"] > 0
    assert figures["ratio"] == pytest.approx(figures["default_s"] / figures["no_charts_s"])
    assert figures["budget"] == pytest.approx(1.5, rel=1e-12)
    cluster = report["cluster"]  # the dask extra is installed here
    assert cluster["rows"] == 2 * 8 * 4 * 64 * 4 * 4
    assert cluster["speedup"] == pytest.approx(cluster["one_s"] / cluster["workers_s"])
    assert cluster["bound"] == pytest.approx(2 * cluster["one_cpu_s"] / cluster["workers_cpu_s"])
    assert cluster["workers_cpu_s"] > 0
    text = format_report(report)
    for line in (
        f"(p) two local workers: a cold tables-only run of {cluster['rows']:,} rows in a "
        "1 GiB budget in ",
        "(n) points: 1,000 single sweeps.point calls (20 model-device pairs) in ",
        f"(o) default outputs: a cold run of {figures['points']:,} points (27 model-device pairs)",
        "(l) traces: 10,000 generated requests read in ",
        "(g) validate of a 10,000-value range",
        "(h) Pareto front: 100,000 points",
        "(i) cold seed run (configs/seed-llama3-8b-h100.toml, default outputs)",
        "; figures once warm ",
    ):
        assert line in text


def test_scalar_loop_equals_the_grid_at_every_point(varied):  # type: ignore[no-untyped-def]
    _, ds, points, values = varied
    assert len(points) == 3 * 2 * 2 * 3 * 2 * 2 * len(ds.kv_heads) * 2 * 2
    assert check(ds, points, values) < 1e-12


def test_check_compares_every_declared_variable(varied):  # type: ignore[no-untyped-def]
    """CHECKED is every pointwise analysis's declaration, so every table column computed by
    one (and every low-rank variable) is compared; the whole analyses need the whole grid."""
    declared = tuple(
        v.name for a in ANALYSES if not a.whole for v in a.variables if v.dtype not in LABELS
    )
    reduced = {v.name for a in ANALYSES for v in a.variables if v.reduces}
    assert reduced == {"break_even_batch"}  # over the batch axis: one point does not define it
    assert tuple(name for name in declared if name not in reduced) == CHECKED
    numbers = {
        c for t in TABLES if not t.whole for c in t.columns if REGISTRY[c].dtype not in LABELS
    }
    assert numbers - reduced <= set(CHECKED)
    sweep, ds, points, values = varied
    assert [t.name for t in tables(sweep)] == ["decode", "prefill"]  # no [serving] table
    for name in ("ridge_batch", "prefill_feasible", "tokens_per_s", "experts_touched"):
        broken = [dict(row) for row in values]
        broken[5][name] = float(broken[5][name]) * 1.5 + 1.0  # NaN stays NaN: +1 after it
        if np.isnan(float(broken[5][name])):
            broken[5][name] = 1.0
        assert check(ds, points, broken) > 1e-3, name


def test_scalar_loop_runs_on_a_serving_sweep():
    """A [serving] sweep's scalar loop runs its pointwise analyses (it crashed on the serving
    analysis, which reduces over the batch axis) and still equals the grid."""
    text = (
        VARIED.replace('["mixtral-8x7b", "gemma-2-9b", "gpt-oss-20b"]', '["llama-3-8b"]')
        + "[serving]\nprompt_tokens = [512]\noutput_tokens = [64]\narrival_rate = [2.0]\n"
    )
    sweep = parse_config(text, "<served>")
    assert "serving" in [t.name for t in tables(sweep)]
    points = sample(sweep, 40)
    values = scalar_loop(sweep, points)
    assert check(build_grid(sweep), points, values) < 1e-12
    assert "serving_ttft_s" not in values[0]


def test_scalar_results_are_scalars(varied):  # type: ignore[no-untyped-def]
    sweep, _, _, values = varied
    computed = [v.name for a in applicable(sweep) for v in a.variables if v.dtype not in LABELS]
    assert computed
    assert all(np.ndim(values[0][name]) == 0 for name in computed)


def test_scalar_engine_roofline_by_hand():
    """AI 10 FLOP/byte against a ridge of 100 (peak 1e15 FLOP/s, 1e13 byte/s): memory-bound,
    attainable 1e14 FLOP/s, 1e12 FLOP over 1e11 byte takes max(1e-3, 1e-2) = 1e-2 s."""
    roof = ScalarEngine().roofline(
        (), with_tokens=True, flops=1e12, nbytes=1e11, ai=10.0, batch=8, max_batch=7.0,
        peak=1e15, bandwidth=1e13, ridge=100.0, peak_flops=2e15,
    )  # fmt: skip
    assert roof["bottleneck"] == 0
    assert roof["attainable_flops"] == pytest.approx(1e14, rel=1e-15)
    assert roof["utilization"] == pytest.approx(0.05, rel=1e-15)
    assert roof["time"] == pytest.approx(1e-2, rel=1e-15)
    assert roof["tokens_per_s"] == pytest.approx(800.0, rel=1e-15)
    assert roof["feasible"] is False
    assert "tokens_per_s" not in ScalarEngine().roofline(
        (), with_tokens=False, flops=1e12, nbytes=1e11, ai=10.0, batch=8, max_batch=7.0,
        peak=1e15, bandwidth=1e13, ridge=100.0, peak_flops=2e15,
    )  # fmt: skip
    assert ScalarEngine().pointwise(divmod, ("batch",), 7, 2) == (3, 1)


def test_sample_draws_one_index_per_axis(varied):  # type: ignore[no-untyped-def]
    sweep = varied[0]
    points = sample(sweep, 400)
    assert points == sample(sweep, 400)  # seeded
    active = active_dims(sweep)
    for position, axis in enumerate(AXES):
        drawn = {index[position] for index in points}
        size = axis.size(sweep) if axis.dim in active else 1  # an axis no analysis uses: 0
        assert drawn == set(range(size)), axis.dim


def test_worst_counts_equal_infinities_and_nans_as_agreement():
    inf, nan = float("inf"), float("nan")
    assert _worst(np.array([inf, nan, 2.0]), np.array([inf, nan, 2.0])) == 0.0
    assert _worst(np.array([2.0]), np.array([2.5])) == pytest.approx(0.25, rel=1e-15)
    assert _worst(np.array([nan]), np.array([1.0])) == inf
    assert _worst(np.array([1.0]), np.array([inf])) == inf


def test_interleaved_frees_the_previous_result_and_times_without_gc():
    """A call never runs while the previous call's result is held, nor with the collector on."""
    import gc
    import weakref

    class Grid:
        pass

    alive_during_call: list[bool] = []
    collector_on: list[bool] = []
    previous: list[weakref.ref[Grid]] = []

    def build() -> Grid:
        alive_during_call.append(bool(previous) and previous[-1]() is not None)
        collector_on.append(gc.isenabled())
        grid = Grid()
        previous.append(weakref.ref(grid))
        return grid

    best = interleaved({"build": build, "other": lambda: None}, 3)
    assert alive_during_call == [False, False, False]
    assert collector_on == [False, False, False]
    assert gc.isenabled()
    seconds, last = best["build"]
    assert 0 < seconds < float("inf")
    assert last is not None
    assert previous[-1]() is last  # the last result is returned


def test_validate_line_measures_the_library_and_the_cold_command() -> None:
    from sweeps.bench.validate import measure_validate

    figures = measure_validate(values=1000)
    assert figures["values"] == 1000
    assert 0 < figures["parse_seconds"] < figures["command_seconds"]


def test_run_path_spread_keeps_the_first_run_and_every_ratio(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``measure_spread``: the first run's figures as they were measured, then every run's
    ratio, their median and how many met the target; one run has no spread."""
    from sweeps.bench import run_path

    ratios = iter([1.4, 1.2, 1.3, 1.25])
    calls: list[object] = []

    def measured(config: object, memory_budget: object = None) -> dict[str, object]:
        calls.append((config, memory_budget))
        ratio = next(ratios)
        return {
            "run_s": 10.0 * ratio, "ratio": ratio, "rows": {"decode": 4, "prefill": 4},
            "split_s": {"import_and_startup": 0.8, "grid_and_tables": 9.0},
            "polars_s": {"decode": 5.0, "prefill": 3.0, "grid.zarr": 2.0, "total": 10.0},
            "layout": "single", "chunks": 1, "load": [0.1, 0.2],
        }  # fmt: skip

    monkeypatch.setattr(run_path, "measure_run_path", measured)
    spread = run_path.measure_spread("run.toml", 3, 7)
    assert calls == [("run.toml", 7)] * 3
    assert spread["ratio"] == 1.4
    assert spread["run_s"] == 14.0
    assert spread["spread"] == {"ratios": [1.4, 1.2, 1.3], "median": 1.3, "met": 2}
    line = run_path.format_run_path(spread)
    assert "= 1.40x" in line
    assert "target 1.3x missed" in line
    assert line.endswith("; 3 cold runs: 1.40x, 1.20x, 1.30x (median 1.30x, within 1.3x in 2 of 3)")
    one = run_path.measure_spread("run.toml", 1)
    assert "spread" not in one
    assert one["ratio"] == 1.25
    assert "cold runs" not in run_path.format_run_path(one)


def test_bench_runs_must_be_at_least_one() -> None:
    result = CliRunner().invoke(cli, ["bench", "--runs", "0"])
    assert result.exit_code == 2
    assert "Invalid value for '--runs': 0 is not in the range 1<=x<=100." in result.output


def test_each_timed_process_starts_with_earlier_writes_on_disk(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``_python`` flushes what earlier processes wrote before it starts its clock, so a run
    never pays for the write-back of the one before (or of the reference's writes)."""
    import os
    import subprocess

    from sweeps.bench import run_path

    events: list[str] = []
    monkeypatch.setattr(os, "sync", lambda: events.append("sync"))
    real_run = subprocess.run

    def run(*args, **kwargs):  # type: ignore[no-untyped-def]
        events.append("process")
        return real_run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)
    seconds, printed = run_path._python(["-c", "print('done')"])
    assert printed == "done\n"
    assert events == ["sync", "process"]
    assert seconds > 0


def test_points_line_times_the_loop_and_the_batch() -> None:
    # a short loop: every point answered, each pair resolved within the time (the store is
    # emptied first), the budget scaled to the points and the line naming it
    from sweeps.bench.points import format_points, measure_points
    from sweeps.pipeline import points as store

    result = measure_points(points=40)
    assert result["points"] == 40
    assert 1 < result["pairs"] <= 20
    assert result["loop_s"] > 0
    assert result["points_s"] > 0
    assert result["per_point_s"] == pytest.approx(result["loop_s"] / 40, rel=1e-12)
    assert result["budget_s"] == pytest.approx(0.5 * 40 / 1000, rel=1e-12)
    assert result["within_budget"] == (result["loop_s"] <= result["budget_s"])
    assert len(store._RESOLVED) == result["pairs"]
    line = format_points(result)
    assert line.startswith("points: 40 single sweeps.point calls (")
    assert f"budget {result['budget_s']:.2f} s " in line


def test_the_cluster_line_says_when_it_was_skipped() -> None:
    from sweeps.bench.cluster import format_cluster, grid_text

    assert format_cluster(None).startswith("two local workers: skipped (no dask extra")
    full = parse_config(grid_text(False))
    assert len(full.models) * len(full.hardware) * len(full.batch) * len(full.context) == (
        8 * 4 * 1024 * 36
    )


def test_only_picks_lines_by_letter_and_names_an_unknown_one() -> None:
    assert chosen(None) == frozenset(LINES)
    assert chosen("e, F,m") == {"e", "f", "m"}
    with pytest.raises(ValueError, match=r"no line x, z in the bench; one or more of abcd"):
        chosen("exz")
    with pytest.raises(ValueError, match="no line named"):
        chosen(" ,")


def test_only_in_the_command_is_checked_before_anything_is_measured() -> None:
    result = CliRunner().invoke(cli, ["bench", "--only", "q"])
    assert result.exit_code == 2
    assert "Invalid value for '--only': only = 'q': no line q in the bench" in result.output
    assert "measuring" not in result.output


def test_a_report_of_some_lines_prints_those_lines_alone() -> None:
    report = run_bench(quick=True, only="gh")
    assert report["lines"] == "gh"
    text = format_report(report).splitlines()
    assert [line[:3] for line in text[1:]] == ["(g)", "(h)"]
