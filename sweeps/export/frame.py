"""Flatten the grid into tidy Polars frames, one row per point, straight from numpy.

Axis columns are built from integer codes (``Enum`` for names, integers for sizes); each
variable is broadcast from its natural dimensions to the full grid only here, and only as far
as it must be: rows come in blocks (``_Layout``), and a column that repeats a block (weights do
not change with the device, a device's ridge point not with the model) holds that block once
and refers to it wherever it repeats. Full-rank variables are the grid's own arrays, zero-copy.
The frames equal fully copied ones; call ``.rechunk()`` for one contiguous array per column.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import polars as pl
import xarray as xr

from sweeps.axes import AXIS, DIMS
from sweeps.catalog.records import HARDWARE_SPECS, MODEL_SPECS, Spec
from sweeps.config import NATIVE
from sweeps.engine.base import LABELS
from sweeps.export.enums import dates, format_enum, shared_enum
from sweeps.grid import BOTTLENECK_FLAGS, REGISTRY, TABLES, Analysis
from sweeps.grid.analyses import BY_NAME

Categories = Mapping[str, Sequence[str]]
"""Enum categories per name axis, to give a chunk's frame the whole sweep's schema."""


@dataclass(frozen=True)
class _Layout:
    """How a frame's rows split into blocks: the first ``outer`` dims index the blocks.

    A column that does not vary over some of those dims repeats the same block of rows; the
    frame then holds that block once and refers to it from every place it repeats (Polars
    columns are lists of chunks that may share memory), instead of copying it out to the whole
    grid. Only columns that vary over every outer dim are written out in full.
    """

    dims: tuple[str, ...]
    shape: tuple[int, ...]
    outer: int

    @property
    def rows(self) -> int:
        return math.prod(self.shape)


_MIN_BLOCK_ROWS = 1 << 13  # smaller blocks would cost more in chunk bookkeeping than they save
_MAX_BLOCKS = 1 << 12


def _layout(dims: Sequence[str], shape: tuple[int, ...]) -> _Layout:
    """The deepest split with at most ``_MAX_BLOCKS`` blocks of at least ``_MIN_BLOCK_ROWS``."""
    outer = 0
    for k in range(1, len(shape)):
        if math.prod(shape[:k]) > _MAX_BLOCKS or math.prod(shape[k:]) < _MIN_BLOCK_ROWS:
            break
        outer = k
    return _Layout(tuple(dims), shape, outer)


Make = Callable[[np.ndarray], pl.Series]
"""Turns a raveled block of values into a column (plain, Enum or with NaN as null)."""


def _full(view: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``view`` broadcast to ``shape`` and raveled: zero-copy where it already spans it."""
    if view.shape == shape and view.flags.c_contiguous:
        return view.reshape(-1)
    out = np.empty(math.prod(shape), view.dtype)
    np.copyto(out.reshape(shape), view)
    return out


def _spread(values: np.ndarray, own: Sequence[str], layout: _Layout, make: Make) -> pl.Series:
    """The column of ``values`` (over dims ``own``, in the order of ``layout.dims``) for every
    row of the grid, each distinct block of rows built once (see ``_Layout``)."""
    dims, shape, k = layout.dims, layout.shape, layout.outer
    view = np.asarray(values).reshape([shape[i] if d in own else 1 for i, d in enumerate(dims)])
    outer = view.shape[:k]
    if outer == shape[:k]:  # varies over every outer dim: nothing repeats at block level
        return make(_full(view, shape))
    inner = shape[k:]
    blocks = [make(_full(view[index], inner)) for index in np.ndindex(*outer)]
    which = np.broadcast_to(np.arange(len(blocks)).reshape(outer), shape[:k]).reshape(-1)
    return pl.concat([blocks[i] for i in which.tolist()], rechunk=False)


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


