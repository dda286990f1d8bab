"""The parallel layout a chart shows, where the grid has the parallel axes (``ep``,
``dp_attention``, ``pp``): one replica's, named in the chart's title and caption."""

from __future__ import annotations

import numpy as np
import xarray as xr


def pick_layout(ds: xr.Dataset, notes: list[str]) -> tuple[xr.Dataset, str]:
    """``ds`` at one parallel layout (ep, dp_attention, pp), and its label ("" without the
    parallel axes): the smallest replica where the model fits, said in ``notes``."""
    if "ep" not in ds.dims:
        return ds, ""
    fits = (ds["max_batch"] >= 1).any([d for d in ds["max_batch"].dims if d not in PARALLEL])
    fits = fits.transpose(*PARALLEL)

    def over(name: str) -> np.ndarray:
        return np.asarray(ds[name].broadcast_like(fits).transpose(*PARALLEL).values)

    labels, devices, fits = over("parallel"), over("replica_devices"), fits.values
    order = sorted(np.ndindex(labels.shape), key=lambda i: (not fits[i], devices[i], i))
    chosen = order[0]
    at = {dim: int(i) for dim, i in zip(PARALLEL, chosen, strict=True)}
    label = str(labels[chosen])
    others = sorted({str(v) for v in labels.reshape(-1)} - {label})
    if others:
        notes.append(
            f"Drawn at {label}, the smallest replica where it fits; parallel.parquet and the "
            f"other tables have {', '.join(others)} too."
        )
    return ds.isel(at), label


PARALLEL = ("ep", "dp_attention", "pp")
