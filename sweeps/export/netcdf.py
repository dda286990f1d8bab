"""The grid itself as a NetCDF-4 file, for xarray users."""

from __future__ import annotations

from pathlib import Path

import xarray as xr


def to_netcdf(ds: xr.Dataset, path: str | Path) -> None:
    """Write ``ds`` to ``path`` (NetCDF-4 via h5netcdf); strings stay strings, bools round-trip."""
    ds.to_netcdf(path, engine="h5netcdf", invalid_netcdf=False)
