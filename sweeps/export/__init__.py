"""Dataset to files: Parquet tables (Polars, straight from numpy), NetCDF, atomic folders."""

from sweeps.export.atomic import atomic_folder, check_target
from sweeps.export.frame import decode_frame, hardware_frame, models_frame, prefill_frame
from sweeps.export.netcdf import to_netcdf
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
    "Written",
    "atomic_folder",
    "check_target",
    "column_info",
    "decode_frame",
    "frames",
    "hardware_frame",
    "models_frame",
    "prefill_frame",
    "read_units",
    "to_netcdf",
    "to_parquet",
    "write_frame",
    "write_tables",
    "write_with_units",
]
