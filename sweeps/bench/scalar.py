"""(b) The scalar loop: the analyses' own compute functions, on floats, one point at a time.

A point of the sample is one index per axis of ``sweeps.axes.AXES``. Its inputs are the
coordinates and derived inputs of ``sweeps.grid.coords`` at that index, as Python scalars;
every analysis of ``ANALYSES`` then runs on them in order, with ``ScalarEngine`` in place of
the grid's layout and compiled roofline pass. So the loop evaluates exactly the terms the grid
evaluates, with nothing of the wiring written a second time, and ``check`` compares every
variable the analyses declare against the grid at the sampled points.

The ``whole`` analyses (serving, pools: the best batch, the Pareto front, pairs of devices)
reduce over devices, tp or batch, so one point alone does not define them: the loop runs the
pointwise analyses a sweep asks for and leaves those out.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from sweeps.axes import AXES
from sweeps.config import Sweep
from sweeps.engine.base import LABELS
from sweeps.grid.analyses import ANALYSES, Inputs, active_dims
from sweeps.grid.scalar import POSITION, ScalarEngine, Table, input_table, pointwise

Index = tuple[int, ...]
"""One index per axis of ``AXES``, in its order."""

CHECKED: tuple[str, ...] = tuple(
    v.name
    for a in ANALYSES
    if not a.whole
    for v in a.variables
    if v.dtype not in LABELS and not v.reduces
)
"""What ``check`` compares: every number every pointwise analysis declares (those a sweep
computes), but those that reduce a dim (``Variable.reduces``: the break-even batch, over the
batch axis), which one point does not define; their tests hold them against loops over the
axis."""


def scalar_point(sweep: Sweep, table: Table, index: Index) -> dict[str, Any]:
    """Every analysis's outputs (and internal terms) at ``index``, one scalar each."""
    values = {
        name: data.item(*(index[p] for p in positions)) for name, (positions, data) in table.items()
    }
    engine = ScalarEngine()
    results: dict[str, Any] = {}
    for analysis in pointwise(sweep):
        settings = sweep.studies.get(analysis.study)
        results.update(analysis.compute(Inputs(values, sweep.options, engine, results, settings)))
    return results


def sample(sweep: Sweep, size: int, seed: int = 4) -> list[Index]:
    """``size`` points of ``sweep``, each one index per axis drawn at random."""
    rng = random.Random(seed)
    active = active_dims(sweep)
    sizes = [axis.size(sweep) if axis.dim in active else 1 for axis in AXES]
    return [tuple(rng.randrange(n) for n in sizes) for _ in range(size)]


def scalar_loop(sweep: Sweep, points: list[Index]) -> list[dict[str, Any]]:
    """The scalar loop over ``points``: every analysis at each, one float at a time."""
    table = input_table(sweep)
    return [scalar_point(sweep, table, index) for index in points]


def _worst(engine: np.ndarray, scalar: np.ndarray) -> float:
    """Largest relative difference; equal values (inf too) and NaN against NaN count 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.abs(engine - scalar) / np.maximum(np.abs(engine), 1e-300)
    same = (engine == scalar) | (np.isnan(engine) & np.isnan(scalar))
    relative = np.where(np.isnan(relative), np.inf, relative)  # NaN against a number
    return float(np.where(same, 0.0, relative).max(initial=0.0))


def check(ds: Any, points: list[Index], values: list[dict[str, Any]]) -> float:
    """Largest relative difference between the scalar loop and the grid ``ds`` at ``points``,
    over every variable of ``CHECKED``."""
    index = np.asarray(points, dtype=np.intp).reshape(len(points), len(AXES))
    worst = 0.0
    for name in (name for name in CHECKED if name in ds.data_vars):
        variable = ds[name].variable
        at = tuple(index[:, POSITION[str(d)]] for d in variable.dims)
        engine = np.asarray(variable.values[at], dtype=np.float64)
        scalar = np.array([float(row[name]) for row in values])
        worst = max(worst, _worst(engine, scalar))
    return worst


def measure_scalar(sweep: Sweep, ds: Any, size: int, engine_rate: float) -> dict[str, Any]:
    """(b): the scalar loop over ``size`` sampled indices, its rate against ``engine_rate``
    [point/s] and its largest relative difference from the grid ``ds``."""
    from sweeps.bench.timing import timed

    points = sample(sweep, size)
    seconds, values = timed(lambda: scalar_loop(sweep, points))
    per_sample = sum(a.has_table for a in pointwise(sweep))  # one cell of each (decode, prefill)
    rate = per_sample * len(points) / seconds
    return {
        "sample_points": per_sample * len(points),
        "seconds": seconds,
        "points_per_s": rate,
        "engine_speedup": engine_rate / rate,
        "max_relative_difference": check(ds, points, values),
    }
