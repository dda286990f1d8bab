"""How much memory a sweep needs, from the analyses' declarations alone (no hand counts).

Imports neither xarray nor Polars, so ``sweeps validate`` stays light. For each analysis: the
grid holds its ``full`` variables at every point and its ``point`` variables (and the roofline
pass's contiguous per-point inputs) at every point but the device; its table holds one value
per column and row. An allowance covers the export's transient copies, and ``BASE_BYTES`` what
the interpreter holds before any grid.
"""

from __future__ import annotations

import os
from pathlib import Path

from sweeps.axes import AXIS
from sweeps.config import Sweep
from sweeps.errors import ConfigError
from sweeps.grid.analyses import COLUMN_ITEMSIZE, ITEMSIZE, Analysis, applicable, dims_of
from sweeps.grid.variables import REGISTRY
from sweeps.limits import MAX_POINTS
from sweeps.studies import STUDIES

DEFAULT_BUDGET_FRACTION = 0.5
"""Share of the memory this process may use (``available_memory``) a run takes when no
budget is given."""

ROOF_POINT_COPIES = 4
"""Per-point float64 arrays the roofline pass holds contiguous while it runs (intensity, bytes,
FLOPs and the broadcast memory wall; ``sweeps.grid.roof``)."""

WORKING = 1.25
"""Allowance for the export's transient copies (one column being converted, writer buffers)."""

BASE_BYTES = 448 * 2**20
"""What a run holds before any grid [byte]: the interpreter, its libraries (numpy, xarray,
Polars, numba) and the low-rank variables. A streamed run of an 880-point grid peaks at
415 MB on the development machine. Also the smallest budget accepted."""

DOCUMENTED_MINIMUM = 512 * 2**20
"""The smallest budget the documentation gives [byte]: ``BASE_BYTES`` plus room for the two
chunks a streamed run holds at once; every shipped config runs within it. ``BASE_BYTES``
itself is accepted, but holds no chunk: the planner then names the budget the sweep needs."""

MIN_ADDRESS_SPACE = 3 * 2**30 + 256 * 2**20 * (os.cpu_count() or 1)
"""Least address space (``RLIMIT_AS``, ``ulimit -v``) a run starts with [byte]. Address space
is not memory: the libraries map far more than they touch, and Polars' allocator reserves an
arena per thread, one thread per core. Measured on two cores: 2.5 GB aborts with SIGABRT in
Polars' thread pool, with no message; 3 GB runs."""

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


def check_points(sweep: Sweep) -> None:
    """Each grid of ``sweep`` (every analysis it asks for, over its dims) against
    ``MAX_POINTS``, before any work: one ``ConfigError`` with a line per grid over it, naming
    the table whose axes make it, each axis's length and the cap. The pipeline's plan and
    ``build_grid`` call it."""
    tables = {study.name: study.table for study in STUDIES}
    lines = []
    for analysis in applicable(sweep):
        dims = dims_of(analysis, sweep)
        points = sweep.points(dims)
        if points > MAX_POINTS:
            sizes = " x ".join(f"{dim} {sweep.points([dim]):,}" for dim in dims)
            lines.append(
                f"{sweep.path}: {tables.get(analysis.study or '', 'axes')}: the {analysis.name} "
                f"grid has {points:,} points ({sizes}); a sweep holds at most {MAX_POINTS:,} "
                "(limits.MAX_POINTS): shorten an axis or split the sweep"
            )
    if lines:
        raise ConfigError("\n".join(lines))


def base_holds() -> str:
    """What ``BASE_BYTES`` holds, in words, for the messages of a budget below it: numba is
    named only where it is installed (the ``fast`` extra), as only then is it loaded."""
    import importlib.util

    numba = importlib.util.find_spec("numba") is not None
    return f"{BASE_BYTES // 2**20} MiB: Python, numpy, xarray, Polars{', numba' if numba else ''}"


def check_budget(budget: int) -> int:
    """``budget`` [byte] if a run can keep to it; a ``ConfigError`` below ``BASE_BYTES``."""
    if budget < BASE_BYTES:
        msg = (
            f"memory budget: {budget:,} bytes is less than a run holds before any grid "
            f"({base_holds()}); "
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


CGROUP_FILES = (
    "/sys/fs/cgroup/memory.max",  # cgroup v2
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",  # cgroup v1
)
"""Where a container's memory limit is read, in order."""


def cgroup_limit(files: tuple[str, ...] = CGROUP_FILES) -> int | None:
    """The container's memory limit [byte] (cgroup ``memory.max``), or None where unlimited."""
    for name in files:
        try:
            text = Path(name).read_text("ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and int(text) < 2**60:  # v1 writes "no limit" as ~2**63
            return int(text)
        return None
    return None


def address_space_limit() -> int | None:
    """The soft ``RLIMIT_AS`` [byte], or None where there is none (or no ``resource``)."""
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def available_memory() -> int:
    """What this process may really use [byte]: the least of the address-space limit (less
    ``MIN_ADDRESS_SPACE``, what the libraries map without using), the container's
    ``memory.max`` and the physical memory."""
    candidates = [physical_memory()]
    limit = cgroup_limit()
    if limit is not None:
        candidates.append(limit)
    space = address_space_limit()
    if space is not None:
        candidates.append(max(0, space - MIN_ADDRESS_SPACE + BASE_BYTES))
    return min(candidates)


def address_space_problem() -> str | None:
    """Why this process's address-space limit is too small to run, or None."""
    space = address_space_limit()
    if space is None or space >= MIN_ADDRESS_SPACE:
        return None
    return (
        f"the address-space limit (RLIMIT_AS, ulimit -v) is {space / 2**30:.2f} GiB; a run "
        f"maps at least {MIN_ADDRESS_SPACE / 2**30:.2f} GiB here (its libraries reserve far "
        "more than they use, an arena per thread); allowed: a limit of at least that, or none "
        "(limit the memory with a cgroup or the memory budget instead)"
    )


def default_budget() -> int:
    """The budget used when none is given: half of what the process may use
    (``available_memory``), and never below ``DOCUMENTED_MINIMUM`` [byte]."""
    return max(DOCUMENTED_MINIMUM, int(available_memory() * DEFAULT_BUDGET_FRACTION))
