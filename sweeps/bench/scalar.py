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
from collections.abc import Callable
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.axes import AXES
from sweeps.config import Sweep
from sweeps.grid.analyses import ANALYSES, Inputs, active_dims, applicable
from sweeps.grid.analyses.base import LABELS

Index = tuple[int, ...]
"""One index per axis of ``AXES``, in its order."""

POSITION: dict[str, int] = {axis.dim: i for i, axis in enumerate(AXES)}
"""Where each dim's index sits in an ``Index``."""

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


def pointwise(sweep: Sweep) -> tuple[Any, ...]:
    """The analyses ``sweep`` asks for that one point defines (none of the ``whole`` ones)."""
    return tuple(analysis for analysis in applicable(sweep) if not analysis.whole)


class ScalarEngine:
    """The ``Engine`` of ``sweeps.grid.analyses.base`` on scalars: plain calls, no layout.

    ``roofline`` makes the calls the compiled pass of ``sweeps.grid.roof`` makes per point.
    """

    def pointwise(self, function: Callable[..., Any], dims: tuple[str, ...], *args: Any) -> Any:
        """``function(*args)``: one point has no layout."""
        return function(*args)

    def roofline(
        self, dims: tuple[str, ...], *, with_tokens: bool, **inputs: Any
    ) -> dict[str, Any]:
        """The roofline of one point (inputs and keys as ``sweeps.grid.roof.roofline_outputs``:
        flops, nbytes, ai, batch, max_batch, peak, bandwidth, ridge, peak_flops)."""
        ai, peak, bandwidth, batch = (inputs[k] for k in ("ai", "peak", "bandwidth", "batch"))
        attainable = physics.attainable_flops(ai, peak, bandwidth)
        time = physics.roofline_time(inputs["flops"], inputs["nbytes"], peak, bandwidth)
        out = {
            "bottleneck": physics.is_compute_bound(ai, inputs["ridge"]),
            "attainable_flops": attainable,
            "utilization": physics.utilization(attainable, inputs["peak_flops"]),
            "time": time,
            "feasible": batch <= inputs["max_batch"],
        }
        if with_tokens:
            out["tokens_per_s"] = physics.tokens_per_second(batch, time)
        return out

    def fits(self, dims: tuple[str, ...], **inputs: Any) -> Any:
        """The roofline's ``feasible`` alone: ``batch <= max_batch``."""
        return inputs["batch"] <= inputs["max_batch"]


Table = dict[str, tuple[tuple[int, ...], np.ndarray]]
"""Every input of the grid: the positions in an ``Index`` of its dims, and its values."""


def input_table(sweep: Sweep) -> Table:
    """The coordinates and derived inputs of ``sweep``, as the grid starts from them."""
    from sweeps.grid.coords import derived_inputs, grid_coords

    table: Table = {}
    for name, (dims, values) in {**grid_coords(sweep), **derived_inputs(sweep)}.items():
        named = (dims,) if isinstance(dims, str) else dims
        table[name] = (tuple(POSITION[d] for d in named), values)
    return table


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
