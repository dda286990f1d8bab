"""The grid as a NetCDF-4 file (kept for imports of ``sweeps.export.netcdf``; see ``grid``)."""

from sweeps.export.grid import to_netcdf

__all__ = ["to_netcdf"]
