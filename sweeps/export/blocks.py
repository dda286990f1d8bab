"""``grid.zarr`` written model by model, as each model's grid is computed (issue 25, item 5).

A grid computed one model at a time (``sweeps.pipeline.pieces``) used to be joined whole and
then written as one Zarr store at the end: 2.5-2.7 s of a 16.8 M-point run after every table
was written, with one core idle. ``ZarrBlocks`` writes the store while the tables are written
instead: the first model's grid creates it (every array with the whole grid's chunks,
encoding and attributes: ``sweeps.export.grid.zarr_encoding`` of the whole grid's shapes),
its arrays with a ``model`` dimension are then resized to every model, and each model's grid
fills its region, on a thread of its own, in order. The arrays stored as one chunk over every
model, and the strings, are held and written once after the last model's region, every
model's values together (a region write would read back, decompress and recompress that one
chunk for each model: 39 of issue 14's 59 arrays with a ``model`` dimension). The metadata is
consolidated last, still on that thread, while the tables' last rows are written. The store
opens to the grid ``to_zarr`` writes of the whole grid, value for value, with the same chunks
and codecs. A model's grid may come in parts over its devices (the first model's first device
is a part of its own, ``sweeps.grid.parts``): they are joined on the writer's thread, not on
the one computing the grid.
"""

from __future__ import annotations

import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import xarray as xr

from sweeps.export.grid import chunk_shape, zarr_encoding
from sweeps.grid.parts import ModelParts, join_devices


def _whole_shape(variable: xr.Variable, models: int) -> tuple[int, ...]:
    """The shape of ``variable`` (one model's) in the grid of ``models`` models."""
    return tuple(
        models if dim == "model" else n
        for dim, n in zip(variable.dims, variable.shape, strict=True)
    )


def _text(variable: xr.Variable) -> bool:
    return variable.dtype.kind in "USO"


def _held(variable: xr.Variable, models: int) -> bool:
    """Whether a variable with a ``model`` dimension is held until the last model's grid and
    written once, every model's values together, rather than region by region: strings
    (``_write_held``) and variables stored as one chunk over every model (``chunk_shape``),
    whose region write would read, decompress, merge and recompress that chunk again for each
    model."""
    chunks = chunk_shape(variable, _whole_shape(variable, models))
    return _text(variable) or chunks[variable.dims.index("model")] != 1


def _assign(group: Any, name: str, variable: xr.Variable, place: tuple[slice, ...]) -> None:
    """``variable`` encoded by xarray's own Zarr encoder (as the whole grid's variables are:
    bools as int8, strings by their values, ...) into ``place`` of the array ``name`` of
    ``group`` (an open zarr group, or the arrays opened from one)."""
    import zarr
    from xarray.backends.zarr import encode_zarr_variable

    encoded = encode_zarr_variable(variable, name=name, zarr_format=3)
    cast(zarr.Array, group[name])[place] = encoded.values


