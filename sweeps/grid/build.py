"""Build the sweep's ``xarray.Dataset``: coordinates, then every analysis in dependency order.

Every quantity is computed at its natural dimensions by xarray broadcasting (weights per model
and dtype, caches per context and KV setting, the roofline per device); only the export
flattens. Canonical dimension order: that of ``sweeps.axes.AXES``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import xarray as xr

from sweeps.config import Sweep
from sweeps.grid.analyses import Inputs, Variable, applicable, dims_of
from sweeps.grid.coords import derived_inputs, grid_coords
from sweeps.grid.layout import GridEngine, order
from sweeps.grid.memory import check_points
from sweeps.grid.variables import BOTTLENECK_FLAGS, REGISTRY
from sweeps.studies import STUDIES

NOTE = (
    "Roofline bounds: real kernels reach 60-85% of peak bandwidth and less of peak FLOP/s; "
    "times are lower bounds, throughputs upper bounds."
)


def _stored(value: Any, variable: Variable, dims: tuple[str, ...]) -> xr.Variable:
    """An analysis's output as the Dataset keeps it: canonical order, declared dtype."""
    value = order(value, dims)
    return value.astype(np.int64) if variable.dtype == "int64" else value


def _annotate(ds: xr.Dataset) -> xr.Dataset:
    # on the Variables themselves: ds[name] would build a DataArray (with its coordinates)
    # for each of the ~100 names
    for name, variable in ds.variables.items():
        entry = REGISTRY.get(str(name))
        if entry is None:
            continue
        variable.attrs.update({"units": entry.unit, "long_name": entry.description})
        if entry.dtype == "flag":
            variable.attrs.update(
                {
                    "flag_values": np.array([0, 1], dtype=np.int8),
                    "flag_meanings": " ".join(BOTTLENECK_FLAGS),
                }
            )
    return ds


def build_grid(
    sweep: Sweep,
    use_kernel: bool | None = None,
    chunks: Mapping[str, int] | None = None,
    skip: Collection[str] = (),
) -> xr.Dataset:
    """Evaluate every analysis ``sweep`` asks for (``sweeps.grid.analyses.ANALYSES``) at every
    point of it.

    Variables keep their natural dimensions; the few that span the whole grid (bottleneck,
    attainable FLOP/s, times, ...) are written in one pass by ``sweeps.grid.roof``.

    Parameters
    ----------
    sweep
        The validated sweep (``sweeps.load_config``).
    use_kernel
        Force the whole-grid pass's compiled (True) or numpy (False) path, for tests; ``None``
        picks.
    chunks
        ``{"model": 1, "hardware": 4}`` (needs the ``dask`` extra) makes the full-rank
        variables dask arrays, one block per that many models and devices: nothing of them is
        computed until asked (``.compute()``, ``.sel(...).values``), and with a
        ``dask.distributed`` client the blocks are computed on its workers. The low-rank
        variables are small and computed at once.
    skip
        Analyses left out (none another one needs): ``sweeps calibrate`` reads the serving
        table, not the pools one.

    Returns
    -------
    xr.Dataset
        The grid: the variables the analyses declare (units and descriptions in their attrs);
        its ``attrs`` record the sweep's name, title and options.
    """
    check_points(sweep)
    ds = xr.Dataset(coords=grid_coords(sweep))
    # xarray Variables (named dims, no coordinates or indexes): broadcasting by name without
    # the alignment and coordinate merging of DataArrays, which cost more than the math itself.
    values: dict[str, Any] = {str(k): ds[k].variable for k in ds.variables}
    values.update({k: xr.Variable(d, v) for k, (d, v) in derived_inputs(sweep).items()})
    engine = GridEngine({str(k): int(v) for k, v in ds.sizes.items()}, use_kernel, chunks)
    results: dict[str, Any] = {}
    analyses = tuple(a for a in applicable(sweep) if a.name not in skip)
    for analysis in analyses:
        settings = sweep.studies.get(analysis.study)
        inputs = Inputs(values, sweep.options, engine, results, settings)
        results.update(analysis.compute(inputs))
    data_vars = {
        variable.name: _stored(results[variable.name], variable, dims_of(analysis, sweep))
        for analysis in analyses
        for variable in analysis.variables
    }
    # one construction, not one merge per variable: the variables carry no coordinates
    ds = xr.Dataset(data_vars, coords=ds.coords)
    ds.attrs.update(
        {"title": sweep.title, "sweep": sweep.name, **_option_attrs(sweep), "note": NOTE}
    )
    for study in STUDIES:  # the objectives, so that charts read them from the grid
        if study.name in sweep.studies:
            settings = sweep.studies[study.name]
            ds.attrs.update({key: getattr(settings, key) for key in study.attrs})
    return _annotate(ds)


def _option_attrs(sweep: Sweep) -> dict[str, Any]:
    """The sweep's scalar options as netCDF-safe attrs (booleans as 0/1)."""
    return {
        key: int(value) if isinstance(value, bool) else value
        for key, value in vars(sweep.options).items()
        if isinstance(value, bool | int | float | str)
    }
