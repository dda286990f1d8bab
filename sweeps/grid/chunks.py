"""How much memory a sweep needs, and how to split it into chunks that fit a budget.

Imports neither xarray nor Polars, so ``sweeps validate`` stays light. A chunk is the same
``Sweep`` with its outer axes (model, hardware, tp, batch) cut to a contiguous sub-range, so
chunk grids, taken in order, give exactly the rows of the whole grid in the same order.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from sweeps.config import Sweep
from sweeps.errors import ConfigError

DEFAULT_BUDGET_FRACTION = 0.5
"""Share of physical memory a run may use when no ``--memory-budget`` is given."""

SPLIT_AXES = ("models", "hardware", "tp", "batch")
"""Outer axes a grid is cut along, outermost first (the canonical dimension order)."""

# Bytes per point of the materialised grid and of the flat tables, by phase. The grid holds
# the full-rank outputs (4 float64 + 2 one-byte flags for decode, 3 + 2 for prefill) plus the
# hardware-independent ones (3 and 2 float64, divided by the hardware count) and, while the
# roofline pass runs, its four contiguous hardware-independent inputs (sweeps.grid.roof); the
# tables hold one value per column and row (axes: 4 Enum codes of 4 bytes, 3 int64, 1 flag).
_GRID_FULL = {"decode": 4 * 8 + 2, "prefill": 3 * 8 + 2}
_GRID_NO_HW = {"decode": (3 + 4) * 8, "prefill": (2 + 4) * 8}
_AXES_ROW = 4 * 4 + 3 * 8 + 1
_TABLE_ROW = {"decode": _AXES_ROW + 13 * 8 + 3 * 1 + 4, "prefill": _AXES_ROW + 6 * 8 + 1 + 4}
_WORKING = 1.25
"""Allowance for the export's transient copies (one column being converted, writer buffers)."""
BASE_BYTES = 448 * 2**20
"""What a run holds before any grid [byte]: the interpreter, its libraries (numpy, xarray,
Polars, numba) and the low-rank variables. A streamed run of an 880-point grid peaks at
415 MB on the development machine. Also the smallest budget accepted."""

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(text: str) -> int:
    """``"2GiB"``, ``"512MB"``, ``"1.5e9"`` as a number of bytes [byte]."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in _UNITS:
        msg = (
            f"--memory-budget: cannot read {text!r} as a size; write e.g. 2GiB, 512MB or "
            f"1e9 (units: {', '.join(u for u in _UNITS if u)})"
        )
        raise ConfigError(msg)
    size = int(float(match.group(1)) * _UNITS[match.group(2)])
    if size <= 0:
        msg = f"--memory-budget: {text!r} must be > 0"
        raise ConfigError(msg)
    return check_budget(size, text)


def check_budget(budget: int, text: str | None = None) -> int:
    """``budget`` [byte] if a run can keep to it; a ``ConfigError`` below ``BASE_BYTES``.

    ``text`` is the budget as the user wrote it, for the message.
    """
    if budget < BASE_BYTES:
        shown = repr(text) if text is not None else f"{budget:,} bytes"
        msg = (
            f"--memory-budget: {shown} is less than a run holds before any grid "
            f"({BASE_BYTES // 2**20} MiB: Python, numpy, xarray, Polars, numba); "
            f"allowed: at least {BASE_BYTES // 2**20}MiB"
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
    """The budget used without ``--memory-budget``: half the physical memory [byte]."""
    return int(physical_memory() * DEFAULT_BUDGET_FRACTION)


def _phase_bytes(points: int, hardware: int, phase: str) -> int:
    grid = points * _GRID_FULL[phase] + points // max(hardware, 1) * _GRID_NO_HW[phase]
    return grid + points * _TABLE_ROW[phase]


def estimate_bytes(sweep: Sweep) -> int:
    """Peak memory of evaluating ``sweep`` in one piece and exporting it [byte].

    The grid's materialised variables, the decode and prefill tables built from them, and an
    allowance for the export's transient copies and the interpreter.
    """
    hardware = len(sweep.hardware)
    data = _phase_bytes(sweep.decode_points, hardware, "decode")
    data += _phase_bytes(sweep.prefill_points, hardware, "prefill")
    return int(BASE_BYTES + data * _WORKING)


@dataclass(frozen=True)
class Chunk:
    """One piece of a chunked sweep: its sub-sweep, and where its rows go.

    index : Position in the plan (chunks in order give the whole grid's rows in order)
    part : Number of this chunk within its model (``part-<part>.parquet``)
    sweep : The sub-sweep, outer axes cut to a sub-range
    """

    index: int
    part: int
    sweep: Sweep

    @property
    def model(self) -> str:
        """The model id of the chunk (every chunk holds exactly one model)."""
        return self.sweep.models[0].id

    @property
    def points(self) -> int:
        """Decode plus prefill points of the chunk."""
        return self.sweep.decode_points + self.sweep.prefill_points


def _cut(sweep: Sweep, axis: str, start: int, stop: int) -> Sweep:
    return dataclasses.replace(sweep, **{axis: getattr(sweep, axis)[start:stop]})


def _pieces(sweep: Sweep, budget: int, axes: tuple[str, ...]) -> Iterator[Sweep]:
    if estimate_bytes(sweep) <= budget or not axes:
        yield sweep
        return
    axis, rest = axes[0], axes[1:]
    values = getattr(sweep, axis)
    one = _cut(sweep, axis, 0, 1)
    if estimate_bytes(one) > budget and rest:
        for i in range(len(values)):
            yield from _pieces(_cut(sweep, axis, i, i + 1), budget, rest)
        return
    per_value = max(1, estimate_bytes(one) - BASE_BYTES)
    step = max(1, min(len(values), (budget - BASE_BYTES) // per_value))
    for start in range(0, len(values), step):
        yield _cut(sweep, axis, start, start + step)


def plan_chunks(sweep: Sweep, budget: int) -> list[Chunk]:
    """Cut ``sweep`` into chunks, each estimated to fit ``budget`` [byte], one model each.

    The first cut is always by model (the partition key); below that hardware, tp and batch
    are cut only as far as needed. A chunk may still exceed a budget smaller than one row of
    batch values can fit; it is then as small as the grid allows.
    """
    chunks: list[Chunk] = []
    for i in range(len(sweep.models)):
        pieces = _pieces(_cut(sweep, "models", i, i + 1), budget, SPLIT_AXES[1:])
        for part, piece in enumerate(pieces):
            chunks.append(Chunk(len(chunks), part, piece))
    return chunks


def needs_chunks(sweep: Sweep, budget: int) -> bool:
    """True when ``sweep`` in one piece is estimated to exceed ``budget`` [byte]."""
    return estimate_bytes(sweep) > budget
