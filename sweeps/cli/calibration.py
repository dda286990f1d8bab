"""``sweeps calibrate``: one library call (``calibrate``), the folder written atomically, the
rows and the per-device summary rendered.

Each result exists twice, as rows of plain values (the ``--json`` document, SI units) and as a
rich table built from those same rows, so the two can never disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweeps.cli.console import Output

FOLDER = "calibration"
"""The folder under ``--out`` that receives a calibration."""

SUMMARY_UNITS = {"rows": "row", "median": "1", "min": "1", "max": "1"}
"""Units of the summary's fields (the ratios are fractions of a bound)."""

CAPTION = (
    "measured and bound: token/s on tok/s rows, ms on latencies (TTFT, ITL, req: request "
    "latency); ratio: 1 at the roof, ! where a row beats its bound; bounds at efficiencies 1, "
    "no memory reserve; * batch max: the memory wall at I + O/2; per: what a throughput is "
    "per, its basis (dev: device, rep: replica of tp, sys: all gpus); ~ under load: not in "
    "the medians; - no bound (the reason is listed below)"
)

BASIS_LABELS = {"device": "dev", "replica": "rep", "system": "sys"}
"""How the table names each basis (the caption says what they are)."""

METRIC_LABELS = {
    "output_tokens_per_s": "tok/s",
    "ttft_s": "TTFT",
    "itl_s": "ITL",
    "request_latency_s": "req",
}
"""How the table names each metric (the caption says what they are)."""


def _units() -> dict[str, str]:
    """The unit of each numeric field of a row, as ``calibration.parquet`` declares it."""
    from sweeps.calibrate.table import UNITS

    numeric = ("tp", "gpus", "batch", "prompt_tokens", "output_tokens", "context", "ratio")
    return {name: UNITS[name][0] for name in numeric} | SUMMARY_UNITS


def measurement_rows(frame: Any) -> list[dict[str, Any]]:
    """The calibration frame as plain rows; the file's own extra columns under ``extra``."""
    from sweeps.calibrate.table import UNITS

    rows = []
    for row in frame.iter_rows(named=True):
        record = {name: row[name] for name in UNITS if name in row}
        record["extra"] = {name: row[name] for name in row if name not in UNITS}
        rows.append(record)
    return rows


def summary_rows(summary: Any) -> list[dict[str, Any]]:
    """``summarize_efficiency``'s frame as plain rows."""
    return [dict(row) for row in summary.iter_rows(named=True)]


def document(
    path: Path, folder: Path | str, files: list[str], rows: list[dict[str, Any]], summary: Any
) -> dict[str, Any]:
    """The ``--json`` document: the same fields as the tables and the status line, SI."""
    return {
        "file": str(path),
        "folder": str(folder),
        "files": files,
        "measurements": rows,
        "beating": [row["line"] for row in rows if row["beats_bound"]],
        "summary": summary,
        "units": _units(),
    }


def _value(value: float, unit: str) -> str:
    """A measured value or a bound as the table shows it: token/s, or seconds in ms."""
    shown = value * 1e3 if unit == "s" else value
    return f"{shown:,.0f}" if shown >= 100 else f"{shown:.3g}"


COLUMNS = (
    "line",
    "model",
    "hardware",
    "tp",
    "per",
    "batch",
    "I",
    "O",
    "metric",
    "value",
    "bound",
)
"""The columns of the rows table, then ``ratio`` and ``by``; the text of each row's cells."""

DROP_ORDER = ("by", "line")
"""Columns the rows table leaves out, in this order, when the terminal is too narrow for it."""


def _ratio(row: dict[str, Any]) -> str:
    """The ratio with its flag: ``!`` beats its bound, ``~`` under load, ``-`` no bound."""
    if row["ratio"] is None:
        return "-"
    flag = "!" if row["beats_bound"] else "~" if row["load"] == "under-load" else " "
    return f"{row['ratio']:.3f}{flag}"


def _cells(row: dict[str, Any]) -> dict[str, str]:
    star = "*" if row["batch_given"] == "max" else ""
    bounded = row["bound"] is not None
    return {
        "line": str(row["line"]),
        "model": row["model"],
        "hardware": row["hardware"],
        "tp": str(row["tp"]),
        "per": BASIS_LABELS[row["basis"]],
        "batch": f"{row['batch'] if row['batch'] is not None else 'max'}{star}",
        "I": str(row["prompt_tokens"]),
        "O": str(row["output_tokens"]),
        "metric": METRIC_LABELS[row["metric"]],
        "value": _value(row["value"], row["unit"]),
        "bound": _value(row["bound"], row["unit"]) if bounded else "-",
        "ratio": _ratio(row),
        "by": row["bottleneck"].removesuffix("-bound")[:4] if bounded else "-",
    }


def reasons_table(rows: list[dict[str, Any]]) -> Any:
    """The rows without a bound, each with why (``None`` where every row has one)."""
    from rich.text import Text

    from sweeps.cli.console import table

    missing = [row for row in rows if row["bound"] is None]
    if not missing:
        return None
    grid = table(f"{len(missing)} row(s) without a bound", "each says why; see --json")
    grid.add_column(Text("line"), justify="right", no_wrap=True)
    grid.add_column(Text("why no bound"), justify="left")
    for row in missing:
        grid.add_row(str(row["line"]), row["reason"])
    return grid


def rows_table(
    rows: list[dict[str, Any]], where: str, console: Any = None, width: int | None = None
) -> Any:
    """One line per measurement: what it is, the measured value, its bound, the ratio; in
    ``width`` columns (``None``: any width), leaving out ``DROP_ORDER`` as needed."""
    from sweeps.cli.render import _width

    shown = [*COLUMNS, "ratio", "by"]
    dropped: list[str] = []
    while True:
        grid = _rows_grid(rows, where, shown, dropped)
        if width is None or _width(console, grid) <= width or len(dropped) == len(DROP_ORDER):
            return grid
        dropped.append(DROP_ORDER[len(dropped)])
        shown.remove(dropped[-1])