class Repeats:
    """Columns that come again, value for value, in the frames of every model of a sweep
    computed model by model (``sweeps.pipeline.pieces``): the batch and dtype axes, a
    device's ridge point or its compute dtype. Each is built once and shared by the frames
    after it (Polars columns share memory), instead of being copied out again for every
    model: on issue 14's grid, 140 of the 180 ms a model's two frames took on one core.

    Only columns that do not vary with the model are held (the others would never come
    again), and only those spread from at most ``REPEATS_MAX`` values. A column is looked up
    by its name, the frame's layout and the values it is spread from, so what is found is
    the column those values give. Columns are held as long as the object is.
    """

    def __init__(self) -> None:
        self._columns: dict[tuple[object, ...], pl.Series] = {}

    def column(self, key: tuple[object, ...], build: Callable[[], pl.Series]) -> pl.Series:
        """The column under ``key``, built by ``build`` the first time."""
        found = self._columns.get(key)
        if found is None:
            found = self._columns[key] = build()
        return found


REPEATS_MAX = 1 << 16
"""Columns spread from more values than this are not held in ``Repeats``."""


def _repeated(
    repeats: Repeats | None,
    values: np.ndarray,
    own: Sequence[str],
    key: tuple[object, ...],
    build: Callable[[], pl.Series],
) -> pl.Series:
    """``build()``, or the column ``repeats`` holds for the same ``key`` and ``values`` (over
    dims ``own``; see ``Repeats``)."""
    if repeats is None or "model" in own or values.size > REPEATS_MAX:
        return build()
    content: object = values.tobytes()
    if values.dtype == object:  # labels, as ``_label_spread`` reads them
        content = tuple(v if isinstance(v, str) else None for v in values.reshape(-1))
    return repeats.column((*key, tuple(own), values.dtype.str, values.shape, content), build)


def _axis_column(
    ds: xr.Dataset,
    dim: str,
    layout: _Layout,
    categories: Categories | None = None,
    repeats: Repeats | None = None,
) -> pl.Series:
    axis = AXIS[dim]
    column = axis.column_name
    own: tuple[str, ...] = (dim,)
    if axis.kind == "name":
        labels = [str(v) for v in ds[dim].values]
        enum = shared_enum(dim, categories[dim] if categories and dim in categories else labels)
        values = pl.Series(column, labels, dtype=enum).to_physical().to_numpy()
        make: Make = partial(_enum_series, column, enum=enum, checked=True)
        key: tuple[object, ...] = (column, layout, enum)
    elif axis.kind == "heads":  # the effective head count, per model
        own = ("model", dim)
        variable = ds.variables["kv_heads_count"].transpose(*own)
        values = np.asarray(variable.values, np.int64)
        make, key = partial(pl.Series, column), (column, layout)
    else:
        kind = np.float64 if axis.kind == "value" else np.int64
        values = np.asarray(ds[dim].values, dtype=kind)
        # a value axis's NaN label (prefix_hit_rate = "trace": no one number) is a null
        make = partial(pl.Series, column, nan_to_null=axis.kind == "value")
        key = (column, layout)
    return _repeated(repeats, values, own, key, partial(_spread, values, own, layout, make))


_BOTTLENECK = pl.Enum(list(BOTTLENECK_FLAGS))


def _label_spread(name: str, values: np.ndarray, own: Sequence[str], layout: _Layout) -> pl.Series:
    """Labels (an object array over dims ``own``) as a String column for every row, null where
    a value is no label: each distinct label made once and gathered by integer codes spread
    as any number column is (a Python string per row cost 0.09 s per 2 M rows)."""
    flat = [v if isinstance(v, str) else None for v in np.asarray(values).reshape(-1)]
    distinct = list(dict.fromkeys(flat))
    index = {label: code for code, label in enumerate(distinct)}
    codes = np.fromiter((index[v] for v in flat), np.uint32, len(flat)).reshape(values.shape)
    lookup = pl.Series(name, distinct, dtype=pl.String)
    return _spread(codes, own, layout, lambda block: lookup.gather(block))


def _count_series(name: str, values: np.ndarray) -> pl.Series:
    """Whole numbers kept as floats in the grid (NaN: none) as a nullable Int64 column."""
    return pl.Series(name, values, dtype=pl.Float64, nan_to_null=True).cast(pl.Int64)


