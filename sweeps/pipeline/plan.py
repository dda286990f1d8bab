"""How a sweep will run, decided before any work: what ``sweeps validate`` reports.

Imports neither xarray nor Polars. The rows of every table, the estimated memory, the budget,
and whether the grid is computed in one piece or streamed in chunks (and in how many).
"""

from __future__ import annotations

from dataclasses import dataclass

from sweeps.config import Sweep
from sweeps.grid.analyses import tables
from sweeps.grid.chunks import plan_chunks
from sweeps.grid.memory import check_budget, default_budget, estimate_bytes


@dataclass(frozen=True)
class Plan:
    """How ``sweep`` will run.

    rows : Rows of each analysis table, by table name [row]
    memory : Estimated peak memory of the run in one piece [byte]
    budget : The memory budget it is planned against [byte]
    chunks : Chunks it is streamed in (1: in memory, single files)
    distributed : Evaluated on a dask cluster (always streamed)
    """

    sweep: Sweep
    rows: dict[str, int]
    memory: int
    budget: int
    chunks: int
    distributed: bool = False

    @property
    def streamed(self) -> bool:
        """True when the grid is evaluated in chunks and written partitioned by model."""
        return self.distributed or self.memory > self.budget

    @property
    def layout(self) -> str:
        """``single`` (one file per table) or ``partitioned`` (``<table>/model=<id>/...``)."""
        return "partitioned" if self.streamed else "single"


def plan(sweep: Sweep, memory_budget: int | None = None, distributed: bool = False) -> Plan:
    """The plan of ``sweep`` under ``memory_budget`` [byte] (default: half the RAM)."""
    budget = default_budget() if memory_budget is None else check_budget(memory_budget)
    memory = estimate_bytes(sweep)
    streamed = distributed or memory > budget
    return Plan(
        sweep,
        {table.name: sweep.points(table.dims) for table in tables(sweep)},
        memory,
        budget,
        len(plan_chunks(sweep, budget)) if streamed else 1,
        distributed,
    )
