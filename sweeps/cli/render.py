"""What the commands print: the run summary, the run's outcome, validation, classification, a
model. Presentation only: every number comes from the library (the summary frame, the ``Plan``,
the ``RunResult``, the records) and every unit from the variable registry.

Each result exists twice, as rows of plain values (the ``--json`` document, SI units) and as a
rich table built from those same rows, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sweeps.axes import AXIS
from sweeps.cli.numbers import binary, grouped, si, whole_batch
from sweeps.engine.decode import CONFIGURATION
from sweeps.engine.decode import SUMMARY as SUMMARY_FIELDS
from sweeps.grid import REGISTRY

"""The summary's values per configuration, named as the registry names them."""

BATCHES = ("knee_batch", "ceiling_batch", "max_batch", "ridge_batch")
"""Summary values in sequences: shown as whole batches (the first that reaches, rounded up)."""

SUMMARY_ROWS = 40
"""Configurations a terminal summary shows at most; a sweep has thousands."""

USER_TERMS = (
    "token_time_b1_s",
    "device_tokens_per_s_b1",
    "token_time_wall_s",
    "device_tokens_per_s_wall",
    "ttft_s",
)
"""The summary in what hardware is chosen by, beside the intensities (null where none)."""

USER_HEADERS = {
    "token_time_b1_s": "ms/token\nbatch 1",
    "device_tokens_per_s_b1": "tokens/s\nper device\nbatch 1",
    "token_time_wall_s": "ms/token\nat wall",
    "device_tokens_per_s_wall": "tokens/s\nper device\nat wall",
    "ttft_s": "TTFT\n[ms]",
}
"""Their column titles: times in milliseconds, as people read them."""

EXPECTED_TERMS = (
    "expected_token_time_b1_s",
    "expected_device_tokens_per_s_b1",
    "expected_token_time_wall_s",
    "expected_device_tokens_per_s_wall",
)
"""The same, expected from measured kernels (``axes.engine``), shown beside the bounds."""

USER_HEADERS.update(
    {
        f"expected_{name}": "expected\n" + title
        for name, title in USER_HEADERS.items()
        if f"expected_{name}" in EXPECTED_TERMS
    }
)

DROP_ORDER = (
    "expected_token_time_wall_s",
    "expected_device_tokens_per_s_b1",
    "knee_batch",
    "ridge_batch",
    "max_batch",
    "token_time_wall_s",
    "device_tokens_per_s_b1",
    "ttft_s",
    "token_time_b1_s",
    "ceiling",
)
"""Columns a summary leaves out, in this order, when the terminal is too narrow for it: every
value but tokens/s per device at the wall and the verdict, which then wraps between words;
the ids and the numbers left are never cut."""


def units(names: Sequence[str]) -> dict[str, str]:
    """The registry's unit of each of ``names`` that it knows (for the ``--json`` documents)."""
    return {name: REGISTRY[name].unit for name in names if name in REGISTRY}


def header(name: str) -> str:
    """``ceiling`` over ``[FLOP/byte]``: a column title over the registry's unit. Batches are
    ``knee`` over ``batch``: their unit, the same for all, is said once in the caption."""
    if name in USER_HEADERS:
        return USER_HEADERS[name]
    unit = REGISTRY[name].unit
    title = name.replace("_", "\n")
    if name in BATCHES or unit in ("-", "1"):
        return title
    return f"{title}\n[{unit}]"


def summary_rows(frame: Any) -> list[dict[str, Any]]:
    """The summary frame (``RunResult.summary()``) as plain rows: batches in whole sequences.

    ``ridge_batch`` is ``None`` where decode never turns compute-bound; ``fits`` is false where
    not one sequence fits (``max_batch`` 0), every time and throughput then ``None`` and
    ``reason`` saying why (``None`` where the figures exist).
    """
    rows = []
    for row in frame.iter_rows(named=True):
        record = {dim: row[dim] for dim in (*CONFIGURATION, "engine", "parallel") if dim in row}
        record["ceiling"] = float(row["ceiling"])
        for name in BATCHES:
            value = row[name]
            record[name] = None if value is None else _batch_value(name, value)
        record["ceiling_reachable"] = bool(row["ceiling_reachable"])
        for name in (*USER_TERMS, *(t for t in EXPECTED_TERMS if t in row)):
            value = row.get(name)
            record[name] = None if value is None else float(value)
        record["fits"] = bool(row["fits"])
        record["reason"] = row.get("reason")  # why the figures are null; None where they exist
        rows.append(record)
    return rows


