"""Terminal rendering with rich: the summary, the catalog, validation and classification.

Presentation only: every number comes from the library (the summary frame, catalog records).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from sweeps.axes import AXIS
from sweeps.config import Sweep
from sweeps.grid import DECODE_DIMS
from sweeps.pipeline.plan import Plan


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _batch(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


AXES = tuple((dim, AXIS[dim].title) for dim in DECODE_DIMS if dim != "batch")
"""The summary's configuration columns and their titles (a configuration is all but the batch)."""


SUMMARY_ROWS = 40
"""Configurations a terminal summary shows at most; a sweep has thousands."""


def print_summary(
    console: Any, sweep: Sweep, frame: Any, decode_table: str = "decode.parquet"
) -> None:
    """The per-configuration summary of a run (``RunResult.summary()``) as a table.

    Axes with a single value move to the caption, so the table shows what varies. A sweep of
    more than ``SUMMARY_ROWS`` configurations shows its first ones and says where the rest are:
    ``decode_table``, the decode file or, for a streamed result, its ``decode/`` dataset.
    """
    from rich.table import Table

    fraction = sweep.options.ceiling_fraction
    varying = [(c, h) for c, h in AXES if frame[c].n_unique() > 1 or c in ("model", "hardware")]
    fixed = [f"{h} {frame[c][0]}" for c, h in AXES if (c, h) not in varying]
    if frame.height > SUMMARY_ROWS:
        fixed.append(
            f"first {SUMMARY_ROWS} of {frame.height:,} configurations; {decode_table} has "
            "every one (ceiling, knee_batch, max_batch, ridge_batch columns)"
        )
        frame = frame.head(SUMMARY_ROWS)
    table = Table(
        title=f"{sweep.title}: decode summary",
        title_justify="left",
        caption=", ".join(fixed),
        caption_justify="left",
    )
    for _, header in varying:
        table.add_column(header, justify="right" if header in ("tp", "context") else "left")
    for header in ("ceiling\n[FLOP/B]", "knee\nbatch", "max\nbatch", "ridge\nbatch"):
        table.add_column(header, justify="right")
    table.add_column(f"{fraction:.0%} of ceiling\nbefore memory wall", no_wrap=True)
    for row in frame.iter_rows(named=True):
        if not row["fits"]:
            verdict = "does not fit"
        elif row["ceiling_reachable"]:
            verdict = f"yes, at batch {_batch(row['ceiling_batch'])}"
        else:
            verdict = f"no: needs {_batch(row['ceiling_batch'])}"
        cells = [f"{row[c]:,}" if c == "context" else str(row[c]) for c, _ in varying]
        cells += [
            f"{row['ceiling']:.2f}",
            _batch(row["knee_batch"]),
            f"{row['max_batch']:,}" if row["fits"] else "0",
            "never" if row["ridge_batch"] is None else _batch(row["ridge_batch"]),
            verdict,
        ]
        table.add_row(*cells)
    console.print(table)


def row_counts(rows: Mapping[str, int]) -> str:
    """``decode 1,024 rows, hardware 1 row``: the tables of a result and their sizes."""
    return ", ".join(f"{name} {n:,} {'row' if n == 1 else 'rows'}" for name, n in rows.items())


def print_validation(plan: Plan) -> None:
    """One line per valid config: rows per table, the memory a run needs, and how it will run."""
    sweep, how = plan.sweep, "in memory, single files"
    if plan.streamed:
        how = (
            f"streamed in {plan.chunks:,} chunks, partitioned by model "
            f"(budget {plan.budget / 2**30:,.2f} GiB)"
        )
    tables = ", ".join(f"{name} {rows:,} points" for name, rows in plan.rows.items())
    click.echo(
        f"{sweep.path}: ok: {sweep.name}: {tables}, estimated memory "
        f"{plan.memory / 2**20:,.1f} MiB; {how}"
    )


def print_catalog(console: Any, what: str) -> None:
    """The catalog as a table, with sources."""
    from rich.table import Table

    from sweeps.catalog import load_catalog, unique

    catalog = load_catalog()
    table = Table(title=f"catalog: {what}", title_justify="left", show_lines=False)
    if what == "hardware":
        for header in (
            "id",
            "name",
            "bf16 dense",
            "fp8 dense",
            "bandwidth",
            "memory",
            "ridge",
            "source",
        ):
            table.add_column(header, overflow="fold")
        for hw in unique(catalog.hardware):
            fp8 = hw.peak_flops.get("fp8")
            table.add_row(
                hw.id,
                hw.name,
                _si(hw.peak_flops["bf16"], "FLOP/s"),
                _si(fp8, "FLOP/s") if fp8 else "-",
                _si(hw.bandwidth, "B/s"),
                f"{hw.memory / 2**30:,.1f} GiB",
                f"{hw.peak_flops['bf16'] / hw.bandwidth:.0f}",
                hw.source[:80],
            )
    elif what == "models":
        for header in (
            "id",
            "params",
            "active",
            "layers",
            "heads",
            "kv heads",
            "head dim",
            "attention",
            "source",
        ):
            table.add_column(header, overflow="fold")
        for m in unique(catalog.models):
            table.add_row(
                m.id,
                _si(m.params, ""),
                _si(m.active_params, ""),
                str(m.layers),
                str(m.heads),
                str(m.kv_heads),
                str(m.head_dim),
                m.attention,
                m.source[:80],
            )
    else:
        for header in ("name", "bits", "group", "scale bytes", "bytes/element", "description"):
            table.add_column(header)
        for d in catalog.dtypes.values():
            table.add_row(
                d.name,
                f"{d.bits:g}",
                str(d.group_size or "-"),
                f"{d.scale_bytes:g}",
                f"{d.bytes_per_element:.6g}",
                d.description,
            )
    console.print(table)


def print_classification(console: Any, result: dict[str, Any]) -> None:
    """The textbook classification of one point."""
    from rich.table import Table

    table = Table(title=f"ridge point {result['ridge_point']} FLOP/byte", title_justify="left")
    for header in (
        "phase",
        "FLOPs",
        "bytes",
        "AI [FLOP/B]",
        "bottleneck",
        "attainable",
        "utilization",
    ):
        table.add_column(header)
    for phase in ("prefill", "decode"):
        p = result[phase]
        table.add_row(
            phase,
            _si(p["total_flops"], "FLOP"),
            _si(p["memory_bytes"], "B"),
            f"{p['arithmetic_intensity']}",
            p["bottleneck"],
            _si(p["achieved_flops"], "FLOP/s"),
            f"{p['utilization_percent']} %",
        )
    console.print(table)
