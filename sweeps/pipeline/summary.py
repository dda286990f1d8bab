"""The summary of a sweep: one row per model, hardware, tp, context, KV setting and dtype.

Answers the package's question per configuration: the ceiling, the knee, the memory wall, the
ridge batch (or never) and whether ``ceiling_fraction`` of the ceiling fits before memory
runs out. A Polars frame, so the CLI, the report and users all read the same thing.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import xarray as xr

from sweeps.axes import AXIS
from sweeps.config import NATIVE
from sweeps.grid.analyses.decode import CONFIGURATION as SUMMARY_DIMS
from sweeps.grid.analyses.decode import SUMMARY as SUMMARY_VARIABLES


def summarize(ds: xr.Dataset) -> pl.DataFrame:
    """Per-configuration summary of the decode grid; ``ridge_batch`` null where never reached.

    The KV-head setting is the count in effect (``kv_heads``) with ``kv_heads_native`` beside
    it, as in ``decode.parquet``, so the summary joins the decode table on its axis columns.
    """
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
        if AXIS[str(dim)].kind == "heads":  # as in the decode table: the count in effect
            counts = ds["kv_heads_count"].broadcast_like(table[SUMMARY_VARIABLES[0]])
            columns[str(dim)] = counts.transpose(*table.dims).values.reshape(-1)
            columns[f"{dim}_native"] = labels[codes] == NATIVE
            continue
        if labels.dtype == object:  # name axes: the decode table's Enum
            names = [str(v) for v in labels]
            columns[str(dim)] = pl.Series(str(dim), names, dtype=pl.Enum(names))[codes]
        else:
            columns[str(dim)] = labels[codes]
    for name in SUMMARY_VARIABLES:
        da = xr.broadcast(table[name], *[table[v] for v in SUMMARY_VARIABLES])[0]
        columns[name] = da.transpose(*table.dims).values.reshape(-1)
    frame = pl.DataFrame(columns)
    return frame.with_columns(
        pl.col("ridge_batch").fill_nan(None),
        fits=pl.col("max_batch") >= 1,
    )
