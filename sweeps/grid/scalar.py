"""The grid's ``Engine`` on scalars, and the inputs of one point: what evaluates an analysis's
compute on Python floats, one point at a time (the benchmark's scalar loop, ``sweeps.bench.scalar``;
the simulator's step costs, ``sweeps.studies.serving.simulate.costs``).

A point is one index per axis of ``sweeps.axes.AXES`` (``POSITION``); its inputs are the
coordinates and derived inputs of ``sweeps.grid.coords`` at that index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.axes import AXES

POSITION: dict[str, int] = {axis.dim: i for i, axis in enumerate(AXES)}
"""Where each dim's index sits in a point's index (one per axis of ``AXES``, in its order)."""


class ScalarEngine:
    """The ``Engine`` of ``sweeps.engine.base`` on scalars: plain calls, no layout.

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


def input_table(sweep: Any) -> Table:
    """The coordinates and derived inputs of ``sweep``, as the grid starts from them."""
    from sweeps.grid.coords import derived_inputs, grid_coords

    table: Table = {}
    for name, (dims, values) in {**grid_coords(sweep), **derived_inputs(sweep)}.items():
        named = (dims,) if isinstance(dims, str) else dims
        table[name] = (tuple(POSITION[d] for d in named), values)
    return table


def point_inputs(sweep: Any, point: dict[str, int] | None = None) -> Any:
    """The grid's inputs at one point of ``sweep`` (indices by dim, 0 where not given),
    with the model and decode analyses evaluated on it: ``Inputs`` of Python scalars."""
    from sweeps.grid.analyses import ANALYSES, Inputs

    index = [0] * len(POSITION)
    for dim, at in (point or {}).items():
        index[POSITION[dim]] = at
    table = input_table(sweep)
    values = {name: data.item(*(index[p] for p in pos)) for name, (pos, data) in table.items()}
    results: dict[str, Any] = {}
    for analysis in (a for a in ANALYSES if a.name in ("model", "decode")):
        inputs = Inputs(values, sweep.options, ScalarEngine(), results)
        results.update(analysis.compute(inputs))
    return Inputs(values, sweep.options, ScalarEngine(), results)


def pointwise(sweep: Any) -> tuple[Any, ...]:
    """The analyses ``sweep`` asks for that one point defines (none of the ``whole`` ones)."""
    from sweeps.grid.analyses import applicable

    return tuple(analysis for analysis in applicable(sweep) if not analysis.whole)
