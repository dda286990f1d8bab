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
