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

``point`` is the loop's call, and its fixed cost is what a loop pays: it resolves a point
(validation, catalog records, coordinates and derived inputs) once per distinct value of its
other inputs and keeps it (``CACHED`` of them), so that a loop over batches and contexts
(``FREE``) checks each new value's range and computes, on numpy scalars.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

FREE = ("batch", "context", "prompt")
"""Axes of plain counts that the analyses read only as their own coordinate and a config
checks one value at a time (its range, ``sweeps.config.schema.Axes``): a point's values along
them change without resolving the point again."""

CACHED = 256
"""Resolved points ``point`` keeps, by the call's inputs other than ``FREE`` [1]."""


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


def _prompts(rows: Sequence[Mapping[str, Any]], values: dict[str, Any]) -> None:
    """Each point's own prompt length in ``values``: the one it gives, else its context (as a
    config without ``axes.prompt``), not the first of the prompts the points span."""
    from sweeps.config import prompt_lengths

    if "prompt" in values and "context" in values:
        contexts = values["context"]
        given = [
            prompt_lengths(row.get("prompt"), c) for row, c in zip(rows, contexts, strict=True)
        ]
        values["prompt"] = np.asarray(given, dtype=values["prompt"].dtype)


def _evaluate(sweep: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every output and term of the pointwise analyses of ``sweep`` at ``values``."""
    from sweeps.grid.analyses import Inputs
    from sweeps.grid.scalar import ScalarEngine

    results: dict[str, Any] = {}
    engine = ScalarEngine()
    for analysis in sweep.analyses:
        settings = sweep.studies.get(analysis.study)
        results.update(analysis.compute(Inputs(values, sweep.options, engine, results, settings)))
    return results


@dataclass(frozen=True)
class _Analyses:
    """What ``_evaluate`` reads of a sweep: its pointwise analyses, options, study settings."""

    analyses: tuple[Any, ...]
    options: Any
    studies: Mapping[str, Any]

    @classmethod
    def of(cls, sweep: Any) -> _Analyses:
        from sweeps.grid.scalar import pointwise

        return cls(pointwise(sweep), sweep.options, sweep.studies)


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
    from sweeps.grid.scalar import input_table

    if not rows:
        return []
    sweep = _sweep(rows, options)
    index = _indices(sweep, rows)
    values = {
        name: data[tuple(index[:, p] for p in positions)] if positions else data
        for name, (positions, data) in input_table(sweep).items()
    }
    _prompts(rows, values)
    results = _evaluate(_Analyses.of(sweep), values)
    shape = (len(rows),)
    columns = {
        name: np.broadcast_to(np.asarray(value), shape).tolist()
        for name, value in results.items()
        if np.ndim(value) <= 1 and not name.startswith("_")  # the outputs, not the terms
    }
    return [{name: column[i] for name, column in columns.items()} for i in range(len(rows))]


@dataclass(frozen=True)
class _Point:
    """One point resolved: its analyses and every input at it, as numpy scalars."""

    sweep: _Analyses
    values: dict[str, Any]

    def at(self, free: Mapping[str, int]) -> dict[str, Any]:
        """The inputs with the ``FREE`` values ``free`` (checked), the prompt following the
        context where the point gives none."""
        from sweeps.config import prompt_lengths

        values = dict(self.values)
        for dim in ("batch", "context"):
            if dim in free and dim in values:
                values[dim] = type(values[dim])(free[dim])
        if "prompt" in values and "context" in values:
            given = prompt_lengths(free.get("prompt"), values["context"])
            values["prompt"] = type(values["prompt"])(given)
        return values


def _resolve(axes: Mapping[str, Any], options: Mapping[str, Any] | None) -> _Point:
    """The point ``axes`` validated as a config file is, its inputs taken at it."""
    from sweeps.grid.scalar import input_table

    sweep = _sweep([axes], options)
    values = {
        name: data[(0,) * len(positions)] for name, (positions, data) in input_table(sweep).items()
    }
    return _Point(_Analyses.of(sweep), values)


_RESOLVED: dict[str, _Point] = {}
"""The points ``point`` resolved, by ``_key`` (at most ``CACHED``, the oldest let go first)."""


def clear() -> None:
    """Let go of every point ``point`` keeps: the next call of each resolves it again."""
    _RESOLVED.clear()


def _key(axes: Mapping[str, Any], options: Mapping[str, Any] | None) -> str:
    """A point's inputs but its ``FREE`` values (only which of them it gives)."""
    fixed = sorted((k, v) for k, v in axes.items() if k not in FREE)
    given = sorted(k for k in axes if k in FREE)
    return repr((fixed, given, sorted((options or {}).items())))


def _resolved(axes: Mapping[str, Any], options: Mapping[str, Any] | None) -> _Point:
    """``_resolve`` once per ``_key``, kept for the calls after."""
    key = _key(axes, options)
    found = _RESOLVED.get(key)
    if found is None:
        found = _resolve(axes, options)
        while len(_RESOLVED) >= CACHED:
            _RESOLVED.pop(next(iter(_RESOLVED)), None)
        _RESOLVED[key] = found
    return found


@cache
def _range(dim: str) -> Any:
    """The check of one ``[axes]`` key's values, as the config schema declares it."""
    from pydantic import ConfigDict, TypeAdapter

    from sweeps.config import schema

    annotation: Any = schema.Axes.model_fields[dim].annotation
    return TypeAdapter(annotation, config=ConfigDict(strict=True))


def _free(axes: Mapping[str, Any]) -> dict[str, int] | None:
    """The point's ``FREE`` values where each is a whole number its axis allows; None where
    one is not (the whole point is then validated, and its message given)."""
    from pydantic import ValidationError

    free: dict[str, int] = {}
    for dim in FREE:
        if dim not in axes:
            continue
        value = axes[dim]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            return None
        try:
            _range(dim).validate_python([int(value)])
        except ValidationError:
            return None
        free[dim] = int(value)
    return free


_PLAIN = (float, int, str, type(None))
"""Outputs already Python scalars (``bool`` is an ``int``)."""


def _outputs(results: Mapping[str, Any]) -> dict[str, Any]:
    """The outputs of ``results`` (not the terms, nothing of more than one dim), as Python
    scalars, as ``points`` gives them (an array of one element: that element)."""
    out: dict[str, Any] = {}
    for name, value in results.items():
        if name.startswith("_"):
            continue
        if isinstance(value, np.generic):
            out[name] = value.item()
        elif isinstance(value, _PLAIN):
            out[name] = value
        elif np.ndim(value) <= 1:
            out[name] = np.asarray(value).reshape(-1)[0].tolist()
    return out


def point(options: Mapping[str, Any] | None = None, **axes: Any) -> dict[str, Any]:
    """The outputs at one point (``points`` of one, the same numbers).

    A loop of these pays the validation and the catalog once per model, device and formats
    (``CACHED`` kept), then a fraction of a millisecond a point.

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
    free = _free(axes)
    resolved = _resolve(axes, options) if free is None else _resolved(axes, options)
    values = resolved.values if free is None else resolved.at(free)
    return _outputs(_evaluate(resolved.sweep, values))
