"""``simulated.parquet`` and the simulated CDF charts: the hook a run calls after its grid.

Runs where the sweep's ``[serving] simulate`` is above 0 and its grid holds the pools table
(``sweeps.simulate.plans``). Everything is written into the run's staging folder, so a failed
simulation (a bad lengths CSV, say) leaves nothing behind: the run fails whole.
"""

from __future__ import annotations

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
    frame = pl.DataFrame([{v.name: row.get(v.name) for v in SIMULATED} for row in rows], schema)
    return _axes_as_enums(frame)


def _axes_as_enums(frame: Any) -> Any:
    """Each name axis's column as that axis's Enum (``shared_enum``), as in every table."""
    import polars as pl

    from sweeps.axes import AXIS
    from sweeps.export.frame import shared_enum

    names = [c for c in frame.columns if c in AXIS and AXIS[c].kind == "name"]
    return frame.with_columns(
        pl.col(c).cast(shared_enum(c, frame[c].drop_nulls().unique(maintain_order=True)))
        for c in names
    )


class SimulatedHook:
    """The run's hook writing ``simulated.parquet``; it keeps the CDF figures it made in
    ``figures`` for the report (``sweeps.charts.hooks.output_hooks`` runs it first).
    ``[serving] lengths`` is read when it is made, so a bad CSV fails the run before its grid.
    """

    __name__ = "simulated"
    tables_only = True
    """It reads the pools table, never the grid's slices: a streamed run runs it too."""

    def __init__(self, sweep: Any) -> None:
        from sweeps.simulate.plans import lengths_of

        self.lengths = lengths_of(sweep)
        self.figures: list[Any] = []

    def __call__(self, ds: Any, sweep: Any, staging: Path) -> list[str]:
        done = simulated_plans(ds, sweep, staging, self.lengths)
        write_simulated(done, staging)
        if done:
            from sweeps.charts.simulated import cdf_figures

            self.figures[:] = cdf_figures(done, sweep)
        return [f"{TABLE}.parquet"]


def pools_table(ds: Any, staging: Path) -> Any:
    """The run's pools table: from the grid held in memory, else as written into ``staging``
    (one file, or one per model)."""
    import polars as pl
    import xarray as xr

    if isinstance(ds, xr.Dataset):
        from sweeps.export.parquet import frame

        return frame(ds, "pools")
    single = staging / "pools.parquet"
    return pl.read_parquet(single if single.exists() else staging / "pools" / "*.parquet")


def simulated_plans(ds: Any, sweep: Any, staging: Path, lengths: Any = None) -> list[Any]:
    """The cheapest plans of the run's pools table, simulated."""
    from sweeps.simulate.plans import simulate_plans

    return simulate_plans(pools_table(ds, staging), sweep, lengths)


def write_simulated(done: list[Any], staging: Path) -> None:
    """``simulated.parquet`` of the simulated plans ``done``, its units in its metadata."""
    from sweeps.export.parquet import write_with_units
    from sweeps.simulate.plans import SIMULATED

    frame = simulated_frame([s.row for s in done])
    info = {v.name: {"unit": v.unit, "description": v.description} for v in SIMULATED}
    write_with_units(frame, staging / f"{TABLE}.parquet", info)
