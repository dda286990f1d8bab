"""The run's hooks: what ``run_to_folder`` calls, once the grid is computed, to write extra
outputs (the charts and the report) into its staging folder. A type only, so that the run's
pieces and the run name it without importing each other."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import xarray as xr

from sweeps.config import Sweep

Hook = Callable[[xr.Dataset | Iterable[xr.Dataset], Sweep, Path], list[str]]
"""Extra outputs (charts, report): given the grid (or, for a streamed run or one computed
model by model, its one-model-one-device grids one at a time), the sweep and the staging
folder, write files there and return their paths relative to it; ``notes`` (what it skipped)
go to ``RunResult.notes``; ``tables_only``: it reads the tables written, once all are."""

Track = Callable[[str, int, int, str], None]
"""Told how one long phase of a run moves, beside the others: (phase, units done, units in
all, what it does now). The phases: ``tables`` (table files), ``grid file`` (its chunks),
``figures`` (the model-and-device slices, then the figures across them and the report). A
phase is over when its units done reach its units in all. Called from the threads that do
the work, several at once."""
