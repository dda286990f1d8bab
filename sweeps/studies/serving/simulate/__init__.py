"""The serving study's simulator: a discrete-event simulation of replicas running a named
scheduler.

Each step costs the roofline bound of exactly what it carries, from the grid's own per-step
physics (``costs``); the event loop is compiled by numba (``kernel``); arrivals and lengths
are seeded (``workload``); the statistics (percentiles, attainment, goodput, confidence
intervals) are in ``stats``. docs/serving.md section 7.
"""

from sweeps.schedulers import SCHEDULER_CODES
from sweeps.studies.serving.simulate.costs import StepCosts, step_costs, step_time
from sweeps.studies.serving.simulate.run import Timeline, simulate
from sweeps.studies.serving.simulate.stats import batch_means, summarize
from sweeps.studies.serving.simulate.workload import (
    Arrivals,
    Lengths,
    backlog,
    closed_loop,
    draw_requests,
    poisson,
    read_lengths,
    read_trace,
    write_lengths,
    write_trace,
)

SCHEDULERS: tuple[str, ...] = tuple(SCHEDULER_CODES)
"""The named schedulers the simulator runs."""

__all__ = [
    "SCHEDULERS",
    "Arrivals",
    "Lengths",
    "StepCosts",
    "Timeline",
    "backlog",
    "batch_means",
    "closed_loop",
    "draw_requests",
    "poisson",
    "read_lengths",
    "read_trace",
    "simulate",
    "step_costs",
    "step_time",
    "summarize",
    "write_lengths",
    "write_trace",
]
