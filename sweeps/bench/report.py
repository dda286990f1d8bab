"""The bench figures as the lines ``sweeps bench`` prints."""

from __future__ import annotations

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
    """The bench figures as lines of text."""
    engine, scalar, limit = report["engine"], report["scalar"], report["write_limit"]
    export, e2e = report["export"], report["end_to_end"]
    validate, pareto = report["validate"], report["pareto"]
    return "\n".join(
        [
            f"point: {report['point']}",
            f"(a) engine: {engine['decode_points']:,} decode + {engine['prefill_points']:,} "
            f"prefill points in {engine['seconds']:.3f} s = "
            f"{engine['points_per_s'] / 1e6:,.1f} M points/s",
            f"(b) scalar loop: {scalar['sample_points']:,} points in {scalar['seconds']:.3f} s = "
            f"{scalar['points_per_s'] / 1e3:,.1f} k points/s; "
            f"engine is {scalar['engine_speedup']:,.0f}x "
            f"(max relative difference {scalar['max_relative_difference']:.1e})",
            f"(c) write limit for {limit['bytes'] / 2**30:.2f} GiB: "
            f"fill {limit['fill_bytes_per_s'] / 1e9:.2f} "
            f"GB/s, copy {limit['copy_bytes_per_s'] / 1e9:.2f} GB/s; "
            f"engine {limit['engine_bytes_per_s'] / 1e9:.2f} GB/s = "
            f"{limit['engine_percent_of_fill']:.0f} % of fill, "
            f"{limit['engine_percent_of_copy']:.0f} % of copy",
            f"(d) export: {export['rows']:,} rows in {export['seconds']:.3f} s; "
            f"Polars' write_parquet {export['polars_seconds']:.3f} s; "
            f"ratio {export['ratio']:.2f}x",
            f"(e) end to end: {e2e['points']:,} points in {e2e['seconds']:.1f} s "
            f"({e2e['points_per_s'] / 1e6:.1f} M points/s, {e2e['chunks']} chunks, "
            f"{e2e['layout']}), peak RSS {e2e['peak_rss_bytes'] / 1e9:.2f} GB under a budget of "
            f"{e2e['memory_budget_bytes'] / 2**30:.2f} GiB",
            *(
                f"(f) {kind.replace('_', ' ')}: {format_run_path(path)}"
                for kind, path in report["run_path"].items()
            ),
            f"(g) validate of a {validate['values']:,}-value range: "
            f"{validate['parse_seconds']:.3f} s in process, "
            f"{validate['command_seconds']:.2f} s as a cold sweeps validate",
            f"(h) Pareto front: {pareto['points']:,} points in {pareto['groups']} groups in "
            f"{pareto['seconds']:.3f} s ({pareto['points_per_s'] / 1e6:.1f} M points/s, "
            f"{pareto['on_front']:,} on a front); budget {pareto['budget_s']:.2f} s "
            f"{'met' if pareto['within_budget'] else 'MISSED'}",
            f"(i) {format_seed_run(report['seed_run'])}",
            f"(j) {format_simulated(report['simulated'])}",
            f"(k) {format_calibration(report['calibrated'])}",
            *((f"(l) {format_traces(report['traces'])}",) if "traces" in report else ()),
            *((f"(m) {format_expected(report['expected'])}",) if "expected" in report else ()),
            *((f"(n) {format_points(report['points'])}",) if "points" in report else ()),
            *((f"(o) {format_default_outputs(report['figures'])}",) if "figures" in report else ()),
            *((f"(p) {format_cluster(report['cluster'])}",) if "cluster" in report else ()),
        ]
    )
