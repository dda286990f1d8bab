"""``sweeps bench --quick --json`` runs and reports every figure (issue 4). No timing asserts."""

from __future__ import annotations

import json

from click.testing import CliRunner

from sweeps.cli.main import cli


def test_bench_quick_json_reports_every_key():
    result = CliRunner().invoke(cli, ["bench", "--quick", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["quick"] is True
    assert "point" in report
    engine = report["engine"]
    assert engine["decode_points"] > 0
    assert engine["prefill_points"] > 0
    assert engine["points_per_s"] > 0
    scalar = report["scalar"]
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


def test_interleaved_frees_the_previous_result_and_times_without_gc():
    """A call never runs while the previous call's result is held, nor with the collector on."""
    import gc
    import weakref

    from sweeps.bench import _interleaved

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

    best = _interleaved({"build": build, "other": lambda: None}, 3)
    assert alive_during_call == [False, False, False]
    assert collector_on == [False, False, False]
    assert gc.isenabled()
    seconds, last = best["build"]
    assert 0 < seconds < float("inf")
    assert last is not None
    assert previous[-1]() is last  # the last result is returned
