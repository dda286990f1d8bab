"""``simulated.parquet`` and the simulated CDF charts: the hook a run calls after its grid.

Runs where the sweep's ``[serving] simulate`` is above 0 and its grid holds the pools table
(``sweeps.simulate.plans``). Everything is written into the run's staging folder, so a failed
simulation (a bad lengths CSV, say) leaves nothing behind: the run fails whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

TABLE = "simulated"
_POLARS = {"str": "String", "int64": "Int64", "float64": "Float64"}


def wants_simulation(sweep: Any) -> bool:
    """Whether ``sweep`` asks for simulated plans."""
    serving = getattr(sweep, "serving", None)
    return serving is not None and serving.simulate > 0


def simulated_frame(rows: list[dict[str, Any]]) -> Any:
    """The rows as a Polars frame, typed and ordered as ``SIMULATED`` declares."""
    import polars as pl

    from sweeps.simulate.plans import SIMULATED

    schema = {v.name: getattr(pl, _POLARS[v.dtype]) for v in SIMULATED}
    return pl.DataFrame([{v.name: row.get(v.name) for v in SIMULATED} for row in rows], schema)


def simulated_hook(sweep: Any) -> Callable[[Any, Any, Path], list[str]]:
    """The run's hook writing ``simulated.parquet`` and the CDF charts (``write_simulated``);
    ``[serving] lengths`` is read now, so a bad CSV fails the run before its grid."""
    from sweeps.simulate.plans import lengths_of

    lengths = lengths_of(sweep)

    def simulated(ds: Any, sweep: Any, staging: Path) -> list[str]:
        return write_simulated(ds, sweep, staging, lengths)

    return simulated


def write_simulated(ds: Any, sweep: Any, staging: Path, lengths: Any = None) -> list[str]:
    """Simulate the cheapest plans of ``ds`` (a grid, or a run's slices) and write
    ``simulated.parquet`` and the CDF charts into ``staging``; the files written."""
    import xarray as xr

    from sweeps.export.parquet import write_with_units
    from sweeps.simulate.plans import SIMULATED, simulate_plans

    if not wants_simulation(sweep):
        return []
    grids: Iterable[Any] = [ds] if isinstance(ds, xr.Dataset) else ds
    done = [
        one
        for grid in grids
        if "devices" in grid.data_vars
        for one in simulate_plans(grid, sweep, lengths)
    ]
    frame = simulated_frame([s.row for s in done])
    info = {v.name: {"unit": v.unit, "description": v.description} for v in SIMULATED}
    write_with_units(frame, staging / f"{TABLE}.parquet", info)
    written = [f"{TABLE}.parquet"]
    if done and sweep.formats:
        from sweeps.charts.simulated import write_cdf_charts

        written += write_cdf_charts(done, staging, sweep.formats, sweep.serving)
    return written