def _rows_grid(rows: list[dict[str, Any]], where: str, shown: list[str], dropped: list[str]) -> Any:
    from rich.text import Text

    from sweeps.cli.console import table

    caption = CAPTION
    if dropped:
        caption += f"; left out to fit the terminal: {', '.join(dropped)} (see --json)"
    grid = table(f"{where}: measured against the roofline bound", caption)
    grid.padding = (0, 0)  # the box's one space between columns: a row fits 80 columns
    for title in shown:
        grid.add_column(
            Text(title),
            justify="left" if title in ("model", "hardware", "metric", "by") else "right",
            no_wrap=True,
            overflow="ellipsis",
        )
    for row in rows:
        cells = _cells(row)
        grid.add_row(*(Text(cells[title]) for title in shown))
    return grid


def summary_table(summary: list[dict[str, Any]]) -> Any:
    """Per device and bottleneck: the median and the range of the ratios."""
    from rich.text import Text

    from sweeps.cli.console import table

    grid = table(
        "achieved share of the bound, per device",
        "memory: bandwidth_efficiency; compute: compute_efficiency",
    )
    for title in ("hardware", "bound by", "rows", "median", "range"):
        grid.add_column(
            Text(title), justify="left" if title in ("hardware", "bound by") else "right"
        )
    for row in summary:
        grid.add_row(
            row["hardware"],
            row["bottleneck"].removesuffix("-bound"),
            str(row["rows"]),
            f"{row['median']:.3f}",
            f"{row['min']:.3f}-{row['max']:.3f}",
        )
    return grid


def calibrate_to_folder(
    path: Path,
    out: Path | str,
    force: bool,
    output: Output,
    attention_dtype: str = "auto",
    engine: str | None = None,
) -> list[int]:
    """Bound every row of ``path``, write ``out/calibration/`` atomically (``out`` a local
    folder, or a URL: committed there as ``sweeps run`` commits, ``sweeps.pipeline.remote``),
    print the tables; the lines of the rows that beat their bound. With ``engine``, also each
    row's expected value and error, and their median and p90 per engine, device and regime."""
    from sweeps.calibrate import calibrate, summarize_efficiency, write_calibration
    from sweeps.pipeline.remote import check_place, place, place_name

    target = place_name(out, FOLDER)
    for line in check_place(out, FOLDER, force):  # before any work, as a run
        output.status(line)
    if engine is not None:
        from sweeps.measured import require

        require("sweeps calibrate --engine")
    frame = calibrate(path, attention_dtype, engine)
    summary = summary_rows(summarize_efficiency(frame))
    said: list[str] = []
    with place(out, FOLDER, force, said) as staging:
        files = write_calibration(frame, staging)
    for line in said:
        output.status(line)
    rows = measurement_rows(frame)
    output.result(rows_table(rows, str(path), output.out, output.width))
    reasons = reasons_table(rows)
    if reasons is not None:
        output.result(reasons)
    output.result(summary_table(summary))
    if engine is not None:
        output.result(error_table(frame))
        output.result(basis_table(frame))
    output.status(f"wrote {target}/ ({', '.join(files)})")
    if output.json:
        found = document(path, target, files, rows, summary)
        if engine is not None:
            found["expected"] = expected_summaries(frame)
        output.document(found)
    return [row["line"] for row in rows if row["beats_bound"]]


def expected_summaries(frame: Any) -> dict[str, list[dict[str, Any]]]:
    """The ``--json`` document's two error summaries, the rows of ``error_table`` and
    ``basis_table`` (fractions, not percentages)."""
    from sweeps.calibrate.expected import basis_summary, error_summary

    return {
        "by_regime": [dict(row) for row in error_summary(frame).iter_rows(named=True)],
        "by_basis": [dict(row) for row in basis_summary(frame).iter_rows(named=True)],
    }


def error_table(frame: Any) -> Any:
    """Median and p90 of ``|expected / measured - 1|`` per engine, device and regime."""
    from sweeps.calibrate.expected import error_summary

    title = "expected against measured, per engine, device and regime"
    keys = {"engine": "engine", "hardware": "hardware", "regime": "regime"}
    return _errors(error_summary(frame), title, "|error|", keys)


def basis_table(frame: Any) -> Any:
    """Median and p90 of ``|expected / measured - 1|`` per engine and basis of the expected
    value (the least certain of the steps it is priced from), and over all of them."""
    from sweeps.calibrate.expected import basis_summary

    title = "expected against measured, per engine and basis"
    caption = "|error|; basis: the least certain of the expected steps a row is priced from"
    keys = {"engine": "engine", "basis": "expected_basis"}
    return _errors(basis_summary(frame), title, caption, keys)


def _errors(summary: Any, title: str, caption: str, keys: dict[str, str]) -> Any:
    """A table of an error summary (a Polars frame): its ``keys`` (heading: column), then
    rows, median and p90 of ``|error|`` as percentages."""
    from rich.text import Text

    from sweeps.cli.console import table

    grid = table(title, caption)
    for heading in keys:
        grid.add_column(Text(heading), justify="left")
    for heading in ("rows", "median", "p90"):
        grid.add_column(Text(heading), justify="right")
    for row in summary.iter_rows(named=True):
        grid.add_row(
            *(str(row[column]) for column in keys.values()),
            str(row["rows"]),
            f"{row['median']:.1%}",
            f"{row['p90']:.1%}",
        )
    return grid
