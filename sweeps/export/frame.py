"""Flatten the grid into tidy Polars frames, one row per point, straight from numpy.

Axis columns are built from integer codes (``Enum`` for names, integers for sizes); each
variable is broadcast from its natural dimensions to the full grid only here.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import polars as pl
import xarray as xr

from sweeps.grid import BOTTLENECK_FLAGS, DECODE_DIMS, PREFILL_DIMS, REGISTRY, by_phase

NAME_AXES = ("model", "hardware", "kv_dtype", "weight_dtype")

DECODE_VARIABLES = tuple(v.name for v in by_phase("decode"))
PREFILL_VARIABLES = ("ridge_point", *(v.name for v in by_phase("prefill")))


Categories = Mapping[str, Sequence[str]]
"""Enum categories per name axis, to give a chunk's frame the whole sweep's schema."""


def _empty(size: int, dtype: np.dtype) -> np.ndarray:
    """A new 1-D array whose pages are mapped up front (``MAP_POPULATE`` where Linux has it).

    Filling fresh memory page fault by page fault costs several times the copy itself on
    virtual machines; one populating ``mmap`` call maps them all. Polars takes the array
    zero-copy and keeps it (and so the mapping) alive as long as the column.
    """
    nbytes = size * dtype.itemsize
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if not populate or nbytes < _POPULATE_MIN_BYTES:
        return np.empty(size, dtype)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=flags), dtype)


_POPULATE_MIN_BYTES = 1 << 20


def _spread(
    values: np.ndarray, own: Sequence[str], dims: Sequence[str], shape: tuple[int, ...]
) -> np.ndarray:
    """``values`` over dimensions ``own`` (in the order of ``dims``) repeated over the whole grid
    and raveled: one copy, or none when ``values`` already spans the grid contiguously."""
    view = np.asarray(values).reshape([shape[i] if d in own else 1 for i, d in enumerate(dims)])
    if view.shape == shape and view.flags.c_contiguous:
        return view.reshape(-1)
    out = _empty(int(np.prod(shape)), view.dtype)
    np.copyto(out.reshape(shape), view)
    return out


def _physical(enum: pl.Enum) -> np.dtype:
    """The numpy dtype of ``enum``'s physical codes (UInt8 for up to 256 categories in Polars 2)."""
    return np.dtype(pl.Series(dtype=enum).to_physical().to_numpy().dtype)


def _enum_series(name: str, codes: np.ndarray, enum: pl.Enum, checked: bool) -> pl.Series:
    """An Enum column from its physical ``codes`` without a gather where Polars allows it.

    ``checked``: the codes are known to be valid (built from ``enum`` itself), so Polars need not
    validate them.
    """
    physical = pl.Series(name, codes.astype(_physical(enum), copy=False))
    try:
        return physical.cat.to(enum, strict=not checked)
    except (AttributeError, TypeError, pl.exceptions.PolarsError):  # Polars without cat.to
        labels = pl.Series(name, enum.categories, dtype=enum)
        return labels.gather(physical.cast(pl.UInt32))


def _axis_column(
    ds: xr.Dataset,
    dim: str,
    dims: Sequence[str],
    shape: tuple[int, ...],
    categories: Categories | None = None,
) -> pl.Series:
    column = REGISTRY[dim].column_name
    if dim in NAME_AXES:
        labels = [str(v) for v in ds[dim].values]
        enum = pl.Enum(list(categories[dim]) if categories and dim in categories else labels)
        codes = pl.Series(column, labels, dtype=enum).to_physical().to_numpy()
        return _enum_series(column, _spread(codes, (dim,), dims, shape), enum, checked=True)
    if dim == "kv_heads":  # the effective head count, per model
        counts = np.asarray(ds["kv_heads_count"].transpose("model", "kv_heads").values, np.int64)
        return pl.Series(column, _spread(counts, ("model", "kv_heads"), dims, shape))
    values = np.asarray(ds[dim].values, dtype=np.int64)
    return pl.Series(column, _spread(values, (dim,), dims, shape))


