"""Flatten the grid into tidy Polars frames, one row per point, straight from numpy.

Axis columns are built from integer codes (``Enum`` for names, integers for sizes); each
variable is broadcast from its natural dimensions to the full grid only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl
import xarray as xr

from sweeps.grid import BOTTLENECK_FLAGS, DECODE_DIMS, PREFILL_DIMS, REGISTRY, by_phase

NAME_AXES = ("model", "hardware", "kv_dtype", "weight_dtype")

DECODE_VARIABLES = tuple(v.name for v in by_phase("decode"))
PREFILL_VARIABLES = (
    "ridge_point",
    *(v.name for v in by_phase("prefill") if v.name != "prefill_memory_bound_prompt"),
)


Categories = Mapping[str, Sequence[str]]
"""Enum categories per name axis, to give a chunk's frame the whole sweep's schema."""


def _axis_column(
    ds: xr.Dataset,
    dim: str,
    dims: Sequence[str],
    shape: tuple[int, ...],
    categories: Categories | None = None,
) -> tuple[str, pl.Series]:
    axis = dims.index(dim)
    index = np.arange(shape[axis], dtype=np.uint32).reshape(
        [-1 if i == axis else 1 for i in range(len(shape))]
    )
    codes = np.broadcast_to(index, shape).reshape(-1)
    column = REGISTRY[dim].column_name
    if dim in NAME_AXES:
        labels = [str(v) for v in ds[dim].values]
        enum = pl.Enum(list(categories[dim]) if categories and dim in categories else labels)
        return column, pl.Series(column, labels, dtype=enum).gather(codes)
    if dim == "kv_heads":  # the effective head count, per model
        counts = ds["kv_heads_count"].transpose("model", "kv_heads").values
        model_codes = np.broadcast_to(
            np.arange(shape[0], dtype=np.intp).reshape([-1] + [1] * (len(shape) - 1)), shape
        ).reshape(-1)
        return column, pl.Series(column, counts[model_codes, codes], dtype=pl.Int64)
    values = np.asarray(ds[dim].values, dtype=np.int64)
    return column, pl.Series(column, values[codes], dtype=pl.Int64)


def _values(ds: xr.Dataset, name: str, dims: Sequence[str], shape: tuple[int, ...]) -> np.ndarray:
    da = ds[name]
    expanded = da.transpose(*[d for d in dims if d in da.dims]).values
    view = expanded.reshape([shape[i] if d in da.dims else 1 for i, d in enumerate(dims)])
    return np.broadcast_to(view, shape).reshape(-1)


def _column(ds: xr.Dataset, name: str, dims: Sequence[str], shape: tuple[int, ...]) -> pl.Series:
    column = REGISTRY[name].column_name
    values = _values(ds, name, dims, shape)
    if name in ("bottleneck", "prefill_bottleneck"):
        return pl.Series(
            column, list(BOTTLENECK_FLAGS), dtype=pl.Enum(list(BOTTLENECK_FLAGS))
        ).gather(values.astype(np.uint32))
    if name == "ridge_batch":
        return pl.Series(column, values, dtype=pl.Float64, nan_to_null=True)
    return pl.Series(column, values)


def _frame(
    ds: xr.Dataset, dims: Sequence[str], names: Sequence[str], categories: Categories | None = None
) -> pl.DataFrame:
    shape = tuple(ds.sizes[d] for d in dims)
    columns = [_axis_column(ds, d, dims, shape, categories)[1] for d in dims]
    native = _native_flag(ds, dims, shape)
    columns.insert(dims.index("kv_heads") + 1, native)
    columns += [_column(ds, name, dims, shape) for name in names]
    return pl.DataFrame(columns)


def _native_flag(ds: xr.Dataset, dims: Sequence[str], shape: tuple[int, ...]) -> pl.Series:
    axis = dims.index("kv_heads")
    native = np.asarray([label == "native" for label in ds["kv_heads"].values])
    view = native.reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return pl.Series("kv_heads_native", np.broadcast_to(view, shape).reshape(-1))


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
