"""``summary.parquet``: a run's answers as a table, one row per configuration, for BI tools.

The numbers the terminal summary prints (``sweeps.views.summary.summarize``) and a few more,
each computed at the point it names: the knee, the first batch reaching
``options.ceiling_fraction`` of the ceiling, the ridge batch, the memory wall, and the time per
token and throughput at batch 1 and at the wall itself (the closed form at the wall's batch,
not the nearest point of the batch axis, which ``decode.parquet`` holds). Throughput comes per
device (``device_tokens_per_s_*``) and per replica (``replica_tokens_per_s_*``, all ``tp x ep x
pp`` devices of one replica together); the column name and its description say which.

Columns are declared once here or in the variable registry, so the file's units and
descriptions (``summary_columns``), the DuckDB view and the docs' column table agree.
``EXTENSIONS`` is where a study adds columns of its own (expected figures of an engine, ...)
without this module knowing them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import xarray as xr

from sweeps.grid import REGISTRY, Variable

SUMMARY = "summary"
"""The table's name: ``summary.parquet`` and the ``summary`` view of ``sweep.duckdb``."""

WHOLE_TOLERANCE = 1e-9
"""Relative slack before rounding a batch up: 16.000000000001 sequences is 16, not 17."""

_V = Variable

OWN_COLUMNS: tuple[Variable, ...] = (
    _V(
        "ceiling_fraction",
        "1",
        "The share of the ceiling that ceiling_batch reaches (options.ceiling_fraction)",
    ),
    _V(
        "knee_batch_whole",
        "sequence",
        "First whole batch reaching half the ceiling (knee_batch rounded up)",
        "count",
    ),
    _V(
        "ceiling_batch_whole",
        "sequence",
        "First whole batch reaching ceiling_fraction of the ceiling (ceiling_batch rounded up)",
        "count",
    ),
    _V(
        "ridge_batch_whole",
        "sequence",
        "First whole batch where decode is compute-bound (ridge_batch rounded up; null: never)",
        "count",
    ),
    _V(
        "replica_devices",
        "device",
        "Devices of one replica, tp x ep x pp (throughput per replica is per device times this)",
        "int64",
    ),
    _V(
        "replica_tokens_per_s_b1",
        "token/s",
        "Decode throughput bound per replica (all its devices together) of one request alone "
        "(batch 1)",
    ),
    _V(
        "replica_tokens_per_s_wall",
        "token/s",
        "Decode throughput bound per replica (all its devices together) at the memory wall "
        "(batch max_batch, the closed form there, not the nearest grid batch; null: does not "
        "fit)",
        "nullable",
    ),
    _V(
        "ttft_s",
        "s",
        "Roofline bound on the time to first token of one request alone: the first prompt "
        "length, the smallest batch of the grid (null: the grid has no prefill, or that "
        "request does not fit)",
        "nullable",
    ),
    _V("fits", "-", "At least one sequence fits in memory (max_batch >= 1)", "bool"),
    _V(
        "reason",
        "-",
        "Why the row's time and throughput figures are null (null where it has them)",
        "str",
    ),
)
"""The columns the summary adds to the registry's (declared here, units and meaning)."""


@dataclass(frozen=True)
class Extension:
    """Columns a study adds to the summary: ``add(grid, frame)`` returns the frame with them,
    ``columns`` declares each one (unit, meaning). Registered in ``EXTENSIONS``."""

    name: str
    columns: tuple[Variable, ...]
    add: Callable[[xr.Dataset, pl.DataFrame], pl.DataFrame]


EXTENSIONS: list[Extension] = []
"""Extensions of the summary, in the order their columns come (e.g. an engine's expected
figures); each adds its columns only where its grid has what they need."""


def _declared() -> dict[str, Variable]:
    """Every column the summary can have, by column name: the decode, parallel and expected
    tables' axis and value columns, then this module's own and the extensions'."""
    from sweeps.engine.decode import SUMMARY as SUMMARY_VARIABLES
    from sweeps.export.parquet import declared_columns

    lookup = {**declared_columns("expected"), **declared_columns("decode")}
    lookup |= declared_columns("parallel")  # the engine axis and expected figures: expected
    for name in (*SUMMARY_VARIABLES, "wall_fraction_of_ceiling"):  # columns of no table
        lookup[name] = REGISTRY[name]
    for variable in (*OWN_COLUMNS, *(c for e in EXTENSIONS for c in e.columns)):
        lookup[variable.column_name] = variable
    return lookup


def summary_columns(frame: pl.DataFrame) -> dict[str, dict[str, str]]:
    """Unit and description of every column of the summary ``frame`` (``KeyError`` for one
    declared nowhere)."""
    lookup = _declared()
    info = {}
    for column in frame.columns:
        if column not in lookup:
            msg = f"column {column!r} of {SUMMARY}.parquet is not declared"
            raise KeyError(msg)
        entry = lookup[column]
        info[column] = {"unit": entry.unit, "description": entry.description}
    return info


def _whole(column: str) -> pl.Expr:
    """The first whole batch reaching ``column`` [sequence], null where it is null."""
    rounded = (pl.col(column) * (1 - WHOLE_TOLERANCE)).ceil().clip(lower_bound=1)
    return rounded.cast(pl.Int64).alias(f"{column}_whole")


