"""Measured results held against their roofline bounds (``sweeps calibrate``).

``calibrate(path)`` reads a measurements CSV (the shipped published figures by default),
bounds every row with the cost model and returns a Polars frame with the bound, the ratio
(1 at the roof) and whether a row beats its bound; ``summarize_efficiency`` gives per device
the achieved fraction of the bandwidth and of the compute bound.
"""

from typing import TYPE_CHECKING, Any

from sweeps.calibrate.measurements import (
    COLUMNS,
    METRICS,
    Measurement,
    load_measurements,
    parse_measurements,
    shipped_measurements,
)

if TYPE_CHECKING:
    from sweeps.calibrate.table import (
        calibrate,
        calibration_chart,
        summarize_efficiency,
        write_calibration,
    )

_LAZY = ("calibrate", "calibration_chart", "summarize_efficiency", "write_calibration")


def __getattr__(name: str) -> Any:
    """The heavy parts (xarray, Polars, Altair) are imported on first use."""
    if name in _LAZY:
        from sweeps.calibrate import table

        return getattr(table, name)
    msg = f"module 'sweeps.calibrate' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "COLUMNS",
    "METRICS",
    "Measurement",
    "calibrate",
    "calibration_chart",
    "load_measurements",
    "parse_measurements",
    "shipped_measurements",
    "summarize_efficiency",
    "write_calibration",
]