def _values(ds: xr.Dataset, name: str, dims: Sequence[str], shape: tuple[int, ...]) -> np.ndarray:
    da = ds[name]
    own = [d for d in dims if d in da.dims]
    return _spread(da.transpose(*own).values, own, dims, shape)


_BOTTLENECK = pl.Enum(list(BOTTLENECK_FLAGS))


def _column(ds: xr.Dataset, name: str, dims: Sequence[str], shape: tuple[int, ...]) -> pl.Series:
    column = REGISTRY[name].column_name
    values = _values(ds, name, dims, shape)
    if name in ("bottleneck", "prefill_bottleneck"):
        return _enum_series(column, values, _BOTTLENECK, checked=False)
    if name == "ridge_batch":
        return pl.Series(column, values, dtype=pl.Float64, nan_to_null=True)
    return pl.Series(column, values)


def _frame(
    ds: xr.Dataset, dims: Sequence[str], names: Sequence[str], categories: Categories | None = None
) -> pl.DataFrame:
    shape = tuple(ds.sizes[d] for d in dims)
    jobs: list[Callable[[], pl.Series]] = [
        partial(_axis_column, ds, d, dims, shape, categories) for d in dims
    ]
    jobs.insert(dims.index("kv_heads") + 1, partial(_native_flag, ds, dims, shape))
    jobs += [partial(_column, ds, name, dims, shape) for name in names]
    if _WORKERS < 2 or int(np.prod(shape)) < _PARALLEL_MIN_ROWS:
        return pl.DataFrame([job() for job in jobs])
    # Most of the work is copying into new memory (numpy and mmap release the GIL), so two
    # threads fill columns side by side, as Polars' own writer uses its thread pool.
    with ThreadPoolExecutor(_WORKERS) as pool:
        return pl.DataFrame(list(pool.map(lambda job: job(), jobs)))


_WORKERS = min(4, os.cpu_count() or 1)
_PARALLEL_MIN_ROWS = 1 << 20  # below this, starting threads costs more than they save


def _native_flag(ds: xr.Dataset, dims: Sequence[str], shape: tuple[int, ...]) -> pl.Series:
    native = np.asarray([label == "native" for label in ds["kv_heads"].values])
    return pl.Series("kv_heads_native", _spread(native, ("kv_heads",), dims, shape))


def decode_frame(ds: xr.Dataset, categories: Categories | None = None) -> pl.DataFrame:
    """One row per decode point: the axes, then every decode variable of the registry.

    ``categories`` gives the Enum categories of name axes (default: ``ds``'s own labels); a
    chunk of a sweep passes the whole sweep's, so every part has the same schema.
    """
    return _frame(ds, DECODE_DIMS, DECODE_VARIABLES, categories)


def prefill_frame(ds: xr.Dataset, categories: Categories | None = None) -> pl.DataFrame:
    """One row per prefill point; the prompt length is the ``context`` column."""
    return _frame(ds, PREFILL_DIMS, PREFILL_VARIABLES, categories)


def _spec_frame(ds: xr.Dataset, dim: str, phase: str) -> pl.DataFrame:
    columns: dict[str, object] = {dim: [str(v) for v in ds[dim].values]}
    for entry in by_phase(phase):  # type: ignore[arg-type]
        if entry.name in ds.coords and ds[entry.name].dims == (dim,):
            values = ds[entry.name].values
            columns[entry.column_name] = (
                [str(v) for v in values] if values.dtype == object else values
            )
    return pl.DataFrame(columns)


def hardware_frame(ds: xr.Dataset) -> pl.DataFrame:
    """The device specs actually used, one row each, SI units."""
    frame = _spec_frame(ds, "hardware", "hardware")
    return frame.with_columns(
        pl.col(c).fill_nan(None) for c in frame.columns if c.startswith("peak_")
    )


def models_frame(ds: xr.Dataset) -> pl.DataFrame:
    """The model specs actually used, one row each."""
    return _spec_frame(ds, "model", "model")
