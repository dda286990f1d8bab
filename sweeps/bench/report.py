"""The bench figures as the lines ``sweeps bench`` prints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeps.bench.calibrated import format_calibration
from sweeps.bench.cluster import format_cluster
from sweeps.bench.expected import format_expected
from sweeps.bench.figures import format_default_outputs
from sweeps.bench.points import format_points
from sweeps.bench.run_path import format_run_path
from sweeps.bench.seed import format_seed_run
from sweeps.bench.simulated import format_simulated
from sweeps.bench.traces import format_traces


def format_report(report: dict[str, Any]) -> str:
    """The bench figures as lines of text: each line measured (``report["lines"]``)."""
    lines = [f"point: {report['point']}"]
    for key, line in _LINES.items():
        if key in report:
            lines += line(report)
    return "\n".join(lines)


def _engine(report: dict[str, Any]) -> list[str]:
    engine = report["engine"]
    return [
        f"(a) engine: {engine['decode_points']:,} decode + {engine['prefill_points']:,} "
        f"prefill points in {engine['seconds']:.3f} s = "
        f"{engine['points_per_s'] / 1e6:,.1f} M points/s"
    ]


def _scalar(report: dict[str, Any]) -> list[str]:
    scalar = report["scalar"]
    return [
        f"(b) scalar loop: {scalar['sample_points']:,} points in {scalar['seconds']:.3f} s = "
        f"{scalar['points_per_s'] / 1e3:,.1f} k points/s; "
        f"engine is {scalar['engine_speedup']:,.0f}x "
        f"(max relative difference {scalar['max_relative_difference']:.1e})"
    ]


def _limit(report: dict[str, Any]) -> list[str]:
    limit = report["write_limit"]
    return [
        f"(c) write limit for {limit['bytes'] / 2**30:.2f} GiB: "
        f"fill {limit['fill_bytes_per_s'] / 1e9:.2f} "
        f"GB/s, copy {limit['copy_bytes_per_s'] / 1e9:.2f} GB/s; "
        f"engine {limit['engine_bytes_per_s'] / 1e9:.2f} GB/s = "
        f"{limit['engine_percent_of_fill']:.0f} % of fill, "
        f"{limit['engine_percent_of_copy']:.0f} % of copy"
    ]


def _export(report: dict[str, Any]) -> list[str]:
    export = report["export"]
    return [
        f"(d) export: {export['rows']:,} rows in {export['seconds']:.3f} s; "
        f"Polars' write_parquet {export['polars_seconds']:.3f} s; "
        f"ratio {export['ratio']:.2f}x"
    ]


def _end_to_end(report: dict[str, Any]) -> list[str]:
    e2e = report["end_to_end"]
    return [
        f"(e) end to end: {e2e['points']:,} points in {e2e['seconds']:.1f} s "
        f"({e2e['points_per_s'] / 1e6:.1f} M points/s, {e2e['chunks']} chunks, "
        f"{e2e['layout']}), peak RSS {e2e['peak_rss_bytes'] / 1e9:.2f} GB under a budget of "
        f"{e2e['memory_budget_bytes'] / 2**30:.2f} GiB"
    ]


def _run_path(report: dict[str, Any]) -> list[str]:
    return [
        f"(f) {kind.replace('_', ' ')}: {format_run_path(path)}"
        for kind, path in report["run_path"].items()
    ]


def _validate(report: dict[str, Any]) -> list[str]:
    validate = report["validate"]
    return [
        f"(g) validate of a {validate['values']:,}-value range: "
        f"{validate['parse_seconds']:.3f} s in process, "
        f"{validate['command_seconds']:.2f} s as a cold sweeps validate"
    ]


def _pareto(report: dict[str, Any]) -> list[str]:
    pareto = report["pareto"]
    return [
        f"(h) Pareto front: {pareto['points']:,} points in {pareto['groups']} groups in "
        f"{pareto['seconds']:.3f} s ({pareto['points_per_s'] / 1e6:.1f} M points/s, "
        f"{pareto['on_front']:,} on a front); budget {pareto['budget_s']:.2f} s "
        f"{'met' if pareto['within_budget'] else 'MISSED'}"
    ]


_LINES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "engine": _engine,
    "scalar": _scalar,
    "write_limit": _limit,
    "export": _export,
    "end_to_end": _end_to_end,
    "run_path": _run_path,
    "validate": _validate,
    "pareto": _pareto,
    "seed_run": lambda r: [f"(i) {format_seed_run(r['seed_run'])}"],
    "simulated": lambda r: [f"(j) {format_simulated(r['simulated'])}"],
    "calibrated": lambda r: [f"(k) {format_calibration(r['calibrated'])}"],
    "traces": lambda r: [f"(l) {format_traces(r['traces'])}"],
    "expected": lambda r: [f"(m) {format_expected(r['expected'])}"],
    "points": lambda r: [f"(n) {format_points(r['points'])}"],
    "figures": lambda r: [f"(o) {format_default_outputs(r['figures'])}"],
    "cluster": lambda r: [f"(p) {format_cluster(r['cluster'])}"],
}
"""Each measurement's key in the report and the lines it prints, in the bench's order."""
