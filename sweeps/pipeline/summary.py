"""The summary of a sweep: one row per model, hardware, tp, context, KV setting and dtype.

Answers the package's question per configuration: the ceiling, the knee, the memory wall, the
ridge batch (or never) and whether ``ceiling_fraction`` of the ceiling fits before memory
runs out. A Polars frame, so the CLI, the report and users all read the same thing.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import xarray as xr

from sweeps.grid.analyses.decode import CONFIGURATION as SUMMARY_DIMS
from sweeps.grid.analyses.decode import SUMMARY as SUMMARY_VARIABLES


def summarize(ds: xr.Dataset) -> pl.DataFrame:
    """Per-configuration summary of the decode grid; ``ridge_batch`` null where never reached."""
    parts = {name: ds[name] for name in SUMMARY_VARIABLES}
    table = xr.Dataset(parts).drop_vars(
        [c for c in ds.coords if c not in SUMMARY_DIMS], errors="ignore"
    )
    table = table.broadcast_like(table).transpose(*[d for d in SUMMARY_DIMS if d in table.dims])
    shape = tuple(table.sizes[d] for d in table.dims)
    columns: dict[str, object] = {}
    for axis, dim in enumerate(table.dims):
        index = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
        codes = np.broadcast_to(index, shape).reshape(-1)
        labels = ds[dim].values
        columns[str(dim)] = (
            [str(v) for v in labels[codes]] if labels.dtype == object else labels[codes]
        )
    for name in SUMMARY_VARIABLES:
        da = xr.broadcast(table[name], *[table[v] for v in SUMMARY_VARIABLES])[0]
        columns[name] = da.transpose(*table.dims).values.reshape(-1)
    frame = pl.DataFrame(columns)
    return frame.with_columns(
        pl.col("ridge_batch").fill_nan(None),
        fits=pl.col("max_batch") >= 1,
    )
