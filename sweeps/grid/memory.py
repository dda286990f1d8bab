"""How much memory a sweep needs, from the analyses' declarations alone (no hand counts).

Imports neither xarray nor Polars, so ``sweeps validate`` stays light. For each analysis: the
grid holds its ``full`` variables at every point and its ``point`` variables (and the roofline
pass's contiguous per-point inputs) at every point but the device; its table holds one value
per column and row. An allowance covers the export's transient copies, and ``BASE_BYTES`` what
the interpreter holds before any grid.
"""

from __future__ import annotations

import os

from sweeps.axes import AXIS
from sweeps.config import Sweep
from sweeps.errors import ConfigError
from sweeps.grid.analyses import COLUMN_ITEMSIZE, ITEMSIZE, Analysis, applicable, dims_of
from sweeps.grid.variables import REGISTRY

DEFAULT_BUDGET_FRACTION = 0.5
"""Share of physical memory a run may use when no budget is given."""

ROOF_POINT_COPIES = 4
"""Per-point float64 arrays the roofline pass holds contiguous while it runs (intensity, bytes,
FLOPs and the broadcast memory wall; ``sweeps.grid.roof``)."""

WORKING = 1.25
"""Allowance for the export's transient copies (one column being converted, writer buffers)."""

BASE_BYTES = 448 * 2**20
"""What a run holds before any grid [byte]: the interpreter, its libraries (numpy, xarray,
Polars, numba) and the low-rank variables. A streamed run of an 880-point grid peaks at
415 MB on the development machine. Also the smallest budget accepted."""

_AXIS_COLUMN = {"name": 4, "size": 8, "heads": 8, "value": 8}
"""Bytes per row of an axis column by axis kind: Enum codes (at most 4 bytes), Int64, Float64."""
_NATIVE_FLAG = 1  # the kv_heads_native column beside kv_heads


def row_bytes(analysis: Analysis, dims: tuple[str, ...] | None = None) -> float:
    """Bytes of one row of ``analysis``'s table over ``dims`` (default: its own) [byte]: axes,
    the native flag, its columns."""
    dims = analysis.dims if dims is None else dims
    axes = sum(_AXIS_COLUMN[AXIS[dim].kind] for dim in dims) + _NATIVE_FLAG
    return axes + sum(COLUMN_ITEMSIZE[REGISTRY[name].dtype] for name in analysis.columns)


def analysis_bytes(sweep: Sweep, analysis: Analysis) -> float:
    """Peak bytes of ``analysis`` over ``sweep``: its grid arrays and its table [byte]."""
    dims = dims_of(analysis, sweep)
    points = sweep.points(dims)
    devices = len(sweep.hardware) if "hardware" in dims else 1
    full = sum(ITEMSIZE[v.dtype] for v in analysis.variables if v.rank == "full")
    point = sum(ITEMSIZE[v.dtype] for v in analysis.variables if v.rank == "point")
    working = ROOF_POINT_COPIES * 8 if full else 0
    table = points * row_bytes(analysis, dims) if analysis.has_table else 0
    return points * full + points / devices * (point + working) + table


def estimate_bytes(sweep: Sweep) -> int:
    """Peak memory of evaluating ``sweep`` in one piece and exporting it [byte]."""
    data = sum(analysis_bytes(sweep, analysis) for analysis in applicable(sweep))
    return int(BASE_BYTES + data * WORKING)


def check_budget(budget: int) -> int:
    """``budget`` [byte] if a run can keep to it; a ``ConfigError`` below ``BASE_BYTES``."""
    if budget < BASE_BYTES:
        msg = (
            f"memory budget: {budget:,} bytes is less than a run holds before any grid "
            f"({BASE_BYTES // 2**20} MiB: Python, numpy, xarray, Polars, numba); "
            f"allowed: at least {BASE_BYTES:,} bytes ({BASE_BYTES // 2**20} MiB)"
        )
        raise ConfigError(msg)
    return budget


def physical_memory() -> int:
    """Physical memory of this machine [byte]."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a modest machine
        return 8 * 2**30


def default_budget() -> int:
    """The budget used when none is given: half the physical memory [byte]."""
    return int(physical_memory() * DEFAULT_BUDGET_FRACTION)
