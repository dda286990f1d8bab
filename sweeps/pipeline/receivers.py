"""What receives each model's grid as a run computes it model by model (``sweeps.pipeline.pieces``).

``Join`` holds every model's grid, for what needs them all after the tables (a hook reading the
tables, a NetCDF grid file) and joins them into the whole grid; ``Feed`` hands each model's
model-and-device slices to one hook as they come, and holds none once the hook has moved past
it. Each receives a model's grid in parts where the run cut it over its devices (the first
model's first device is a part of its own: ``sweeps.grid.parts``), counted by ``ModelParts``.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import xarray as xr

from sweeps.grid.parts import ModelParts, join_devices, rebuilt


class Join:
    """The grid of a whole sweep from its models' grids, appended in order: one model's grid
    each, or its parts over consecutive devices, ``devices`` per model in all (None: whole
    models); a model's parts are joined (``join_devices``) only with the whole grid.

    Used where the models' grids are needed after the tables (``write_pieces``: a hook that
    reads the tables, a NetCDF grid file). They are held as they come and joined only when
    ``dataset`` is asked for (the NetCDF file, or ``RunResult.dataset`` on first access), so a
    run that never asks for the joined grid never pays for it (3.5 s of copying, page faults
    mostly, for 16.8 M points on the development machine). Joining allocates every variable with a
    ``model`` dimension whole and copies each model's values into their place, releasing each
    model's grid once copied; the variables without a ``model`` dimension (devices' specs, the
    axes) are taken from the first grid, where every model's grid has them equal; strings are
    joined at the end (their widths differ).
    """

    def __init__(self, models: int, devices: int | None = None) -> None:
        self.models = models
        self._parts = ModelParts(models, devices)
        self._held: list[list[xr.Dataset]] = [[]]  # each model's parts, the last under way
        self._joined: xr.Dataset | None = None

    @property
    def count(self) -> int:
        """The models whose grids are held, every part of them."""
        return self._parts.complete

    def append(self, piece: xr.Dataset) -> None:
        """Hold the grid of the next model, or the next part of it."""
        self._held[-1].append(piece)
        if self._parts.add(piece):
            self._held.append([])

    def slices(self) -> Iterator[xr.Dataset]:
        """The one-model-one-device grids, in the whole grid's order, as views of the models'
        grids (``sweeps.charts.output.slices`` of the joined grid, without joining it)."""
        if self._joined is not None:
            yield from model_device_slices(self._joined)
            return
        for parts in self._held:
            for piece in parts:
                yield from model_device_slices(piece)

    def dataset(self) -> xr.Dataset:
        """The joined grid: the first model's variables' dims, attrs and order, every model's
        values."""
        if self._joined is not None:
            return self._joined
        if self.count != self.models:
            msg = f"joined {self.count} of {self.models} models' grids"
            raise RuntimeError(msg)
        grids = [join_devices(parts) for parts in self._held if parts]
        self._held = [[]]  # the parts go with their joined grids, each released once copied
        first = grids[0]
        fixed = {str(k): v for k, v in first.variables.items() if "model" not in v.dims}
        parts: dict[str, Any] = {}
        for key, variable in first.variables.items():
            if "model" not in variable.dims:
                continue
            if variable.dtype.kind in "USO":
                parts[str(key)] = []
                continue
            shape = list(variable.shape)
            shape[variable.dims.index("model")] = self.models
            parts[str(key)] = np.empty(shape, variable.dtype)
        for index in range(self.models):
            piece = grids[index]
            for name, target in parts.items():
                variable = piece.variables[name]
                if isinstance(target, list):
                    target.append(variable.values)
                    continue
                place = [slice(None)] * variable.ndim
                place[variable.dims.index("model")] = slice(index, index + 1)
                target[tuple(place)] = variable.values
            grids[index] = first if index == 0 else xr.Dataset()  # released: copied

        def whole(name: str) -> xr.Variable:
            if name in fixed:
                return fixed[name]
            like = first.variables[name]
            data = parts[name]
            if isinstance(data, list):
                data = np.concatenate(data, like.dims.index("model"))
            return xr.Variable(like.dims, data, like.attrs)

        self._joined = rebuilt(first, whole)
        return self._joined


class Feed:
    """The models' grids handed to one hook as they come: ``slices`` (on the hook's thread)
    yields each model's model-and-device slices once its grid (or a part of it over some of
    its devices, ``devices`` per model in all; None: whole models) is computed, and waits for
    the next, so that the hook draws each model beside the writers and no model's grid is held
    once the writers and the hook have moved past it (``Join`` holds them all to the end: on
    issue 14's 16.8 M-point grid 181 MB a model; measured, 614-632 k page faults against
    424-440 k, a peak RSS of 2.33-2.43 GB against 1.62-1.68 GB). ``fail`` ends the feed with
    an error (the tables failed: the hook stops, raising ``RuntimeError``); ``stop`` drops what
    is left once the hook is done (a hook need not read every slice)."""

    def __init__(self, models: int, devices: int | None = None) -> None:
        self.models = models
        self._parts = ModelParts(models, devices)
        self._queue: queue.SimpleQueue[xr.Dataset | BaseException | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._open = True

    @property
    def count(self) -> int:
        """The models whose grids were handed on, every part of them."""
        return self._parts.complete

    def append(self, piece: xr.Dataset) -> None:
        """Hand on the grid of the next model, or the next part of it (the feed ends after
        the last model's)."""
        with self._lock:
            self._parts.add(piece)
            if self._open:
                self._queue.put(piece)
                if self._parts.done:
                    self._queue.put(None)

    def fail(self, error: BaseException) -> None:
        """End the feed: ``slices`` raises once it reaches this (``error`` its cause)."""
        with self._lock:
            if self._open:
                self._queue.put(error)

    def stop(self) -> None:
        """The hook is done with the feed: drop the grids not read, and any to come."""
        with self._lock:
            self._open = False
            with contextlib.suppress(queue.Empty):
                while True:
                    self._queue.get_nowait()

    def slices(self) -> Iterator[xr.Dataset]:
        """The one-model-one-device grids, in the whole grid's order, each model's as soon as
        its grid is computed (``model_device_slices``)."""
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                msg = f"the run stopped after {self.count} of {self.models} models' grids"
                raise RuntimeError(msg) from item
            yield from model_device_slices(item)
            del item  # not held while the next model is awaited


def model_device_slices(ds: xr.Dataset) -> Iterator[xr.Dataset]:
    """``ds`` one model and one device at a time, as views, model by model."""
    for i in range(ds.sizes["model"]):
        for j in range(ds.sizes["hardware"]):
            yield ds.isel(model=slice(i, i + 1), hardware=slice(j, j + 1))
