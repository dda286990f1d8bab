"""The check that a run's times are times (issue 44 item 4): every column whose unit is seconds
is, row by row, positive and finite, or null where there is none. Never ``inf`` (a queue with
no replica, a byte count over a vanishing bandwidth), never NaN, never negative, and never 0 but
in the columns below, whose time is that of a part a step may not have at all.

Used by ``tests/test_golden.py`` over every table of every shipped config and by
``tests/test_hostile_times.py`` over runs at the extremes the config accepts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from sweeps.export import read_units

MAY_BE_ZERO = frozenset(
    {
        "all_to_all_time_s",  # ep 1: no expert exchange
        "reload_time_s",  # nothing to reload: a hit rate of 0, or the prefix already in HBM
        "draft_time_s",  # an n-gram draft, or no draft: nothing drafted on a device
        "kv_handoff_s",  # no hand-off between pools of one device
        # a spread: 0 where every batch mean of a simulation is the same
        "ttft_mean_ci_s",
        "tpot_mean_ci_s",
        "latency_mean_ci_s",
    }
)
"""Times of a part that may be absent from a step, so 0 s is a value: the time it took."""


def bad_times(path: Path) -> list[str]:
    """The problems of ``path``'s (a Parquet table's) time columns, one line each: the column,
    what is wrong and how many rows; empty where every time is a time."""
    units = read_units(path)
    frame = pl.read_parquet(path)
    problems = []
    for column, info in units.items():
        if info["unit"] != "s" or column not in frame.columns:
            continue
        values = frame[column].cast(pl.Float64).drop_nulls().to_numpy()
        checks = {
            "inf": np.isinf(values),
            "NaN (not null)": np.isnan(values),
            "negative": values < 0,
        }
        if column not in MAY_BE_ZERO:
            checks["exactly 0"] = values == 0
        for what, wrong in checks.items():
            if wrong.any():
                problems.append(f"{path.name}: {column}: {int(wrong.sum())} row(s) {what}")
    return problems


def folder_bad_times(folder: Path) -> list[str]:
    """``bad_times`` of every Parquet table in ``folder`` (a partitioned table's parts too)."""
    return [line for path in sorted(folder.rglob("*.parquet")) for line in bad_times(path)]