def _nullbool_series(name: str, values: np.ndarray) -> pl.Series:
    """Yes/no kept as floats in the grid (1, 0; NaN: none) as a nullable Boolean column."""
    return pl.Series(name, values, dtype=pl.Float64, nan_to_null=True).cast(pl.Boolean)


def _column(
    ds: xr.Dataset, name: str, layout: _Layout, repeats: Repeats | None = None
) -> pl.Series:
    entry = REGISTRY[name]
    column = entry.column_name
    variable = ds.variables[name]  # not ds[name]: a DataArray would gather its coordinates
    own = [d for d in layout.dims if d in variable.dims]
    values = variable.transpose(*own).values
    make: Make = partial(pl.Series, column)
    if entry.dtype == "flag":
        make = partial(_enum_series, column, enum=_BOTTLENECK, checked=False)
    elif entry.dtype in ("nullable", "float64"):  # a value that does not exist is null, never NaN
        make = partial(pl.Series, column, dtype=pl.Float64, nan_to_null=True)
    elif entry.dtype == "count":  # a whole number, null where there is none
        make = partial(_count_series, column)
    elif entry.dtype == "nullbool":  # a yes/no, null where there is nothing to say it of
        make = partial(_nullbool_series, column)
    elif entry.dtype in LABELS:  # a label; the grid may hold NaN where there is none
        build = partial(_label_spread, column, values, own, layout)
        return _typed(entry.dtype, _repeated(repeats, values, own, (name, column, layout), build))
    build = partial(_spread, values, own, layout, make)  # the variable's name: its make
    return _repeated(repeats, values, own, (name, column, layout), build)


def _typed(dtype: str, labels: pl.Series) -> pl.Series:
    """A label column as its ``DType`` says: a number format's Enum, a Date (``''``: null),
    or the String as it is."""
    if dtype == "format":
        return labels.cast(format_enum(labels.drop_nulls().unique().sort().to_list()))
    if dtype == "date":
        return dates(labels)
    return labels


def _native_flag(
    ds: xr.Dataset, dim: str, layout: _Layout, repeats: Repeats | None = None
) -> pl.Series:
    native = np.asarray([label == NATIVE for label in ds[dim].values])
    column = f"{dim}_native"
    build = partial(_spread, native, (dim,), layout, partial(pl.Series, column))
    return _repeated(repeats, native, (dim,), (column, layout), build)


_WORKERS = min(4, os.cpu_count() or 1)
_PARALLEL_MIN_ROWS = 1 << 20  # below this, starting threads costs more than they save


def table_frame(
    ds: xr.Dataset,
    analysis: Analysis | str,
    categories: Categories | None = None,
    repeats: Repeats | None = None,
) -> pl.DataFrame:
    """One row per point of ``analysis``'s dims: its axis columns, then its value columns.

    ``categories`` gives the Enum categories of name axes (default: ``ds``'s own labels); a
    chunk of a sweep passes the whole sweep's, so every part has the same schema. Columns
    already in ``repeats`` are taken from it, and those built are added to it.

    Columns that repeat share memory between their repeats (many chunks per column); the frame
    is ready to write or query, and ``.rechunk()`` gives one contiguous array per column.
    """
    table = BY_NAME[analysis] if isinstance(analysis, str) else analysis
    names = (*table.columns, *((table.rows,) if table.rows else ()))
    dims = table.dims_over(set(map(str, ds.dims)), DIMS)
    frame = _columns(ds, dims, names, categories, repeats)
    if table.rows:  # grid points that stand for no row (a colocated plan on two devices)
        frame = frame.filter(pl.col(REGISTRY[table.rows].column_name)).drop(table.rows)
    return frame


