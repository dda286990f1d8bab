"""A model's grid handed on in parts over its devices, and joined where it is needed whole.

A run computed model by model cuts its first model after the first device
(``sweeps.grid.chunks.split_first_device``), so the writers get rows sooner. The parts go on
as they are to what receives each model's grid (``sweeps.pipeline.receivers``: the hooks' feeds
take model-and-device slices, which a part gives as well as a whole model; ``Join`` joins them
only if the whole grid is asked for), and ``grid.zarr``'s writer joins them on its own thread
(``sweeps.export.blocks.ZarrBlocks``: its store is created from the first model's whole grid).
Joined on the thread computing the grid, as before, the first model's 181 MB of issue 14's
grid took 0.34 s there while the writers waited for its rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xarray as xr


class ModelParts:
    """Which parts complete their model, as the parts of ``models`` models' grids come in
    order: each part one model's grid over consecutive devices, ``devices`` per model in all
    (None: every part is a whole model). ``complete`` counts the models complete so far."""

    def __init__(self, models: int, devices: int | None = None) -> None:
        self.models = models
        self.devices = devices
        self.complete = 0
        self._seen = 0  # devices of the model under way

    def add(self, part: xr.Dataset) -> bool:
        """Count ``part``; whether it completes its model."""
        if self.devices is not None:
            self._seen += part.sizes["hardware"]
            if self._seen < self.devices:
                return False
        self._seen = 0
        self.complete += 1
        return True

    @property
    def done(self) -> bool:
        """Whether every model is complete."""
        return self.complete >= self.models


def join_devices(parts: list[xr.Dataset]) -> xr.Dataset:
    """One model's grid from its grids over consecutive devices (``split_first_device``):
    every variable with a ``hardware`` dimension joined along it, the others (equal in every
    part) taken from the first; the first part's order, dims and attrs."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]

    def whole(name: str) -> xr.Variable:
        like = first.variables[name]
        if "hardware" not in like.dims:
            return like
        values = [part.variables[name].transpose(*like.dims).values for part in parts]
        joined = np.concatenate(values, like.dims.index("hardware"))
        return xr.Variable(like.dims, joined, like.attrs)

    return rebuilt(first, whole)


def rebuilt(first: xr.Dataset, whole: Callable[[str], xr.Variable]) -> xr.Dataset:
    """A dataset with ``first``'s coordinates, variables (in its order) and attrs, each
    variable ``whole(name)``."""
    coords = {str(name): whole(str(name)) for name in first.coords}
    data = {str(name): whole(str(name)) for name in first.data_vars}
    return xr.Dataset(data, coords, first.attrs)
