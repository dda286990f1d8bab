"""How a sweep will run, decided before any work: what ``sweeps validate`` reports.

Imports neither xarray nor Polars. The rows of every table, the file layout (a function of
the config alone), the estimated memory, the budget, whether the grid is computed in one
piece or streamed in chunks (and in how many), and whether the outputs that need the whole
grid (the grid file, the figures and the report) will be written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sweeps.config import Sweep
from sweeps.errors import ConfigError
from sweeps.grid.analyses import table_rows, tables
from sweeps.grid.chunks import Chunk, plan_chunks, table_points
from sweeps.grid.memory import (
    BASE_BYTES,
    check_budget,
    check_points,
    default_budget,
    estimate_bytes,
)

LAYOUTS = ("auto", "single", "partitioned")
"""The values of ``[outputs] layout``."""

AUTO_PARTITION_ROWS = 1 << 25
"""``auto`` writes one file per model (``partitioned``) when a table would have more rows
than this (33.5 M rows, a Parquet file of about 1-2 GB), one file per table otherwise."""

IN_FLIGHT = 2
"""Chunks in memory at once in a streamed run: one being written (every table's frame of it,
from its one grid), the next being evaluated (``sweeps.pipeline.stream``)."""


def resolve_layout(sweep: Sweep, layout: str = "auto", rows: dict[str, int] | None = None) -> str:
    """``single`` or ``partitioned``: ``layout``, with ``auto`` decided by the rows alone (of
    each table, ``rows`` where the caller has them)."""
    if layout not in LAYOUTS:
        msg = f"{sweep.path}: outputs.layout = {layout!r} is not allowed; allowed: {LAYOUTS}"
        raise ConfigError(msg)
    if layout != "auto":
        return layout
    rows = rows or {table.name: table_rows(table, sweep) for table in tables(sweep)}
    largest = max(rows.values())
    return "partitioned" if largest > AUTO_PARTITION_ROWS else "single"


def chunk_budget(budget: int) -> int:
    """The budget each chunk is cut against [byte]: ``IN_FLIGHT`` chunks share ``budget``."""
    return BASE_BYTES + (budget - BASE_BYTES) // IN_FLIGHT


@dataclass(frozen=True)
class Plan:
    """How ``sweep`` will run.

    rows : Rows of each analysis table, by table name [row]
    memory : Estimated peak memory of the run in one piece [byte]
    budget : The memory budget it is planned against [byte]
    chunks : Chunks it is streamed in (1: evaluated in one piece)
    distributed : Evaluated on a dask cluster (always streamed)
    layout : ``single`` (``<table>.parquet``) or ``partitioned`` (``<table>/<model>.parquet``)
    lazy_grid : The lazy grid (what it holds at once: the sweep on one device) fits the budget
    pieces : The chunks the run computes, cut once: here for a streamed run, by
        ``sweeps.pipeline.distributed.cluster_plan`` for the workers' memory, by
        ``sweeps.pipeline.pieces.model_pieces`` for a grid held in memory but computed model
        by model; none where the grid is computed in one piece
    points : Points of every table together (``sweeps.grid.chunks.table_points``) [row]
    on_cluster : ``pieces`` are cut for a cluster's workers (``cluster_plan``)
    """

    sweep: Sweep
    rows: dict[str, int]
    memory: int
    budget: int
    chunks: int
    distributed: bool = False
    layout: str = "single"
    lazy_grid: bool = True
    pieces: tuple[Chunk, ...] = ()
    points: int = 0
    on_cluster: bool = False

    @property
    def streamed(self) -> bool:
        """True when the grid is evaluated in chunks (the files are the same either way)."""
        return self.distributed or self.memory > self.budget

    @property
    def whole_grid(self) -> bool:
        """True when the whole grid is held at once, so the grid file, the figures and the
        report can be written; a streamed run skips them."""
        return not self.streamed

    @property
    def writes_figures(self) -> bool:
        """True when the charts and the report will be written: with the whole grid, or for a
        streamed grid where each one-model-one-device grid (what a figure needs) fits the
        budget, built one at a time after the tables."""
        return self.whole_grid or all(
            estimate_bytes(piece) <= self.budget for piece in slice_sweeps(self.sweep)
        )

    def writes_grid_file(self, grid_format: str) -> bool:
        """True when the grid file of ``grid_format`` will be written: always with the whole
        grid; for a streamed grid a Zarr store, block by block, where the lazy grid fits
        (``lazy_grid``) and the run is local."""
        if grid_format not in ("zarr", "netcdf"):
            return False
        if self.whole_grid:
            return True
        return grid_format == "zarr" and self.lazy_grid and not self.distributed


def slice_sweeps(sweep: Sweep) -> Iterator[Sweep]:
    """``sweep`` one model and one device at a time: what each figure needs."""
    for model in sweep.models:
        for device in sweep.hardware:
            yield dataclasses.replace(sweep, models=(model,), hardware=(device,))


def slice_groups(sweep: Sweep, budget: int) -> Iterator[Sweep]:
    """``sweep`` one model at a time, its devices in as few groups as fit ``budget`` [byte]
    (``estimate_bytes``; a device alone always makes a group), in ``slice_sweeps``' order:
    one grid per group instead of one per model and device (the figures of a 27-model,
    31-device sweep: 27 grids of 70 ms instead of 837 of 18 ms)."""
    for model in sweep.models:
        group: list[Any] = []
        for device in sweep.hardware:
            wider = dataclasses.replace(sweep, models=(model,), hardware=(*group, device))
            if group and estimate_bytes(wider) > budget:
                yield dataclasses.replace(sweep, models=(model,), hardware=tuple(group))
                group = []
            group.append(device)
        yield dataclasses.replace(sweep, models=(model,), hardware=tuple(group))


def _refuse(sweep: Sweep, budget: int, smallest: int) -> ConfigError:
    need = BASE_BYTES + (smallest - BASE_BYTES) * IN_FLIGHT
    msg = (
        f"{sweep.path}: memory budget of {budget:,} bytes ({budget / 2**20:,.0f} MiB) cannot "
        f"hold sweep {sweep.name!r}: its smallest chunk (one model, device, tp and batch "
        f"size) needs {smallest:,} bytes and a streamed run holds {IN_FLIGHT} at once; "
        f"allowed: at least {need:,} bytes ({-(-need // 2**20):,} MiB)"
    )
    return ConfigError(msg)


def plan(
    sweep: Sweep,
    memory_budget: int | None = None,
    distributed: bool = False,
    layout: str = "auto",
) -> Plan:
    """The plan of ``sweep`` under ``memory_budget`` [byte] (default: half the RAM).

    ``layout`` is ``[outputs] layout``. A grid that cannot be cut into chunks that fit the
    budget is refused here, before any work, with the smallest budget that would do.
    """
    check_points(sweep)
    budget = default_budget() if memory_budget is None else check_budget(memory_budget)
    memory = estimate_bytes(sweep)
    streamed = distributed or memory > budget
    chunks = 1
    pieces: tuple[Chunk, ...] = ()
    if streamed:
        pieces = tuple(plan_chunks(sweep, chunk_budget(budget)))
        largest = max(estimate_bytes(chunk.sweep) for chunk in pieces)
        if largest > chunk_budget(budget):
            raise _refuse(sweep, budget, largest)
        chunks = len(pieces)
    rows = {table.name: table_rows(table, sweep) for table in tables(sweep)}
    return Plan(
        sweep,
        rows,
        memory,
        budget,
        chunks,
        distributed,
        resolve_layout(sweep, layout, rows),
        estimate_bytes(dataclasses.replace(sweep, hardware=sweep.hardware[:1])) <= budget,
        pieces,
        table_points(sweep),
    )