class ZarrBlocks:
    """The Zarr store at ``path`` of a grid of ``models`` models, written one model's grid at a
    time (``append``, in the models' order; a model's grid whole, or in parts over consecutive
    devices, ``devices`` per model in all, None: whole models) on a thread of its own, which
    joins a model's parts (``join_devices``) and finishes the store after the last model
    (``_finish``); ``close`` waits for it.

    A failed write is raised by the next ``append`` (so the run stops early) or by ``close``;
    ``abort`` waits for the write under way and drops the rest (the caller's atomic folder
    then removes the partial store).
    """

    def __init__(self, path: Path, models: int, devices: int | None = None) -> None:
        self.path = path
        self.models = models
        self._parts = ModelParts(models, devices)
        self._model: list[xr.Dataset] = []  # the parts of the model under way
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="sweeps-grid-file")
        self._writes: list[Future[None]] = []
        self._arrays: dict[str, Any] = {}  # the open arrays written region by region (_create)
        self._held: dict[str, list[xr.Variable]] = {}  # the others, each model's: with the last

    def append(self, piece: xr.Dataset) -> None:
        """Queue the grid of the next model, or the next part of it; raise a failed earlier
        write's error."""
        for done in (w for w in self._writes if w.done()):
            done.result()
        self._model.append(piece)
        if not self._parts.add(piece):
            return
        parts, self._model = self._model, []
        self._writes.append(self._pool.submit(self._write, parts, self._parts.complete - 1))

    def _write(self, parts: list[xr.Dataset], index: int) -> None:
        from sweeps.export.failures import writing

        piece = join_devices(parts)
        parts.clear()  # not held beside the joined grid while it is written (the call's args)
        with writing(self.path):
            if index == 0:
                self._create(piece)
            else:
                self._write_region(piece, index)
        for key, variable in piece.variables.items():  # the rest: written with the last
            if "model" in variable.dims and str(key) not in self._arrays:
                self._held.setdefault(str(key), []).append(variable)
        if index == self.models - 1:
            self._finish()

    def _write_region(self, piece: xr.Dataset, index: int) -> None:
        """The numbers of the ``index``-th model's grid into their region of the arrays with a
        ``model`` dimension (``_assign``). xarray's ``to_zarr(region=...)`` does the same with
        more around it: measured on issue 14's grid, 3.7 CPU-s for seven models' regions
        through it, 2.6 CPU-s straight into the arrays, where zstd alone takes about 2.1. The
        arrays are opened once, by ``_create`` (opening one reads and parses its metadata)."""
        for key, variable in piece.variables.items():
            if str(key) not in self._arrays:
                continue
            place = tuple(
                slice(index, index + 1) if d == "model" else slice(None) for d in variable.dims
            )
            _assign(self._arrays, str(key), variable, place)

    def _create(self, piece: xr.Dataset) -> None:
        """The store from the first model's grid: its values, the whole grid's chunks."""
        import zarr

        shapes = {str(k): _whole_shape(v, self.models) for k, v in piece.variables.items()}
        encoding = zarr_encoding(piece, shapes)
        for key, variable in piece.coords.items():  # as zarr chunks them in the whole grid
            if "model" in variable.dims and str(key) not in encoding:
                encoding[str(key)] = {"chunks": shapes[str(key)]}
        piece.to_zarr(self.path, mode="w-", zarr_format=3, consolidated=False, encoding=encoding)
        group = zarr.open_group(self.path, mode="r+", zarr_format=3)
        for name, variable in piece.variables.items():
            if "model" in variable.dims:
                cast(zarr.Array, group[str(name)]).resize(shapes[str(name)])
        group = zarr.open_group(self.path, mode="r+", zarr_format=3)  # the resized metadata
        self._arrays = {
            str(name): group[str(name)]
            for name, variable in piece.variables.items()
            if "model" in variable.dims and not _held(variable, self.models)
        }

    def close(self) -> None:
        """Wait for every write (the last one finishes the store, ``_finish``); raise a write's
        error."""
        try:
            for write in self._writes:
                write.result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._parts.complete != self.models:
            msg = f"{self.path}: {self._parts.complete} of {self.models} models' grids written"
            raise RuntimeError(msg)

    def _finish(self) -> None:
        """Once the last model's region is written, on the writer's thread: the held
        variables (``_write_held``), then the store's consolidated metadata. Done here rather
        than in ``close``, it overlaps the tables' last rows instead of following them (0.12 s
        of issue 14's run on one core)."""
        import zarr

        from sweeps.export.failures import writing

        with writing(self.path):
            self._write_held()
        with writing(self.path), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Consolidated metadata is currently not")
            zarr.consolidate_metadata(self.path, zarr_format=3)

    def _write_held(self) -> None:
        """The variables held (``_held``), every model's at once. Strings (the ``model``
        labels among them) are encoded by xarray's own Zarr encoder as the whole grid's are
        (strings are encoded from their values: missing ones become "" where the variable
        holds any string, a model's alone with nothing but ``None`` would be the text "None"),
        then written straight into their arrays (a region write leaves index coordinates
        alone and encodes strings by the array's type, missing ones as "nan")."""
        import zarr

        group = zarr.open_group(self.path, mode="r+", zarr_format=3)
        for name, parts in self._held.items():
            _assign(group, name, xr.Variable.concat(parts, "model"), (slice(None),) * parts[0].ndim)
        self._held.clear()

    def abort(self) -> None:
        """Drop the writes not begun and wait for the one under way; raise nothing."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ZarrBlocks:
        return self

    def __exit__(self, *error: Any) -> None:
        self.abort()