def _batch_value(name: str, value: float) -> int:
    # max_batch is the largest batch that fits: already whole, never rounded up
    return int(value) if name == "max_batch" else whole_batch(value)


def _verdict(row: Mapping[str, Any]) -> str:
    if not row["fits"]:
        return "does not fit"
    if row["ceiling_reachable"]:
        return f"yes, at batch {row['ceiling_batch']:,}"
    return f"no: needs {row['ceiling_batch']:,}"


def _cell(name: str, row: Mapping[str, Any]) -> str:
    value = row[name]
    if name == "ceiling":
        return grouped(value)
    if name in USER_TERMS or name in EXPECTED_TERMS:
        if value is None:
            return "-"
        shown = value * 1e3 if name.endswith("_s") else value
        return f"{shown:,.0f}" if abs(shown) >= 100 else f"{shown:.3g}"
    if name == "ridge_batch" and value is None:
        return "never"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _title(dim: str) -> str:
    """An axis's short title; ``parallel`` (the replica's layout) is no axis."""
    return AXIS[dim].title if dim in AXIS else dim


def _sized(dim: str) -> bool:
    return dim in AXIS and AXIS[dim].kind == "size"


def summary_table(
    rows: list[dict[str, Any]],
    title: str,
    fraction: float,
    where: str,
    console: Any,
    width: int | None,
) -> Any:
    """The summary as a table that fits ``width`` columns (``None``: any width).

    Axes with one value move to the caption, so the table shows what varies; more than
    ``SUMMARY_ROWS`` configurations show their first ones and say that ``where`` has every
    one; a narrow terminal drops columns in ``DROP_ORDER`` and the caption says which.
    """
    configuration = [d for d in (*CONFIGURATION, "engine", "parallel") if d in rows[0]]
    varying = [
        dim
        for dim in configuration
        if len({row[dim] for row in rows}) > 1 or dim in ("model", "hardware")
    ]
    notes = [f"{_title(dim)} {rows[0][dim]}" for dim in configuration if dim not in varying]
    if len(rows) > SUMMARY_ROWS:
        notes.append(
            f"first {SUMMARY_ROWS} of {len(rows):,} configurations; {where} has every one "
            "(ceiling, knee_batch, max_batch, ridge_batch columns)"
        )
        rows = rows[:SUMMARY_ROWS]
    values = ["ceiling", "knee_batch", "max_batch", "ridge_batch", *USER_TERMS]
    values += [name for name in EXPECTED_TERMS if name in rows[0]]
    verdict = f"reaches {fraction:.0%}\nof ceiling?"
    dropped: list[str] = []
    while True:
        table = _summary_grid(rows, title, varying, values, verdict, notes, dropped)
        if width is None or _width(console, table) <= width:
            return table
        left = [name for name in DROP_ORDER if name in values]
        if not left:
            return table  # the verdict wraps between words; ids and numbers are whole
        values.remove(left[0])
        dropped.append(left[0])