def _replica_devices(ds: xr.Dataset, frame: pl.DataFrame) -> pl.Expr:
    """Devices per replica of each row: ``tp`` times the ``ep`` and ``pp`` degrees a sweep has."""
    devices = pl.col("tp").cast(pl.Int64)
    for dim in ("ep", "pp"):
        if dim in frame.columns:
            devices = devices * pl.col(dim).cast(pl.Int64)
    return devices.alias("replica_devices")


def _wall_fraction(ds: xr.Dataset, dims: Sequence[str]) -> pl.Series:
    """``wall_fraction_of_ceiling`` over the summary's rows (C order over ``dims``)."""
    variable = ds["wall_fraction_of_ceiling"].variable
    own = [d for d in dims if d in variable.dims]
    values = variable.transpose(*own).values
    view = values.reshape([ds.sizes[d] if d in variable.dims else 1 for d in dims])
    shape = tuple(ds.sizes[d] for d in dims)
    flat = np.broadcast_to(view, shape).reshape(-1)
    return pl.Series("wall_fraction_of_ceiling", flat, dtype=pl.Float64, nan_to_null=True)


def summary_frame(ds: xr.Dataset, ceiling_fraction: float) -> pl.DataFrame:
    """The summary table of the grid ``ds`` (whole, or at one batch size: the same rows).

    ``ceiling_fraction`` [1] is the sweep's ``options.ceiling_fraction`` (what
    ``ceiling_batch`` reaches), written beside the batches so a row says what it answers.
    Every float column is null, never NaN, where a value does not exist.
    """
    from sweeps.engine.decode import SUMMARY as SUMMARY_VARIABLES
    from sweeps.views.summary import EXPECTED_TERMS, SUMMARY_DIMS, summarize

    frame = summarize(ds)
    names = (*SUMMARY_VARIABLES, *(n for n in EXPECTED_TERMS if n in ds.data_vars))
    held = {d for name in names for d in ds[name].dims}  # summarize's rows: the engine's too
    if "ttft_s" in ds.data_vars:  # as summarize: the prefill's dims but prompt and batch
        held |= set(ds["ttft_s"].dims) - {"prompt", "batch"}
    dims = [d for d in SUMMARY_DIMS if d in held]
    frame = frame.with_columns(_wall_fraction(ds, dims))
    frame = frame.with_columns(
        pl.lit(ceiling_fraction, pl.Float64).alias("ceiling_fraction"),
        _whole("knee_batch"),
        _whole("ceiling_batch"),
        _whole("ridge_batch"),
        _replica_devices(ds, frame),
    )
    frame = frame.with_columns(
        (pl.col("device_tokens_per_s_b1") * pl.col("replica_devices")).alias(
            "replica_tokens_per_s_b1"
        ),
        (pl.col("device_tokens_per_s_wall") * pl.col("replica_devices")).alias(
            "replica_tokens_per_s_wall"
        ),
    )
    if "ttft_s" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Float64).alias("ttft_s"))
    for extension in EXTENSIONS:
        frame = extension.add(ds, frame)
    return _ordered(_no_nan(frame))


def _no_nan(frame: pl.DataFrame) -> pl.DataFrame:
    """Every float column with NaN as null: a value that does not exist is null, never NaN."""
    floats = [c for c, t in frame.schema.items() if t in (pl.Float32, pl.Float64)]
    return frame.with_columns(pl.col(c).fill_nan(None) for c in floats)


_ORDER = (
    "ceiling_fraction",
    "ceiling",
    "knee_batch",
    "knee_batch_whole",
    "ceiling_batch",
    "ceiling_batch_whole",
    "ceiling_reachable",
    "ridge_batch",
    "ridge_batch_whole",
    "max_batch",
    "fits",
    "wall_fraction_of_ceiling",
    "replica_devices",
    "token_time_b1_s",
    "device_tokens_per_s_b1",
    "replica_tokens_per_s_b1",
    "token_time_wall_s",
    "device_tokens_per_s_wall",
    "replica_tokens_per_s_wall",
    "ttft_s",
    "reason",
)
"""The value columns' order, after the configuration's; extensions' columns come last."""


def _ordered(frame: pl.DataFrame) -> pl.DataFrame:
    values = [c for c in _ORDER if c in frame.columns]
    keys = [c for c in frame.columns if c not in values and c not in _extension_columns()]
    extra = [c for c in frame.columns if c in _extension_columns()]
    return frame.select(*keys, *values, *extra)


def _extension_columns() -> set[str]:
    return {c.column_name for e in EXTENSIONS for c in e.columns}


def concat_summaries(parts: Sequence[pl.DataFrame], models: Sequence[str]) -> pl.DataFrame:
    """The summaries of a sweep's models, each from its own grid, as one table whose
    ``model`` column is the Enum of all of ``models`` (the whole sweep's, in its order)."""
    from sweeps.export.enums import shared_enum

    enum = shared_enum("model", models)
    return pl.concat([p.with_columns(pl.col("model").cast(pl.String).cast(enum)) for p in parts])


def write_summary(frame: pl.DataFrame, folder: Path) -> dict[str, dict[str, str]]:
    """Write the summary ``frame`` as ``folder/summary.parquet`` (units and descriptions in
    its metadata, as every table). Returns its ``{column: {unit, description}}`` map."""
    from sweeps.export.parquet import write_with_units

    info = summary_columns(frame)
    write_with_units(frame, folder / f"{SUMMARY}.parquet", info)
    return info
