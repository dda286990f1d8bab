"""Small questions: a point, or a few hundred, without building a grid.

``build_grid`` costs 0.03-0.5 s a call whatever its size (148 ms for one point, measured: five
thousand xarray operations of bookkeeping around a few hundred floats). Here the points are
evaluated in one vectorized pass of the analyses' own compute functions on arrays of the
points (``sweeps.grid.scalar.ScalarEngine``'s plain calls instead of the grid's layout and
compiled pass): the same physics and the same terms as the grid, each input taken at each
point from the grid's own coordinates (``sweeps.grid.coords``), so every number equals the
grid's at that point. The ``whole`` analyses (serving, pools) reduce over devices, tp or
batch, so one point does not define them: they are left out, as in the scalar loop.

A point is a mapping of ``[axes]`` keys to one value each (``model`` and ``hardware`` at
least); the sweep its points span (every distinct value of each key, validated as a config
file is) is built once per call, so ``points`` over many points costs about one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _sweep(rows: Sequence[Mapping[str, Any]], options: Mapping[str, Any] | None) -> Any:
    """The sweep the points span: each ``[axes]`` key with its distinct values, in order."""
    from sweeps.pipeline.mapping import sweep_from_mapping

    axes: dict[str, list[Any]] = {}
    for row in rows:
        for key, value in row.items():
            seen = axes.setdefault(key, [])
            if value not in seen:
                seen.append(value)
    document: dict[str, Any] = {"sweep": {"name": "points"}, "axes": axes}
    if options:
        document["options"] = dict(options)
    return sweep_from_mapping(document)


def _indices(sweep: Any, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Each point's index along every axis of ``sweeps.axes.AXES`` (0 where not given)."""
    from sweeps.axes import AXES
    from sweeps.grid.coords import grid_coords

    coords = grid_coords(sweep)
    index = np.zeros((len(rows), len(AXES)), dtype=np.intp)
    for position, axis in enumerate(AXES):
        if axis.dim not in coords:
            continue
        labels = [str(label) for label in coords[axis.dim][1]]
        for row, point in enumerate(rows):
            if axis.dim in point:
                index[row, position] = labels.index(str(point[axis.dim]))
    return index


def points(
    rows: Sequence[Mapping[str, Any]], options: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Every pointwise output of the analyses at each of ``rows``, without building a grid.

    Parameters
    ----------
    rows
        The points: each a mapping of ``[axes]`` keys to one value (``model`` and
        ``hardware`` at least), e.g. ``{"model": "llama-3-8b", "hardware": "h100-sxm",
        "batch": 8}``.
    options
        A config's ``[options]`` table (default: the defaults).

    Returns
    -------
    list of dict
        One dict of Python scalars a point, in the order of ``rows``: each output by its
        variable's name (``time`` [s], ``tokens_per_s`` [token/s], ...), units as in
        ``decode.parquet``.
    """
    from sweeps.grid.analyses import Inputs
    from sweeps.grid.scalar import ScalarEngine, input_table, pointwise

    if not rows:
        return []
    sweep = _sweep(rows, options)
    index = _indices(sweep, rows)
    values = {
        name: data[tuple(index[:, p] for p in positions)] if positions else data
        for name, (positions, data) in input_table(sweep).items()
    }
    results: dict[str, Any] = {}
    engine = ScalarEngine()
    for analysis in pointwise(sweep):
        settings = sweep.studies.get(analysis.study)
        results.update(analysis.compute(Inputs(values, sweep.options, engine, results, settings)))
    shape = (len(rows),)
    columns = {
        name: np.broadcast_to(np.asarray(value), shape).tolist()
        for name, value in results.items()
        if np.ndim(value) <= 1 and not name.startswith("_")  # the outputs, not the terms
    }
    return [{name: column[i] for name, column in columns.items()} for i in range(len(rows))]


def point(options: Mapping[str, Any] | None = None, **axes: Any) -> dict[str, Any]:
    """The outputs at one point (``points`` of one).

    Parameters
    ----------
    options
        A config's ``[options]`` table (default: the defaults).
    **axes
        The point: one value per ``[axes]`` key, ``model`` and ``hardware`` at least
        (``point(model="llama-3-8b", hardware="h100-sxm", batch=8, context=4096)``).

    Returns
    -------
    dict
        Each output by its variable's name, as ``points`` gives them.
    """
    return points([axes], options)[0]