def _summary_grid(
    rows: list[dict[str, Any]],
    title: str,
    varying: list[str],
    values: list[str],
    verdict: str,
    notes: list[str],
    dropped: list[str],
) -> Any:
    from rich.text import Text

    from sweeps.cli.console import table as new_table

    caption = list(notes)
    if dropped:
        caption.append(f"left out to fit the terminal: {', '.join(dropped)} (see --json)")
    if any(name in BATCHES for name in values):
        caption.append(f"batches in whole {REGISTRY['knee_batch'].unit}s")
    if any(name in USER_TERMS for name in values):
        caption.append(
            "ms/token and tokens/s per device: bounds at batch 1 and at the memory wall (max "
            "batch); TTFT: one request at the first prompt length"
        )
    if any(name in EXPECTED_TERMS for name in values):
        caption.append("expected: from the engine's measured kernels (expected.parquet)")
    table = new_table(f"{title}: decode summary", ", ".join(caption))
    for dim in varying:
        right = _sized(dim)
        table.add_column(
            Text(_title(dim)),
            justify="right" if right else "left",
            no_wrap=True,
            min_width=max(len(_title(dim)), *(len(_axis_cell(dim, row)) for row in rows)),
        )
    for name in values:
        title = header(name)
        widest = max([*map(len, title.split("\n")), *(len(_cell(name, row)) for row in rows)])
        table.add_column(Text(title), justify="right", no_wrap=True, min_width=widest)
    table.add_column(Text(verdict), overflow="fold", min_width=len("does not fit"))
    for row in rows:
        cells = [_axis_cell(d, row) for d in varying]
        cells += [_cell(name, row) for name in values]
        table.add_row(*(Text(cell) for cell in [*cells, _verdict(row)]))
    return table


def _axis_cell(dim: str, row: Mapping[str, Any]) -> str:
    return f"{row[dim]:,}" if _sized(dim) else str(row[dim])


def _width(console: Any, renderable: Any) -> int:
    from rich.measure import Measurement

    options = console.options.update_width(10_000)
    return int(Measurement.get(console, options, renderable).maximum)


