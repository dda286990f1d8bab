"""Optional dependencies a sweep needs, checked before any work, each naming its extra.

A config may ask for outputs that need a package outside the core: ``[outputs] duckdb =
true`` needs DuckDB, ``[outputs] grid = "netcdf"`` needs the NetCDF writer (h5netcdf, on
h5py), ``[serving] simulate`` above ``INTERPRETED_REQUESTS`` needs numba (the ``fast`` extra)
for the simulator's compiled loop. A run that found out only after computing would have
spent its time for nothing, and used to leave a renamed result behind it; each need is
declared here once, with the key that asks for it and the extra that brings it, and checked
by ``validate`` and before every run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from sweeps.config import Sweep
from sweeps.errors import ConfigError, install_hint


@dataclass(frozen=True)
class Need:
    """An optional dependency: the ``key`` that asks for it (and when, ``asks``), the
    ``modules`` it takes, and the ``extra`` of ``pip install 'roofline-sweeps[extra]'`` that brings
    them."""

    key: str
    asks: Callable[[Sweep, str, bool], bool]
    modules: tuple[str, ...]
    extra: str
    what: str
    value: Callable[[Sweep], object] | None = None
    """The value of ``key`` that asks for it, where the message names it."""


INTERPRETED_REQUESTS = 10_000
"""The most requests per plan ``[serving] simulate`` may ask for without numba. The simulator's
loop runs interpreted without it, giving the same numbers 60-210x slower: 2,900-5,000
saturated requests/s on one core (``sweeps bench``'s simulator line), so 1e4 requests take
2-3.5 s per scheduler and plan, and the 1e5 of a thorough study minutes."""


def _simulates_many(sweep: Sweep, grid: str, database: bool) -> bool:
    serving = sweep.studies.get("serving")
    return serving is not None and serving.simulate > INTERPRETED_REQUESTS


NEEDS = (
    Need("outputs.duckdb", lambda s, g, d: d, ("duckdb",), "duckdb", "DuckDB"),
    Need(
        "outputs.grid",
        lambda s, g, d: g == "netcdf",
        ("h5netcdf", "h5py"),
        "netcdf",
        "the NetCDF writer (h5netcdf, h5py)",
    ),
    Need(
        "serving.simulate",
        _simulates_many,
        ("numba",),
        "fast",
        f"the simulator's compiled loop (numba) for more than {INTERPRETED_REQUESTS:,} "
        f"requests per plan (allowed without it: simulate <= {INTERPRETED_REQUESTS})",
        lambda sweep: getattr(sweep.studies.get("serving"), "simulate", 0),
    ),
)
"""Every optional dependency a config can ask for (``DASK``: the CLI's cluster options)."""

DASK = ("dask", "distributed")
"""The modules of the ``dask`` extra (a cluster to evaluate on, lazy grids)."""


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here (found, not imported: cheap)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_extras(sweep: Sweep, grid_format: str | None = None, duckdb: bool | None = None) -> None:
    """Raise ``ConfigError`` (naming the file, the key, and the extra to install) when
    ``sweep`` asks for an output whose package is not installed; ``grid_format`` and
    ``duckdb`` override the sweep's own settings, as ``run_to_folder``'s do."""
    grid = sweep.grid_format if grid_format is None else grid_format
    database = sweep.duckdb if duckdb is None else duckdb
    lines = []
    for need in NEEDS:
        missing = [m for m in need.modules if not installed(m)]
        if need.asks(sweep, grid, database) and missing:
            key = need.key if need.value is None else f"{need.key} = {need.value(sweep)}"
            lines.append(
                f"{sweep.path}: {key}: needs {need.what}, and {', '.join(missing)} is not "
                f"installed; install the {need.extra} extra: {install_hint(need.extra)}"
            )
    if lines:
        raise ConfigError("\n".join(lines))
