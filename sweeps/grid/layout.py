"""How the grid lays an analysis's arrays out: the canonical order and the compiled pass.

``GridEngine`` is the ``Engine`` of ``sweeps.engine.base`` for xarray Variables: its
``pointwise`` computes a per-point quantity C-contiguous in canonical dim order (so the
roofline pass reads it in place), its ``roofline`` runs ``sweeps.grid.roof``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from sweeps.grid.roof import roofline_outputs


def order(variable: xr.Variable, dims: tuple[str, ...]) -> xr.Variable:
    """``variable`` with its dims in the order they have in ``dims``."""
    return variable.transpose(*[d for d in dims if d in variable.dims])


def with_extra(dims: tuple[str, ...], values: Any) -> tuple[str, ...]:
    """``dims`` and after them the other dims ``values`` (Variables among them) carry, in the
    canonical order of the axes: the dims an analysis takes on from the sweep (the parallel
    axes) without naming them in each call."""
    from sweeps.axes import canonical

    extra = {str(d) for v in values if isinstance(v, xr.Variable) for d in v.dims} - set(dims)
    return (*dims, *canonical(extra)) if extra else dims


def pointwise(function: Callable[..., Any], dims: tuple[str, ...], *args: Any) -> xr.Variable:
    """``function(*args)`` with numpy broadcasting in the canonical order of ``dims``.

    xarray orders a result's dimensions as they first appear in the expression, and numpy lays
    the result out by its operands' strides, so a per-point quantity such as the step bytes
    came out transposed (batch outermost) and the roofline pass copied it into order. Here
    every Variable operand is made contiguous with its dimensions in canonical order, size-1
    axes for the others (a copy only for the low-rank operands; per-point ones already are):
    the result is C-contiguous over its dimensions in that order, and the pass reads it in
    place.
    """
    variables = [a for a in args if isinstance(a, xr.Variable)]
    present = [d for d in with_extra(dims, variables) if any(d in v.dims for v in variables)]
    sizes = {d: max(v.sizes.get(d, 1) for v in variables) for d in present}
    tail = _tail([sizes[d] for d in present])
    whole = math.prod(sizes.values())

    def laid_out(a: Any) -> Any:
        if not isinstance(a, xr.Variable):
            return a
        own = [d for d in present if d in a.dims]
        data = np.ascontiguousarray(a.transpose(*own).values)
        data = data.reshape([a.sizes[d] if d in a.dims else 1 for d in present])
        return _spread(data, [sizes[d] for d in present[len(present) - tail :]], whole)

    return xr.Variable(present, function(*(laid_out(a) for a in args)))


SPAN = 4096
"""Elements of the innermost dims over which every operand of ``pointwise`` is laid out
in full (``_spread``) [1]."""


def _tail(shape: list[int]) -> int:
    """How many of the innermost dims of ``shape`` hold at most ``SPAN`` elements together."""
    count, product = 0, 1
    for size in reversed(shape):
        if product * size > SPAN:
            break
        count, product = count + 1, product * size
    return count


def _spread(data: np.ndarray, tail: list[int], whole: int) -> np.ndarray:
    """``data`` copied out over the innermost dims ``tail`` where it lacks some of them and the
    copy is small (an eighth of the result's ``whole`` elements at most).

    numpy walks a broadcast operation in inner loops over the innermost dims that every
    operand has in full: a device figure (hardware, dtypes) against a full-rank array of
    (..., context, kv_heads, kv_dtype, weight_dtype) left loops of 2 elements, and a division
    of 2.1 M points took 9.6 ms against 2.5 ms with the figure laid out over the 512 elements
    of those four dims (measured 3 December). The values are the same, bit for bit.
    """
    if not tail:
        return data
    shape = (*data.shape[: data.ndim - len(tail)], *tail)
    if tuple(data.shape) == shape or math.prod(shape) * 8 > whole:
        return data
    return np.ascontiguousarray(np.broadcast_to(data, shape))


@dataclass(frozen=True)
class GridEngine:
    """The grid's engine: named dims of ``sizes``, the compiled pass (``use_kernel``: force it
    on or off, for tests) and optional dask ``chunks`` per model and device."""

    sizes: Mapping[str, int]
    use_kernel: bool | None = None
    chunks: Mapping[str, int] | None = None

    def pointwise(self, function: Callable[..., Any], dims: tuple[str, ...], *args: Any) -> Any:
        """See ``pointwise``."""
        return pointwise(function, dims, *args)

    def roofline(
        self, dims: tuple[str, ...], *, with_tokens: bool, **inputs: Any
    ) -> dict[str, Any]:
        """See ``sweeps.grid.roof.roofline_outputs``."""
        return roofline_outputs(
            with_extra(dims, inputs.values()),
            dict(self.sizes),
            with_tokens=with_tokens,
            use_kernel=self.use_kernel,
            chunks=self.chunks,
            **inputs,
        )

    def fits(self, dims: tuple[str, ...], **inputs: Any) -> xr.Variable:
        """The pass's ``feasible`` alone (``batch <= max_batch``), over the dims it has
        (``dims`` and every dim of ``inputs``), C-contiguous [bool]."""
        full = with_extra(dims, inputs.values())
        fit = pointwise(np.less_equal, full, inputs["batch"], inputs["max_batch"])
        every = fit.set_dims({d: self.sizes[d] for d in full}).transpose(*full)
        return xr.Variable(full, np.ascontiguousarray(every.values))
