"""The lines ``sweeps bench`` prints of (a) to (h), from each line's figures; the other lines'
formatters, beside their measurements, are imported here so that the bench's table of lines
(``sweeps.bench.lines``) finds every formatter in one place."""

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


def format_engine(engine: dict[str, Any]) -> str:
    """(a): the engine's points/s."""
    return (
        f"engine: {engine['decode_points']:,} decode + {engine['prefill_points']:,} "
        f"prefill points in {engine['seconds']:.3f} s = "
        f"{engine['points_per_s'] / 1e6:,.1f} M points/s"
    )


def format_scalar(scalar: dict[str, Any]) -> str:
    """(b): the scalar loop against the engine."""
    return (
        f"scalar loop: {scalar['sample_points']:,} points in {scalar['seconds']:.3f} s = "
        f"{scalar['points_per_s'] / 1e3:,.1f} k points/s; "
        f"engine is {scalar['engine_speedup']:,.0f}x "
        f"(max relative difference {scalar['max_relative_difference']:.1e})"
    )


def format_write_limit(limit: dict[str, Any]) -> str:
    """(c): the machine's write limit and the engine's share of it."""
    return (
        f"write limit for {limit['bytes'] / 2**30:.2f} GiB: "
        f"fill {limit['fill_bytes_per_s'] / 1e9:.2f} "
        f"GB/s, copy {limit['copy_bytes_per_s'] / 1e9:.2f} GB/s; "
        f"engine {limit['engine_bytes_per_s'] / 1e9:.2f} GB/s = "
        f"{limit['engine_percent_of_fill']:.0f} % of fill, "
        f"{limit['engine_percent_of_copy']:.0f} % of copy"
    )


def format_export(export: dict[str, Any]) -> str:
    """(d): the export against Polars' writer."""
    return (
        f"export: {export['rows']:,} rows in {export['seconds']:.3f} s; "
        f"Polars' write_parquet {export['polars_seconds']:.3f} s; "
        f"ratio {export['ratio']:.2f}x"
    )


def format_end_to_end(e2e: dict[str, Any]) -> str:
    """(e): the streamed end-to-end run."""
    return (
        f"end to end: {e2e['points']:,} points in {e2e['seconds']:.1f} s "
        f"({e2e['points_per_s'] / 1e6:.1f} M points/s, {e2e['chunks']} chunks, "
        f"{e2e['layout']}), peak RSS {e2e['peak_rss_bytes'] / 1e9:.2f} GB under a budget of "
        f"{e2e['memory_budget_bytes'] / 2**30:.2f} GiB"
    )


def format_run_paths(figures: dict[str, Any]) -> list[str]:
    """(f): a line for each grid's run path."""
    return [f"{kind.replace('_', ' ')}: {format_run_path(path)}" for kind, path in figures.items()]


def format_validate(validate: dict[str, Any]) -> str:
    """(g): validating a long range."""
    return (
        f"validate of a {validate['values']:,}-value range: "
        f"{validate['parse_seconds']:.3f} s in process, "
        f"{validate['command_seconds']:.2f} s as a cold sweeps validate"
    )


def format_pareto(pareto: dict[str, Any]) -> str:
    """(h): the Pareto front against its budget."""
    return (
        f"Pareto front: {pareto['points']:,} points in {pareto['groups']} groups in "
        f"{pareto['seconds']:.3f} s ({pareto['points_per_s'] / 1e6:.1f} M points/s, "
        f"{pareto['on_front']:,} on a front); budget {pareto['budget_s']:.2f} s "
        f"{'met' if pareto['within_budget'] else 'MISSED'}"
    )


__all__ = [
    "format_calibration",
    "format_cluster",
    "format_default_outputs",
    "format_end_to_end",
    "format_engine",
    "format_expected",
    "format_export",
    "format_pareto",
    "format_points",
    "format_run_paths",
    "format_scalar",
    "format_seed_run",
    "format_simulated",
    "format_traces",
    "format_validate",
    "format_write_limit",
]
