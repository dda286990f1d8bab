"""How to cut a sweep into chunks that each fit a memory budget.

Imports neither xarray nor Polars, so ``sweeps validate`` stays light. A chunk is the same
``Sweep`` with its outer axes (``sweeps.axes.SPLIT_DIMS``: model, hardware, tp, batch) cut to a
contiguous sub-range, so chunk grids, taken in order, give exactly the rows of the whole grid
in the same order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from sweeps.axes import AXIS, SPLIT_DIMS
from sweeps.config import Sweep
from sweeps.grid.analyses import applicable, dims_of, tables
from sweeps.grid.memory import BASE_BYTES, estimate_bytes


def table_points(sweep: Sweep) -> int:
    """Rows of every analysis table of ``sweep`` together [row]."""
    return sum(sweep.points(dims_of(table, sweep)) for table in tables(sweep))


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
        """Rows of the chunk's tables together [row]."""
        return table_points(self.sweep)


def cut(sweep: Sweep, dim: str, start: int, stop: int) -> Sweep:
    """``sweep`` with the axis ``dim`` cut to its values ``start:stop``."""
    field = AXIS[dim].field
    return dataclasses.replace(sweep, **{field: getattr(sweep, field)[start:stop]})


def _pieces(sweep: Sweep, budget: int, dims: tuple[str, ...]) -> Iterator[Sweep]:
    if estimate_bytes(sweep) <= budget or not dims:
        yield sweep
        return
    dim, rest = dims[0], dims[1:]
    values = getattr(sweep, AXIS[dim].field)
    one = cut(sweep, dim, 0, 1)
    if estimate_bytes(one) > budget and rest:
        for i in range(len(values)):
            yield from _pieces(cut(sweep, dim, i, i + 1), budget, rest)
        return
    per_value = max(1, estimate_bytes(one) - BASE_BYTES)
    step = max(1, min(len(values), (budget - BASE_BYTES) // per_value))
    for start in range(0, len(values), step):
        yield cut(sweep, dim, start, start + step)


def _kept(sweep: Sweep) -> set[str]:
    """The dims some analysis of ``sweep`` reduces over along the way (``Analysis.keeps``)."""
    return {dim for analysis in applicable(sweep) for dim in analysis.keeps}


def plan_chunks(sweep: Sweep, budget: int) -> list[Chunk]:
    """Cut ``sweep`` into chunks, each estimated to fit ``budget`` [byte], one model each.

    The first cut is always by model (the partition key); below that hardware, tp and batch
    are cut only as far as needed, never along a dim an analysis reduces over
    (``Analysis.keeps``). A chunk may still exceed a budget smaller than one row of
    batch values can fit; it is then as small as the grid allows.
    """
    chunks: list[Chunk] = []
    kept = _kept(sweep)
    first, below = SPLIT_DIMS[0], tuple(d for d in SPLIT_DIMS[1:] if d not in kept)
    for i in range(len(getattr(sweep, AXIS[first].field))):
        for part, piece in enumerate(_pieces(cut(sweep, first, i, i + 1), budget, below)):
            chunks.append(Chunk(len(chunks), part, piece))
    return chunks


def needs_chunks(sweep: Sweep, budget: int) -> bool:
    """True when ``sweep`` in one piece is estimated to exceed ``budget`` [byte]."""
    return estimate_bytes(sweep) > budget


def split_first_device(sweep: Sweep, chunks: list[Chunk]) -> list[Chunk]:
    """``chunks`` with the first one cut after its first device: its rows come first and its
    grid is a fraction of the chunk's, so rows reach the writers sooner (issue 14's grid, model
    by model: the first rows handed over 0.64 s after the imports, against 0.82-0.88 s). The
    chunks, in order, still give the whole grid's rows in order. Unchanged where the first
    chunk has one device, or an analysis reduces over the devices (``keeps``, ``whole``) or
    has a dim of its own over them (the serving plans' prefill and decode devices pair every
    device with every other: a part's grid would pair only its own)."""
    analyses = applicable(sweep)
    paired = {
        dim
        for analysis in analyses
        for dim in dims_of(analysis, sweep)
        if dim != "hardware" and AXIS[dim].field == "hardware"
    }
    whole = any(analysis.whole for analysis in analyses)
    head = chunks[0].sweep
    devices = len(head.hardware)
    if "hardware" in _kept(sweep) or paired or whole or devices < 2:
        return chunks
    first = Chunk(0, chunks[0].part, cut(head, "hardware", 0, 1))
    second = Chunk(1, chunks[0].part + 1, cut(head, "hardware", 1, devices))
    rest = [dataclasses.replace(chunk, index=chunk.index + 1) for chunk in chunks[1:]]
    return [first, second, *rest]
