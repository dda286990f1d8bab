"""``sweeps workload``: one library call (``sweeps.traces.describe``), its tables rendered, the
figures written atomically into ``DIR/workload/`` when asked.

The document (``--json``) and the tables are built from the same dictionary, so the two never
disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from sweeps.cli.console import Output
from sweeps.cli.errors import handled
from sweeps.cli.options import Bounded, check_out, output_options, url_callback
from sweeps.traces.formats import NAMES as TRACE_FORMATS

FOLDER = "workload"
"""The folder under ``--out`` that receives the figures."""


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"


def overview_table(doc: dict[str, Any]) -> Any:
    """Requests, rate and burstiness, correlation and reuse: one line each."""
    from sweeps.cli.console import table

    arrivals, reuse = doc["arrivals"], doc["reuse"]
    dropped = ", ".join(f"{n} {why}" for why, n in doc["dropped"].items()) or "none"
    rows = [
        ("format", doc["format"]),
        ("requests", f"{doc['requests']:,} of {doc['rows']:,} rows (dropped: {dropped})"),
        ("span", f"{_number(arrivals['span_s'])} s"),
        ("mean rate", f"{_number(arrivals['rate'])} request/s"),
        ("peak rate", f"{_number(arrivals['peak_rate'])} request/s in {arrivals['bin_s']:g} s"),
        ("burstiness", f"CV of inter-arrival times {_number(arrivals['interarrival_cv'])} "
                       "(Poisson: 1)"),
        ("correlation", f"prompt-output Pearson {_number(doc['correlation']['pearson'], 2)}, "
                        f"Spearman {_number(doc['correlation']['spearman'], 2)}"),
    ]  # fmt: skip
    if reuse is not None:
        rows += [
            ("prefix reuse", f"unbounded LRU hit rate {reuse['unbounded_hit_rate']:.1%} over "
                             f"{reuse['working_set_blocks']:,} blocks of {reuse['block_tokens']}"),
            ("multi-turn", f"{reuse['requests_reusing']:.1%} of requests find a cached prefix, "
                           f"{reuse['later_turns']:.1%} more than their first block"),
        ]  # fmt: skip
    grid = table(f"{doc['source']}: the workload", "SI units; see --json for every value")
    grid.add_column("what", justify="left", no_wrap=True)
    grid.add_column("value", justify="left")
    for name, value in rows:
        grid.add_row(name, value)
    return grid


def lengths_table(doc: dict[str, Any]) -> Any:
    """Percentiles, mean, CV, min and max of prompt and output tokens."""
    from sweeps.cli.console import table

    stats = list(doc["prompt_tokens"])
    grid = table("request lengths [token]", "percentiles: linear interpolation")
    grid.add_column("tokens", justify="left")
    for name in stats:
        grid.add_column(name, justify="right")
    for kind in ("prompt_tokens", "output_tokens"):
        values = doc[kind]
        grid.add_row(kind.removesuffix("_tokens"), *(_number(values[s]) for s in stats))
    return grid


def curve_table(doc: dict[str, Any]) -> Any:
    """The LRU hit rate at each reported capacity (None without hashes)."""
    from sweeps.cli.console import table

    reuse = doc["reuse"]
    if reuse is None:
        return None
    grid = table("LRU prefix hit rate by cache capacity", "exact replay in arrival order")
    for name in ("blocks", "tokens", "hit rate"):
        grid.add_column(name, justify="right")
    size = reuse["block_tokens"]
    curve = reuse["curve"]
    for blocks, rate in zip(curve["capacity_blocks"], curve["hit_rate"], strict=True):
        grid.add_row(f"{blocks:,}", f"{blocks * size:,}", f"{rate:.1%}")
    return grid


def describe_to(
    path: Path, trace_format: str | None, bin_s: float, out: Path | str | None, force: bool,
    output: Output,
) -> None:  # fmt: skip
    """Read and describe ``path``, print its tables, and write the figures when ``out`` (a
    local folder, or a URL: committed there as ``sweeps run`` commits)."""
    from sweeps.traces import describe, read_trace

    target = None
    if out is not None:
        from sweeps.pipeline.remote import check_place, place_name

        target = place_name(out, FOLDER)
        for line in check_place(out, FOLDER, force):  # before any work
            output.status(line)
    trace = read_trace(path, trace_format)
    doc = describe(trace, bin_s)
    files: list[str] = []
    if out is not None:
        from sweeps.charts.traces import write_trace_figures
        from sweeps.pipeline.remote import place

        said: list[str] = []
        with place(out, FOLDER, force, said) as staging:
            files = write_trace_figures(trace, doc, staging)
        for line in said:
            output.status(line)
        output.status(f"wrote {target}/ ({', '.join(files)})")
    if output.json:
        output.document({**doc, "folder": None if target is None else str(target), "files": files})
        return
    for grid in (overview_table(doc), lengths_table(doc), curve_table(doc)):
        if grid is not None:
            output.result(grid)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "trace_format",
    type=click.Choice(TRACE_FORMATS),
    default=None,
    help="The trace's format (default: recognised by its columns).",
)
@click.option(
    "--bin",
    "bin_s",
    type=Bounded(1e-3, 1e9),
    default=60.0,
    show_default=True,
    help="Window of the arrival rate over time [s].",
)
@click.option(
    "--out",
    type=str,
    default=None,
    callback=url_callback,
    help="Folder that receives workload/ (the figures, HTML and SVG; a local folder, a file:// "
    "URL or a URL of an installed fsspec protocol); default: none written.",
)
@click.option("--force", is_flag=True, help="Replace an existing result.")
@output_options
@handled
def workload(
    trace: Path,
    trace_format: str | None,
    bin_s: float,
    out: Path | str | None,
    force: bool,
    output: Output,
) -> None:
    """Describe the request trace TRACE (Azure LLM inference 2023/2024, BurstGPT, Mooncake
    JSONL or the package's own CSV): arrival rate over time, burstiness, prompt and output
    length percentiles and their correlation, multi-turn and prefix reuse (the exact LRU hit
    rate by cache capacity, where the trace has prefix hashes).

    \b
    Example:
      sweeps workload AzureLLMInferenceTrace_conv.csv
      sweeps workload conversation_trace.jsonl --out outputs --json
    """
    if isinstance(out, Path):
        check_out(out)
    describe_to(trace, trace_format, bin_s, out, force, output)