def _columns(
    ds: xr.Dataset,
    dims: tuple[str, ...],
    names: Sequence[str],
    categories: Categories | None,
    repeats: Repeats | None,
) -> pl.DataFrame:
    layout = _layout(dims, tuple(ds.sizes[d] for d in dims))
    jobs: list[Callable[[], pl.Series]] = []
    for dim in dims:
        jobs.append(partial(_axis_column, ds, dim, layout, categories, repeats))
        if AXIS[dim].kind == "heads":  # the setting's label lives on as a flag beside the count
            jobs.append(partial(_native_flag, ds, dim, layout, repeats))
    jobs += [partial(_column, ds, name, layout, repeats) for name in names]
    if _WORKERS < 2 or layout.rows < _PARALLEL_MIN_ROWS:
        return pl.DataFrame([job() for job in jobs])
    # The columns written out in full are copies into new memory (numpy releases the GIL),
    # so two threads fill columns side by side, as Polars' own writer uses its thread pool.
    with ThreadPoolExecutor(_WORKERS) as pool:
        return pl.DataFrame(list(pool.map(lambda job: job(), jobs)))


def decode_frame(ds: xr.Dataset, categories: Categories | None = None) -> pl.DataFrame:
    """One row per decode point: the axes, then every decode column (see ``table_frame``)."""
    return table_frame(ds, "decode", categories)


def prefill_frame(ds: xr.Dataset, categories: Categories | None = None) -> pl.DataFrame:
    """One row per prefill point; the prompt length is the ``context`` column."""
    return table_frame(ds, "prefill", categories)


def _spec_frame(ds: xr.Dataset, dim: str, specs: Sequence[Spec]) -> pl.DataFrame:
    # the key column has the Enum type of the analysis tables' column, so a join needs no cast
    labels = [str(v) for v in ds[dim].values]
    column = AXIS[dim].column_name
    columns: dict[str, object] = {column: pl.Series(column, labels, dtype=shared_enum(dim, labels))}
    for spec in specs:
        if spec.name in ds.coords and ds[spec.name].dims == (dim,):
            values = ds[spec.name].values
            columns[spec.column_name] = (
                [str(v) for v in values] if values.dtype == object else values
            )
    return pl.DataFrame(columns)


def _no_nan(frame: pl.DataFrame) -> pl.DataFrame:
    """Every float column with NaN as null: a value that does not exist is null, never NaN."""
    floats = [c for c, kind in frame.schema.items() if kind in (pl.Float32, pl.Float64)]
    return frame.with_columns(pl.col(c).fill_nan(None) for c in floats)


def hardware_frame(ds: xr.Dataset) -> pl.DataFrame:
    """The device specs actually used, one row each, SI units; a price's date as a Date;
    null where a figure is not known (a price, a peak, a board power)."""
    frame = _no_nan(_spec_frame(ds, "hardware", HARDWARE_SPECS))
    if "price_as_of" in frame.columns:
        frame = frame.with_columns(dates(frame["price_as_of"].cast(pl.String)))
    return frame


def models_frame(ds: xr.Dataset) -> pl.DataFrame:
    """The model specs actually used, one row each (null where a figure does not exist)."""
    return _no_nan(_spec_frame(ds, "model", MODEL_SPECS))


SPEC_TABLES = {"hardware": hardware_frame, "models": models_frame}
"""The spec tables, by name, and the function making each from a grid."""

TABLE_NAMES: tuple[str, ...] = (*(t.name for t in TABLES), *SPEC_TABLES)
"""Every table a result may have: one per analysis that has one, then the spec tables."""


def table_names(ds: xr.Dataset) -> tuple[str, ...]:
    """The tables of the grid ``ds``: those of the analyses it holds, then the spec tables."""
    held = tuple(t.name for t in TABLES if all(v.name in ds.data_vars for v in t.variables))
    return (*held, *SPEC_TABLES)


def frame(ds: xr.Dataset, name: str, categories: Categories | None = None) -> pl.DataFrame:
    """The table ``name`` (one of ``TABLE_NAMES``) of the grid ``ds``."""
    if name in SPEC_TABLES:
        return SPEC_TABLES[name](ds)
    return table_frame(ds, name, categories)
