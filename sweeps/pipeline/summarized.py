"""``summary.parquet`` of a run: from the grid held at every configuration, or, for a streamed
run whose grid at one batch is over the budget, model by model (``sweeps.views.summary_table``
makes and writes the frame)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import xarray as xr

from sweeps.export.parquet import Written
from sweeps.pipeline.stream import configurations

if TYPE_CHECKING:
    import polars as pl

    from sweeps.pipeline.plan import Plan


def summary_table(
    grid: xr.Dataset | None,
    how: Plan,
    staging: Path,
    written: dict[str, Written],
    timings: dict[str, float],
    phase: Callable[[str], None],
) -> xr.Dataset | None:
    """``summary.parquet`` into ``staging`` and ``written`` (the manifest and the database
    list it as a table), from the grid at every configuration (``grid``, else the grid at
    one batch, ``configurations``); a streamed run whose grid at one batch is over the budget
    builds it model by model (none where one model's is). Returns the grid it read, if any
    (``RunResult.configurations``)."""
    from sweeps.views.summary_table import SUMMARY, write_summary

    phase(f"writing {SUMMARY}.parquet")
    start = time.perf_counter()
    grid = grid if grid is not None else configurations(how.sweep, how.budget)
    frame = summary_frame_of(grid, how)
    if frame is None:
        return grid
    info = write_summary(frame, staging)
    seconds = time.perf_counter() - start
    written[SUMMARY] = Written(frame.height, info, [f"{SUMMARY}.parquet"], seconds)
    timings[f"table_{SUMMARY}"] = seconds
    return grid


def summary_frame_of(grid: xr.Dataset | None, how: Plan) -> pl.DataFrame | None:
    """The summary frame of the run, from ``grid`` where one is held at every configuration."""
    from sweeps.views.summary_table import concat_summaries, summary_frame

    sweep = how.sweep
    fraction = sweep.options.ceiling_fraction
    if grid is not None:
        return summary_frame(grid, fraction)
    parts = []
    for model in sweep.models:
        one = configurations(dataclasses.replace(sweep, models=(model,)), how.budget)
        if one is None:
            return None
        parts.append(summary_frame(one, fraction))
    return concat_summaries(parts, [m.id for m in sweep.models])
