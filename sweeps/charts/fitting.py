"""A figure drawn on any grid the run accepts: where Altair's row limit stops a chart, it is
built again on fewer batches (log-spaced, ends kept), and its subtitle says so.

The heatmaps thin their own cells (``sweeps.charts.data.thin``); the serving figures draw
every batch of every device, tp, scheduler and workload, which a batch axis of step 8 took
past Altair's 5,000 rows (the Pareto chart at 5,128, the request-time chart at 36,864). The
batch axis is what a reader scans, so thinning it keeps every device, tp, scheduler and
workload and the shape of each line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import xarray as xr

from sweeps.charts.data import spaced
from sweeps.charts.spec import shortened

TRIES = 12
"""Times a chart is built again on fewer batches before it is given up."""


def _too_many_rows(error: BaseException) -> bool:
    import altair as alt

    return isinstance(error, alt.MaxRowsError)


def within_rows(
    build: Callable[..., dict[str, Any]], ds: xr.Dataset, *args: Any, **kwargs: Any
) -> dict[str, Any]:
    """``build(ds, *args, **kwargs)`` (a spec), or, where Altair's row limit stops it, the
    spec built on ``ds`` with fewer batches, each try keeping about 60 % of the last; raises
    the last ``MaxRowsError`` where even two batches are too many."""
    try:
        return build(ds, *args, **kwargs)
    except Exception as error:
        if not _too_many_rows(error) or "batch" not in ds.dims:
            raise
        last: BaseException = error
    batches = ds["batch"].values
    keep = batches.size
    for _ in range(TRIES):
        keep = max(2, int(keep * 0.6))
        kept = spaced(batches, keep)
        try:
            spec = build(ds.isel(batch=kept), *args, **kwargs)
        except Exception as error:
            if not _too_many_rows(error) or keep == 2:
                raise
            last = error
            continue
        return shortened(
            noted(spec, f"Drawn at {kept.size} of {batches.size} batches (log-spaced).")
        )
    raise last


def noted(spec: dict[str, Any], note: str) -> dict[str, Any]:
    """``spec`` with ``note`` as the last line of its title's subtitle (or the subtitle)."""
    title = spec.get("title")
    if isinstance(title, dict):
        subtitle = title.get("subtitle", [])
        lines = [subtitle] if isinstance(subtitle, str) else list(subtitle)
        spec = {**spec, "title": {**title, "subtitle": [*lines, note]}}
    elif isinstance(title, str):
        spec = {**spec, "title": {"text": title, "subtitle": [note]}}
    return spec
