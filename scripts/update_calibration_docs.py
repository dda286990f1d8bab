"""Regenerate the shipped calibration's medians in docs/calibration.md.

Run from the repository root: ``python scripts/update_calibration_docs.py``. The tables sit
between ``START`` and ``END``; everything else in the page is left as it is. A test holds the
block to what ``sweeps calibrate`` gives on the shipped file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from sweeps.calibrate import calibrate, shipped_measurements, summarize_efficiency

PAGE = Path(__file__).resolve().parent.parent / "docs" / "calibration.md"
START, END = "<!-- medians:start -->", "<!-- medians:end -->"


def _table(summary: pl.DataFrame, by: tuple[str, ...]) -> list[str]:
    head = [*by, "rows bound by", "rows", "median ratio", "range"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary.iter_rows(named=True):
        cells = [str(row[c]) for c in by]
        cells += [row["bottleneck"].removesuffix("-bound"), str(row["rows"])]
        cells += [f"{row['median']:.2f}", f"{row['min']:.2f}-{row['max']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def medians_block(frame: pl.DataFrame) -> str:
    """The block: counts, the overall medians, per device, per source and device."""
    used = frame.filter(pl.col("in_medians"))
    medians = dict(used.group_by("bottleneck").agg(pl.col("ratio").median()).iter_rows())
    rows = dict(used.group_by("bottleneck").len().iter_rows())
    unbounded = frame.filter(pl.col("bound").is_null()).height
    lines = [
        f"The shipped file holds {frame.height} published figures; {unbounded} of them have no "
        "bound yet (each says why). No row beats its bound (a test keeps it so).",
        "",
        f"Over all {rows['memory-bound']} memory-bound rows the median is "
        f"{medians['memory-bound']:.2f}, over the {rows['compute-bound']} compute-bound rows "
        f"{medians['compute-bound']:.2f}; a user who wants what a tuned engine gets might take "
        f"`bandwidth_efficiency = {medians['memory-bound']:.2f}` and "
        f"`compute_efficiency = {medians['compute-bound']:.2f}`, or a device's own median below.",
        "",
        "Per device:",
        "",
        *_table(summarize_efficiency(frame), ("hardware",)),
        "",
        "Per source and device:",
        "",
        *_table(summarize_efficiency(frame, by=("source", "hardware")), ("source", "hardware")),
    ]
    return "\n".join(lines) + "\n"


def update_page(text: str, frame: pl.DataFrame) -> str:
    """``text`` with the block between the markers replaced by ``medians_block(frame)``."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{medians_block(frame)}{END}{tail}"


if __name__ == "__main__":
    shipped = calibrate(shipped_measurements())
    PAGE.write_text(update_page(PAGE.read_text(encoding="utf-8"), shipped), encoding="utf-8")
