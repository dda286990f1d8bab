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
    "ratio: measured/bound for throughput, bound/measured for latency, 1 at the roof; "
    "bounds at efficiencies 1 and no memory reserve; batch max: the memory wall at I + O/2"
)


def _units() -> dict[str, str]:
    """The unit of each numeric field of a row, as ``calibration.parquet`` declares it."""
    from sweeps.calibrate.table import UNITS

    numeric = ("tp", "batch", "prompt_tokens", "output_tokens", "context", "ratio")
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
    path: Path, folder: Path, files: list[str], rows: list[dict[str, Any]], summary: Any
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
    if unit == "s":
        return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:,.3g} s"
    return f"{value:,.0f} {unit}"


def rows_table(rows: list[dict[str, Any]], where: str) -> Any:
    """One line per measurement: what it is, the measured value, its bound, the ratio."""
    from rich.text import Text

    from sweeps.cli.console import table

    grid = table(f"{where}: measured against the roofline bound", CAPTION)
    titles = ("line", "model", "hardware", "tp", "batch", "I", "O", "metric")
    for title in (*titles, "measured", "bound", "ratio", "bound by", "beats?"):
        right = title in ("line", "tp", "batch", "I", "O", "measured", "bound", "ratio")
        grid.add_column(Text(title), justify="right" if right else "left")
    for row in rows:
        batch = f"{row['batch']:,}"
        if row["batch_given"] == "max":
            batch = f"max {batch}"
        grid.add_row(
            *(
                Text(cell)
                for cell in (
                    str(row["line"]),
                    row["model"],
                    row["hardware"],
                    str(row["tp"]),
                    batch,
                    f"{row['prompt_tokens']:,}",
                    f"{row['output_tokens']:,}",
                    row["metric"],
                    _value(row["value"], row["unit"]),
                    _value(row["bound"], row["unit"]),
                    f"{row['ratio']:.3f}",
                    row["bottleneck"].removesuffix("-bound"),
                    "BEATS" if row["beats_bound"] else "",
                )
            )
        )
    return grid


def summary_table(summary: list[dict[str, Any]]) -> Any:
    """Per device and bottleneck: the median and the range of the ratios."""
    from rich.text import Text

    from sweeps.cli.console import table

    grid = table(
        "achieved share of the bound, per device",
        "memory-bound rows estimate bandwidth_efficiency, compute-bound rows compute_efficiency",
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


def calibrate_to_folder(path: Path, out: Path, force: bool, output: Output) -> list[int]:
    """Bound every row of ``path``, write ``out/calibration/`` atomically, print the tables;
    the lines of the rows that beat their bound."""
    from sweeps.calibrate import calibrate, summarize_efficiency, write_calibration
    from sweeps.export import atomic_folder, check_target

    target = out / FOLDER
    check_target(target, force)  # before any work, as a run
    frame = calibrate(path)
    summary = summary_rows(summarize_efficiency(frame))
    with atomic_folder(target, force) as staging:
        files = write_calibration(frame, staging)
    rows = measurement_rows(frame)
    output.result(rows_table(rows, str(path)))
    output.result(summary_table(summary))
    output.status(f"wrote {target}/ ({', '.join(files)})")
    if output.json:
        output.document(document(path, target, files, rows, summary))
    return [row["line"] for row in rows if row["beats_bound"]]
