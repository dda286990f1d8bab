"""The grid itself as a file, for xarray users: Zarr (the default), NetCDF-4, or none.

A big grid file is worth having only if it can be opened lazily and sliced without reading
all of it: both formats here are chunked one block per model and device for the full-rank
variables (the roofline outputs), so ``xr.open_zarr(path)`` or ``xr.open_dataset(path,
chunks={})`` reads one model on one device as one chunk per variable. Zarr is compressed
(zstd level 1) by several threads that release the GIL; NetCDF-4 with zlib (level 1,
shuffle), which HDF5 does in one thread holding it. docs/performance.md gives the measured figures.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import xarray as xr

GRID_FILES = {"zarr": "grid.zarr", "netcdf": "grid.nc"}
"""The file name of each grid format (``[outputs] grid``); ``none`` writes no grid file."""

BLOCK_DIMS = ("model", "hardware")
"""Dims a variable is cut along into chunks (one label per chunk) once it is big enough."""

MIN_CHUNKED = 1 << 16
"""Variables of fewer elements are one chunk: cutting them costs more than it saves."""


def chunk_shape(
    variable: xr.Variable | xr.DataArray, shape: tuple[int, ...] | None = None
) -> tuple[int, ...]:
    """The chunk of ``variable`` in the grid file: one per model and device when large; a
    dask-backed variable's own blocks (each written whole, by one task). ``shape`` is the
    variable's in the file where ``variable`` is only part of it (one model's grid)."""
    if variable.chunks:
        return tuple(int(sizes[0]) for sizes in variable.chunks)
    shape = variable.shape if shape is None else shape
    cut = math.prod(shape) >= MIN_CHUNKED
    return tuple(
        1 if cut and dim in BLOCK_DIMS else max(1, n)
        for dim, n in zip(variable.dims, shape, strict=True)
    )


def _netcdf_encoding(ds: xr.Dataset) -> dict[str, dict[str, Any]]:
    return {
        str(name): {
            "zlib": True,
            "complevel": 1,
            "shuffle": True,
            "chunksizes": chunk_shape(variable),
        }
        for name, variable in ds.data_vars.items()
        if variable.ndim and variable.dtype.kind in "biuf"
    }


ZARR_COMPRESSION_LEVEL = 1
"""zstd's level in the Zarr store. Measured on issue 14's 16.8 M-point grid (two cores): level
1 writes in 1.45 s and 271 MB, zarr's default (level 0, which zstd takes as 3) in 2.11 s and
237 MB; blosc with lz4 and byte shuffle in 1.34 s but 472 MB, blosc-zstd level 1 with
bitshuffle 2.17 s and 343 MB."""


def zarr_encoding(
    ds: xr.Dataset, shapes: Mapping[str, tuple[int, ...]] | None = None
) -> dict[str, dict[str, Any]]:
    """The Zarr encoding of ``ds``'s data variables: chunks (``chunk_shape``, of the shapes in
    ``shapes`` where given) and zstd at ``ZARR_COMPRESSION_LEVEL``."""
    from zarr.codecs import ZstdCodec

    compressors = [ZstdCodec(level=ZARR_COMPRESSION_LEVEL)]
    return {
        str(name): {
            "chunks": chunk_shape(variable, (shapes or {}).get(str(name))),
            "compressors": compressors,
        }
        for name, variable in ds.data_vars.items()
        if variable.ndim
    }


Written = Callable[[int, int], None]
"""Told after each piece of a grid file is written: (pieces written, pieces in all) [1]."""


def chunk_count(ds: xr.Dataset) -> int:
    """The chunks a Zarr store of ``ds`` holds: one per block of each data variable and
    coordinate (``zarr_encoding``'s chunks; a coordinate is one chunk) [chunk]."""
    encoding = zarr_encoding(ds)
    count = 0
    for name, variable in ds.variables.items():
        chunks = encoding.get(str(name), {}).get("chunks", variable.shape)
        blocks = (math.ceil(n / max(1, c)) for n, c in zip(variable.shape, chunks, strict=True))
        count += math.prod(blocks)
    return count


def _is_chunk(key: str) -> bool:
    """Whether a zarr v3 store's ``key`` holds a chunk of an array, not metadata."""
    return "/c/" in key or key.endswith("/c")


def _counting_store(path: str | Path, told: Written, total: int) -> Any:
    """A Zarr store at ``path`` telling ``told`` of every chunk written (or left out as
    empty: zarr deletes a chunk that is all fill value instead of writing it)."""
    from zarr.storage import LocalStore, WrapperStore

    class Counting(WrapperStore[LocalStore]):
        written = 0

        def _count(self, key: str) -> None:
            if _is_chunk(key):
                Counting.written += 1
                told(min(Counting.written, total), total)

        async def set(self, key: str, value: Any) -> None:
            await super().set(key, value)
            self._count(key)

        async def delete(self, key: str) -> None:
            await super().delete(key)
            self._count(key)

    return Counting(LocalStore(str(path)))


def to_zarr(ds: xr.Dataset, path: str | Path, told: Written | None = None) -> None:
    """Write ``ds`` to ``path`` as a Zarr v3 store, chunked, compressed with zstd at
    ``ZARR_COMPRESSION_LEVEL``, with consolidated metadata so that opening it reads one file,
    not one per variable; ``told`` after each chunk (of ``chunk_count``). A grid of up to
    ``STORED_IN_MEMORY`` bytes is stored in memory first and its files written after
    (``_in_memory``)."""
    encoding = zarr_encoding(ds)
    total = chunk_count(ds)
    small = ds.nbytes <= STORED_IN_MEMORY
    held: dict[str, Any] = {}
    if small:
        store = _in_memory(held)
    else:
        store = path if told is None else _counting_store(path, told, total)
    with warnings.catch_warnings():
        # consolidated metadata is zarr-python's extension to the v3 format: what xarray
        # opens by default, and read by every zarr-python 3
        warnings.filterwarnings("ignore", message="Consolidated metadata is currently not")
        ds.to_zarr(store, mode="w-", zarr_format=3, consolidated=True, encoding=encoding)
    if small:
        _write_files(held, Path(path), told, total)
    if told is not None:
        told(total, total)


STORED_IN_MEMORY = 64 * 2**20
"""The largest grid [byte] ``to_zarr`` stores in memory before writing its files: zarr's
local store hands every key to a thread of its event loop, which costs more than the bytes
for a small grid (the seed's 36-point grid of 80 variables: 0.9 s written straight, 0.4 s
through memory); the compressed copy held is smaller than the grid."""


def _in_memory(store: dict[str, Any]) -> Any:
    """A zarr store over the dict ``store`` (key to zarr buffer)."""
    from zarr.storage import MemoryStore

    return MemoryStore(store)


def _write_files(store: dict[str, Any], path: Path, told: Written | None, total: int) -> None:
    """Write the keys of an in-memory zarr store as ``LocalStore`` lays them out under
    ``path`` (which must not exist yet); ``told`` after each chunk."""
    path.mkdir(parents=True, exist_ok=False)
    written = 0
    for key, buffer in store.items():
        file = path / key
        file.parent.mkdir(parents=True, exist_ok=True)
        with file.open("xb") as out:
            out.write(buffer.to_bytes())
        if told is not None and _is_chunk(key):
            written += 1
            told(min(written, total), total)


def to_netcdf(ds: xr.Dataset, path: str | Path, told: Written | None = None) -> None:
    """Write ``ds`` to ``path`` as NetCDF-4 (h5netcdf), chunked and compressed; strings stay
    strings, bools round-trip; ``told`` once, when written (HDF5 writes it in one call)."""
    ds.to_netcdf(path, engine="h5netcdf", invalid_netcdf=False, encoding=_netcdf_encoding(ds))
    if told is not None:
        told(1, 1)


WRITERS = {"zarr": to_zarr, "netcdf": to_netcdf}


def write_grid(
    ds: xr.Dataset, path: str | Path, grid_format: str, told: Written | None = None
) -> None:
    """Write ``ds`` to ``path`` in ``grid_format``, one of ``GRID_FILES``; ``told`` as the
    file is written (``Written``: Zarr chunk by chunk, NetCDF once at the end)."""
    from sweeps.export.failures import writing

    with writing(path):
        WRITERS[grid_format](ds, path, told)


def open_grid(path: str | Path, chunks: Any = None) -> xr.Dataset:
    """Open a grid file written by ``write_grid`` (by its suffix); ``chunks={}`` opens it
    lazily with dask, one dask chunk per stored chunk."""
    path = Path(path)
    if path.suffix == ".zarr":
        return xr.open_zarr(path, chunks=chunks, consolidated=True)
    return xr.open_dataset(path, engine="h5netcdf", chunks=chunks)
