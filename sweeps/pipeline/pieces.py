"""A grid that fits in memory, computed model by model into the table writers (issue 25, item 5).

Computed whole, a grid of 16.8 M points held every core for seconds before its first row was
written (0.7-3 s idle, more on a loaded machine), while its tables' writers then kept both cores
of the development machine busy on their own. Computed one model at a time instead, the
tables' writers start on the first model's rows while the next model is evaluated (the
streamed run's machinery, ``sweeps.pipeline.stream``, whose files are those of a whole grid),
and each model's grid is copied into its place in the whole grid (``Join``: value for value
the grid computed in one piece), for the grid file, the figures, the report and the summary;
what is held at once is the whole grid and the two models in flight. A model's grid alone
is also quicker to build than its share of the whole one (its arrays are smaller: measured 3.7-4.7
s for four models one by one against 7.6-9.0 s in one piece, on a loaded machine).

Used from ``PIECES_FROM`` points and more than one model: below, the grid takes a fraction of
a second and one piece is simplest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from sweeps.config import Sweep
from sweeps.export.parquet import Written, write_frame
from sweeps.grid.chunks import plan_chunks, table_points
from sweeps.pipeline.stream import Progress, spec_tables, stream_tables

PIECES_FROM = 1 << 21
"""Points (rows of every table together) from which a grid held in memory is computed model by
model into the writers (2,097,152, where the grid's own loop switches to numba)."""


def in_pieces(sweep: Sweep) -> bool:
    """Whether a run of ``sweep`` held in memory computes it model by model."""
    return len(sweep.models) > 1 and table_points(sweep) >= PIECES_FROM


class Join:
    """The grid of a whole sweep from its models' grids, appended in order, one model each.

    Every variable with a ``model`` dimension is allocated whole when the first model's grid
    comes and each model's values are copied into their place as it comes, so a model's grid
    can be released once its tables are written: what is held at once is the whole grid and the
    models in flight, never every model's grid beside their join. The variables without a
    ``model`` dimension (devices' specs, the axes) are taken from the first grid, where every
    model's grid has them equal; strings are joined at the end (their widths differ).
    """

    def __init__(self, models: int) -> None:
        self.models = models
        self.count = 0
        self._coords: list[str] = []
        self._data: list[str] = []
        self._attrs: dict[Any, Any] = {}
        self._fixed: dict[str, xr.Variable] = {}  # no model dimension: the first grid's own
        self._like: dict[str, tuple[Any, Any]] = {}  # a model dimension: dims and attrs
        self._parts: dict[str, Any] = {}  # ... and the joined values (a list for strings)

    def _start(self, piece: xr.Dataset) -> None:
        self._coords = [str(name) for name in piece.coords]
        self._data = [str(name) for name in piece.data_vars]
        self._attrs = dict(piece.attrs)
        for key, variable in piece.variables.items():
            name = str(key)
            if "model" not in variable.dims:
                self._fixed[name] = variable
                continue
            self._like[name] = (variable.dims, dict(variable.attrs))
            if variable.dtype.kind in "US":
                self._parts[name] = []
                continue
            shape = list(variable.shape)
            shape[variable.dims.index("model")] = self.models
            self._parts[name] = np.empty(shape, variable.dtype)

    def append(self, piece: xr.Dataset) -> None:
        """Copy the grid of the next model into its place."""
        if self.count == 0:
            self._start(piece)
        for name, target in self._parts.items():
            variable = piece.variables[name]
            if isinstance(target, list):
                target.append(variable.values)
                continue
            place = [slice(None)] * variable.ndim
            place[variable.dims.index("model")] = slice(self.count, self.count + 1)
            target[tuple(place)] = variable.values
        self.count += 1

    def _variable(self, name: str) -> xr.Variable:
        if name in self._fixed:
            return self._fixed[name]
        (dims, attrs), data = self._like[name], self._parts[name]
        if isinstance(data, list):
            data = np.concatenate(data, dims.index("model"))
        return xr.Variable(dims, data, attrs)

    def dataset(self) -> xr.Dataset:
        """The joined grid: the first model's variables' dims, attrs and order, every model's
        values."""
        if self.count != self.models:
            msg = f"joined {self.count} of {self.models} models' grids"
            raise RuntimeError(msg)
        coords = {name: self._variable(name) for name in self._coords}
        data = {name: self._variable(name) for name in self._data}
        return xr.Dataset(data, coords, self._attrs)


def write_in_pieces(
    sweep: Sweep,
    staging: Path,
    layout: str,
    budget: int,
    progress: Progress | None = None,
) -> tuple[dict[str, Written], xr.Dataset]:
    """Write every table of ``sweep`` into ``staging`` in ``layout`` from its models' grids,
    one model evaluated ahead of the writers; the tables written and the whole grid."""
    from sweeps.grid.build import build_grid

    chunks = plan_chunks(sweep, budget)  # one per model: the whole sweep fits the budget
    join = Join(len(chunks))
    streamed = stream_tables(sweep, chunks, staging, layout, progress, keep=join)
    written = {name: Written(*entry) for name, entry in streamed.items()}
    for name, table in spec_tables(sweep).items():
        info = write_frame(table, staging / f"{name}.parquet", name)
        written[name] = Written(table.height, info, [f"{name}.parquet"])
    return written, join.dataset() if join.count == len(chunks) else build_grid(sweep)