def shown(path: Path) -> str:
    """``path`` as a user reads it: relative to the working folder when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def row_counts(rows: Mapping[str, int]) -> str:
    """``decode 1,024 rows, hardware 1 row``: the tables of a result and their sizes."""
    return ", ".join(f"{name} {n:,} {'row' if n == 1 else 'rows'}" for name, n in rows.items())


def run_lines(result: Any, distributed: bool) -> list[str]:
    """What a ``RunResult`` says after the summary: where it went, how, and what was not written."""
    partitioned = result.layout == "partitioned"
    how = f" in {result.chunks:,} chunks, partitioned by model" if partitioned else ""
    seconds = result.seconds  # wall time: the phases in ``timings`` overlap
    where = getattr(result, "url", None) or shown(result.folder)
    lines = [f"wrote {where}/{how} ({row_counts(result.rows)}) in {seconds:,.2f} s"]
    if result.skipped:
        hint = (
            "a run on a dask cluster always streams"
            if distributed
            else "a larger --memory-budget keeps it in one piece"
        )
        lines.append(
            f"not written: {', '.join(result.skipped)} (they need the whole grid in memory; {hint})"
        )
    notes = list(getattr(result, "notes", ()))
    return lines + expected_lines(getattr(result, "expected", {})) + notes


def expected_lines(counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """Of each expected table written (``RunResult.expected``), how many of its expectations
    are below their bound, flagged and never clamped: the catalog's peak or bandwidth is below
    what the device measured (docs/expected.md)."""
    if not counts:
        return []
    parts = [
        f"{table} {c['below_bound']:,} of {c['rows'] - c['without_data']:,}"
        for table, c in counts.items()
    ]
    return [f"expected below their bound (flagged below_bound, not clamped): {', '.join(parts)}"]


def timing_lines(result: Any) -> list[str]:
    """``-v``: the seconds of each phase of the run [s]."""
    return [f"  {name:<16} {seconds:8.3f} s" for name, seconds in result.timings.items()]


def run_document(sweep: Any, result: Any, rows: list[dict[str, Any]] | None) -> dict[str, Any]:
    """One run for ``sweeps run --json``: the same fields as the table and the lines, SI."""
    return {
        "name": sweep.name,
        "title": sweep.title,
        "config": sweep.path,
        "folder": getattr(result, "url", None) or str(result.folder),
        "layout": result.layout,
        "chunks": result.chunks,
        "rows": dict(result.rows),
        "files": list(result.files),
        "skipped": list(result.skipped),
        "notes": list(getattr(result, "notes", ())),
        "expected": {table: dict(c) for table, c in getattr(result, "expected", {}).items()},
        "seconds": dict(result.timings),
        "ceiling_fraction": sweep.options.ceiling_fraction,
        "summary": rows,
        "units": units([*CONFIGURATION, *SUMMARY_FIELDS, "ttft_s", "fits"]),
    }


def where_rows_are(result: Any) -> str:
    """Where every configuration of a result is: the decode file or the decode dataset."""
    return "the decode/ dataset" if result.layout == "partitioned" else "decode.parquet"


def plan_document(plan: Any) -> dict[str, Any]:
    """A ``Plan`` for ``sweeps validate --json``, SI units."""
    return {
        "config": plan.sweep.path,
        "ok": True,
        "name": plan.sweep.name,
        "rows": dict(plan.rows),
        "memory_bytes": plan.memory,
        "budget_bytes": plan.budget,
        "layout": plan.layout,
        "chunks": plan.chunks,
    }


def plan_line(plan: Any) -> str:
    """One line per valid config: rows per table, the memory a run needs, how it will run."""
    files = "single files" if plan.layout == "single" else "partitioned by model"
    how = f"in memory, {files}"
    if plan.streamed:
        how = f"computed in {plan.chunks:,} chunks (budget {binary(plan.budget)}), {files}"
    sweep = plan.sweep
    grid = {"zarr": "grid.zarr", "netcdf": "grid.nc"}.get(sweep.grid_format)
    if grid is not None:
        how += (
            f"; {grid} {'written' if plan.writes_grid_file(sweep.grid_format) else 'not written'}"
        )
    if sweep.charts:
        how += f"; figures {'written' if plan.writes_figures else 'not written'}"
    tables = ", ".join(f"{name} {rows:,} points" for name, rows in plan.rows.items())
    return (
        f"{plan.sweep.path}: ok: {plan.sweep.name}: {tables}, estimated memory "
        f"{binary(plan.memory)}; {how}"
    )


def classification_table(result: Mapping[str, Any]) -> Any:
    """The textbook classification of one point (``classify_llm_phases``) as a table."""
    from rich.text import Text

    from sweeps.cli.console import table as new_table

    ridge = REGISTRY["ridge_point"].unit
    table = new_table(f"ridge point {result['ridge_point']} {ridge}")
    for title in ("phase", "FLOPs", "bytes", "AI", "bottleneck", "attainable", "utilization"):
        table.add_column(Text(f"AI\n[{ridge}]" if title == "AI" else title), no_wrap=True)
    for phase in ("prefill", "decode"):
        p = result[phase]
        table.add_row(
            phase,
            si(p["total_flops"], "FLOP"),
            si(p["memory_bytes"], "byte"),
            f"{p['arithmetic_intensity']:,}",
            p["bottleneck"],
            si(p["achieved_flops"], "FLOP/s"),
            f"{p['utilization_percent']} %",
        )
    return table


def model_lines(model: Any) -> list[str]:
    """The resolved spec of an imported model, for a person to check before pasting."""
    lines = [
        f"model            {model.id} ({model.family})",
        f"params           {model.params:,.0f} total, {model.active_params:,.0f} active",
        f"layers           {model.layers}",
        f"heads            {model.heads} query, {model.kv_heads} KV, head_dim {model.head_dim}",
        f"attention        {model.attention}",
        f"kv bytes/token   {model.kv_bytes_per_token():,.0f} in bf16, all layers",
    ]
    if model.is_moe:
        lines.append(
            f"experts          {model.experts} routed, {model.experts_per_token} per "
            f"token, {model.shared_experts} shared"
        )
    if model.is_mla:
        lines.append(
            f"mla              kv_lora_rank {model.kv_lora_rank}, qk_rope_head_dim "
            f"{model.qk_rope_head_dim}, v_head_dim {model.v_head_dim}"
        )
    if model.local_layers:
        lines.append(
            f"sliding window   {model.sliding_window} tokens on {model.local_layers} "
            f"of {model.layers} layers"
        )
    lines.append(f"max context      {model.max_context:,}")
    if model.notes:
        lines.append(f"notes            {model.notes}")
    return lines
