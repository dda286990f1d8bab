"""The parallel layout a chart shows, where the grid has the parallel axes (``ep``,
``dp_attention``, ``pp``): one replica's, named in the chart's title and caption."""

from __future__ import annotations

import numpy as np
import xarray as xr


def pick_layout(ds: xr.Dataset, notes: list[str]) -> tuple[xr.Dataset, str]:
    """``ds`` at one parallel layout (ep, dp_attention, pp), and its label ("" without the
    parallel axes): the smallest replica where the model fits (of equals, the one with the
    highest memory wall), said in ``notes``."""
    if "ep" not in ds.dims:
        return ds, ""
    rest = [d for d in ds["max_batch"].dims if d not in PARALLEL]
    wall = ds["max_batch"].max(rest).transpose(*PARALLEL)
    fits = wall >= 1

    def over(name: str) -> np.ndarray:
        return np.asarray(ds[name].broadcast_like(fits).transpose(*PARALLEL).values)

    labels, devices, walls = over("parallel"), over("replica_devices"), wall.values
    # the fewest devices where it fits; of as many, the one that holds the most sequences
    order = sorted(np.ndindex(labels.shape), key=lambda i: (walls[i] < 1, devices[i], -walls[i]))
    chosen = order[0]
    at = {dim: int(i) for dim, i in zip(PARALLEL, chosen, strict=True)}
    label = str(labels[chosen])
    others = sorted({str(v) for v in labels.reshape(-1)} - {label})
    if others:
        notes.append(
            f"Drawn at {label}, the smallest replica where it fits (the highest wall of "
            f"those); parallel.parquet and the other tables have {', '.join(others)} too."
        )
    return ds.isel(at), label


PARALLEL = ("ep", "dp_attention", "pp")
