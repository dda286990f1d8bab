"""The summary of a sweep: one row per model, hardware, tp, context, KV setting and dtype.

Answers the package's question per configuration: the ceiling, the knee, the memory wall, the
ridge batch (or never) and whether ``ceiling_fraction`` of the ceiling fits before memory
runs out. A Polars frame, so the CLI, the report and users all read the same thing.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import xarray as xr

from sweeps.axes import AXIS
from sweeps.config import NATIVE
from sweeps.engine.decode import CONFIGURATION
from sweeps.engine.decode import SUMMARY as SUMMARY_VARIABLES
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.export.enums import shared_enum
from sweeps.grid import REGISTRY

SUMMARY_DIMS = (*CONFIGURATION, "engine", *PARALLEL_DIMS)
"""A configuration's dims: the decode dims but the batch, the engine and the parallel axes a
sweep has (the engine only with ``axes.engine``)."""

EXPECTED_TERMS = (
    "expected_token_time_b1_s",
    "expected_device_tokens_per_s_b1",
    "expected_token_time_wall_s",
    "expected_device_tokens_per_s_wall",
)
"""What the summary says of a configuration's expectation, per engine (``axes.engine``)."""


def _names(ds: xr.Dataset) -> tuple[str, ...]:
    """The summary's variables in ``ds``: the bounds', and the expected ones where it has them."""
    expected = EXPECTED_TERMS if EXPECTED_TERMS[0] in ds.data_vars else ()
    return (*SUMMARY_VARIABLES, *expected)


def summary_rows(ds: xr.Dataset) -> int:
    """How many rows ``summarize(ds)`` has, without building them [row]."""
    held = {d for name in _names(ds) for d in ds[name].dims}
    return math.prod(ds.sizes[d] for d in SUMMARY_DIMS if d in held)


def summarize(ds: xr.Dataset) -> pl.DataFrame:
    """Per-configuration summary of the decode grid; ``ridge_batch`` null where never reached.

    Beside the intensities, what hardware is chosen by: the time per token and tokens/s per
    device at batch 1 and at the memory wall, and ``ttft_s``, the TTFT of one request at the
    first prompt length (``ds.prompt[0]``) where the grid has the prefill.

    Parameters
    ----------
    ds
        A grid with the decode analysis (``sweeps.run``).

    Returns
    -------
    pl.DataFrame
        One row per configuration (every decode axis but the batch). The KV-head setting is
        the count in effect (``kv_heads``) with ``kv_heads_native`` beside it, as in
        ``decode.parquet``, so the summary joins the decode table on its axis columns.
    """
    variables = {name: ds[name].variable for name in _names(ds)}
    if "ttft_s" in ds.data_vars:  # one request's TTFT: the first prompt, the smallest batch
        first = {"prompt": 0, "batch": int(np.argmin(ds["batch"].values))}
        variables["ttft_s"] = ds["ttft_s"].isel(first).variable
    held = {d for v in variables.values() for d in v.dims}
    dims = tuple(d for d in SUMMARY_DIMS if d in held)
    shape = tuple(ds.sizes[d] for d in dims)

    def spread(variable: xr.Variable) -> np.ndarray:
        """``variable`` over every dim of ``dims`` (numpy broadcasting, no alignment)."""
        own = [d for d in dims if d in variable.dims]
        values = variable.transpose(*own).values
        view = values.reshape([ds.sizes[d] if d in variable.dims else 1 for d in dims])
        return np.broadcast_to(view, shape).reshape(-1)

    columns: dict[str, object] = {}
    for axis, dim in enumerate(dims):
        index = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
        codes = np.broadcast_to(index, shape).reshape(-1)
        labels = ds[dim].values
        if AXIS[dim].kind == "heads":  # as in the decode table: the count in effect
            columns[dim] = spread(ds["kv_heads_count"].variable)
            columns[f"{dim}_native"] = labels[codes] == NATIVE
            continue
        if labels.dtype == object:  # name axes: the decode table's Enum
            names = [str(v) for v in labels]
            columns[dim] = pl.Series(dim, names, dtype=shared_enum(dim, names))[codes]
        else:
            columns[dim] = labels[codes]
    if "parallel" in ds.data_vars:  # which parallelism a row shows: tp8, tp1 ep8+dp, ...
        columns["parallel"] = spread(ds["parallel"].variable).astype(str)
    for name, variable in variables.items():
        columns[name] = spread(variable)
    frame = pl.DataFrame(columns)
    nullable = [n for n in variables if REGISTRY[n].dtype == "nullable"]
    return frame.with_columns(
        *(pl.col(name).fill_nan(None) for name in nullable),
        fits=pl.col("max_batch") >= 1,
    )
