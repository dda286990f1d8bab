"""Dataset to files: Parquet tables (Polars, straight from numpy), the grid file (Zarr or
NetCDF), the DuckDB views, atomic folders."""

from sweeps.export.atomic import atomic_folder, check_target, result_folder
from sweeps.export.database import DATABASE, connect, write_database
from sweeps.export.frame import decode_frame, hardware_frame, models_frame, prefill_frame
from sweeps.export.grid import GRID_FILES, open_grid, to_netcdf, to_zarr, write_grid
from sweeps.export.parquet import (
    Written,
    column_info,
    frames,
    read_units,
    to_parquet,
    write_frame,
    write_tables,
    write_with_units,
)

__all__ = [
    "DATABASE",
    "GRID_FILES",
    "Written",
    "atomic_folder",
    "check_target",
    "column_info",
    "connect",
    "decode_frame",
    "frames",
    "hardware_frame",
    "models_frame",
    "open_grid",
    "prefill_frame",
    "read_units",
    "result_folder",
    "to_netcdf",
    "to_parquet",
    "to_zarr",
    "write_database",
    "write_frame",
    "write_grid",
    "write_tables",
    "write_with_units",
]
