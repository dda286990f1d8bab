"""From the grid to what a chart draws: one model and device selected, thinned, flattened.

No physics here: every number is a variable of the Dataset; this module only selects,
thins (above ``max_cells``) and flattens into a tidy Polars frame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from sweeps.errors import ConfigError
from sweeps.grid.variables import BOTTLENECK_FLAGS

from .theme import DOES_NOT_FIT

DEFAULT_MAX_CELLS = 4500
KV_FACETS = ("kv_heads", "kv_dtype")
"""Facet dimensions of the decode charts: columns, rows."""


@dataclass(frozen=True)
class Selection:
    """The part of the grid one chart shows: one model, one device, one tp and weight dtype.

    ``ds`` keeps the other dimensions (batch, context, prompt, kv_heads, kv_dtype; hardware
    too when ``hardware`` is ``None``); ``notes`` are subtitle lines saying what was left out.
    """

    ds: xr.Dataset
    model: str
    hardware: str | None
    tp: int
    weight_dtype: str
    max_cells: int
    notes: list[str] = field(default_factory=list)

    @property
    def device_name(self) -> str:
        """Display name of the device(s) [-]."""
        return ", ".join(str(v) for v in np.atleast_1d(self.ds["hardware_name"].values))

    def headline(self, what: str) -> str:
        """Chart title naming model, device(s), dtypes and tp [-]."""
        kv = "/".join(str(v) for v in self.ds["kv_dtype"].values)
        return (
            f"{self.model} on {self.device_name}: {what} "
            f"(weights {self.weight_dtype}, KV {kv}, tp {self.tp})"
        )


def _pick(ds: xr.Dataset, dim: str, value: object, notes: list[str]) -> object:
    labels = [v.item() if hasattr(v, "item") else v for v in ds[dim].values]
    if value is None:
        if len(labels) > 1:
            notes.append(
                f"{dim} {labels[0]} shown (the grid has {dim} "
                f"{', '.join(map(str, labels))}; the Parquet files have all)"
            )
        return labels[0]
    if value not in labels:
        msg = f"charts: {dim} {value!r} is not in the grid; allowed: {labels}"
        raise ConfigError(msg)
    return value


def altair_row_limit() -> int:
    """Altair's current ``max_rows`` (5000 unless the user changed it) [row]."""
    limit = alt.data_transformers.options.get("max_rows", 5000)
    return int(limit) if limit else 5000


def select(
    ds: xr.Dataset,
    model: str | None = None,
    hardware: str | None = None,
    *,
    tp: int | None = None,
    weight_dtype: str | None = None,
    max_cells: int | None = None,
    all_hardware: bool = False,
) -> Selection:
    """Select one model, device (every device with ``all_hardware``), tp and weight dtype;
    ``None`` takes the first and says so in the notes when there were several.

    ``max_cells`` [cell] defaults to ``ds.attrs['max_chart_cells']`` or 4500 and is capped by
    Altair's own row limit, which is never disabled.
    """
    notes: list[str] = []
    chosen = {
        dim: _pick(ds, dim, value, notes)
        for dim, value in (("model", model), ("tp", tp), ("weight_dtype", weight_dtype))
    }
    if not all_hardware:
        chosen["hardware"] = _pick(ds, "hardware", hardware, notes)
    limit = int(max_cells or ds.attrs.get("max_chart_cells", DEFAULT_MAX_CELLS))
    return Selection(
        ds=ds.sel(chosen),
        model=str(chosen["model"]),
        hardware=None if all_hardware else str(chosen["hardware"]),
        tp=int(str(chosen["tp"])),
        weight_dtype=str(chosen["weight_dtype"]),
        max_cells=min(limit, altair_row_limit()),
        notes=notes,
    )


def _ordinal(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def thin(
    ds: xr.Dataset, dims: Sequence[str], thinnable: Sequence[str], limit: int
) -> tuple[xr.Dataset, str]:
    """Keep every k-th value of ``thinnable`` dims (first and last always kept) until the
    product of ``dims`` sizes is at most ``limit`` [cell]; returns the note to show, or ''."""
    sizes = {d: ds.sizes[d] for d in dims}
    total = math.prod(sizes.values())
    index = {d: np.arange(sizes[d]) for d in thinnable}
    strides = dict.fromkeys(thinnable, 1)

    def count() -> int:
        return math.prod(len(index[d]) if d in index else sizes[d] for d in dims)

    while count() > limit and any(len(index[d]) > 2 for d in thinnable):
        widest = max(thinnable, key=lambda d: len(index[d]))
        strides[widest] += 1
        n = sizes[widest]
        index[widest] = np.unique(np.r_[np.arange(0, n, strides[widest]), n - 1])
    if count() == total:
        return ds, ""
    kept = ds.isel({d: index[d] for d in thinnable})
    steps = ", ".join(f"every {_ordinal(s)} {d}" for d, s in strides.items() if s > 1)
    note = f"thinned to {count():,} of {total:,} cells ({steps}); the Parquet files have all"
    return kept, note


def kv_heads_labels(ds: xr.Dataset) -> list[str]:
    """Facet labels of the KV-head settings of one model: ``native (8)``, ``4``, ... [-]."""
    counts = np.atleast_1d(ds["kv_heads_count"].values)
    return [
        f"{label} ({count})" if label == "native" else str(label)
        for label, count in zip(ds["kv_heads"].values, counts, strict=True)
    ]


def tidy(ds: xr.Dataset, names: Sequence[str], dims: Sequence[str]) -> pl.DataFrame:
    """One row per point of ``dims``: axis columns then ``names``, broadcast from ``ds``.

    ``kv_heads`` holds its facet label; ``bottleneck`` variables their flag meaning.
    """
    table = xr.Dataset({n: ds[n] for n in names}).drop_vars(
        [c for c in ds.coords if c not in dims], errors="ignore"
    )
    arrays = xr.broadcast(*[table[n] for n in names])
    shape = tuple(ds.sizes[d] for d in dims)
    columns: dict[str, object] = {}
    for axis, dim in enumerate(dims):
        labels = kv_heads_labels(ds) if dim == "kv_heads" else list(ds[dim].values)
        codes = np.broadcast_to(
            np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(dims))]),
            shape,
        ).reshape(-1)
        values = np.asarray(labels)[codes]
        columns[dim] = values.astype(str).tolist() if values.dtype.kind in "OU" else values
    for name, da in zip(names, arrays, strict=True):
        values = da.transpose(*dims).values.reshape(-1)
        if name.endswith("bottleneck"):
            values = np.asarray(BOTTLENECK_FLAGS, dtype=object)[values.astype(np.intp)]
        columns[name] = values
    return pl.DataFrame(columns).with_columns(pl.col(pl.Float64).fill_nan(None))


def status(frame: pl.DataFrame, feasible: str, category: str) -> pl.DataFrame:
    """Add ``status``: ``category``'s value where ``feasible``, else "does not fit"."""
    return frame.with_columns(
        status=pl.when(pl.col(feasible))
        .then(pl.col(category).cast(pl.String))
        .otherwise(pl.lit(DOES_NOT_FIT))
    )
