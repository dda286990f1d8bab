"""The array helpers of the physics: a ``where`` that keeps the caller's array type, NaN for None.

``numpy.where`` turns an xarray DataArray into a bare ndarray and drops its dimensions, and
xarray is not a dependency of the physics. A DataArray carries a ``where`` method
(``DataArray.where(cond, other)``), which is used when any argument is one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = Any
"""A float, a numpy array or an xarray DataArray: whatever supports arithmetic and ufuncs."""


_FLAGS = frozenset({bool, np.bool_})
_NUMBERS = frozenset({float, int, np.float64, np.int64})
"""The scalar types ``where`` picks between itself: numpy.where makes float64 of a float and
an int, int64 of two ints, as this does."""


def where(cond: Array, x: Array, y: Array) -> Array:
    """Elementwise ``x`` where ``cond`` holds, else ``y``, broadcast over all three.

    Whichever argument is a DataArray (it has ``dims``) decides the result type, so the
    physics stays free of xarray imports; with none, ``numpy.where``.

    Parameters
    ----------
    cond : Boolean condition [1]
    x, y : Values chosen where ``cond`` is true / false [any unit, the same for both]
    """
    kinds = (type(x), type(y))
    if type(cond) in _FLAGS and kinds[0] in _NUMBERS and kinds[1] in _NUMBERS:
        # one point (``sweeps.point``): the pick numpy.where makes, without its 0-d arrays
        number = np.float64 if float in kinds or np.float64 in kinds else np.int64
        return number(x if cond else y)
    if hasattr(x, "dims"):
        return x.where(cond, y)
    if hasattr(y, "dims"):
        return y.where(np.logical_not(cond), x)
    if hasattr(cond, "dims"):  # lift x onto cond's dims: 0 * a boolean array is integer zeros
        return (x + 0 * cond).where(cond, y)
    return np.where(cond, x, y)


def on_values(fn: Any, *args: Array) -> Array:
    """``fn(*args)`` computed on the arguments' bare values, broadcast together.

    For an iteration of many steps (``sweeps.physics.moe``): each arithmetic step on a
    DataArray costs an alignment, on its values only the arithmetic. Where any argument is a
    DataArray, the others are broadcast to the dims of all of them and the result carries
    those dims and coordinates; with none, ``fn(*args)`` itself.

    Parameters
    ----------
    fn : A function of arrays, elementwise in each [-]
    args : Its arguments [any unit]
    """
    arrays = [a for a in args if hasattr(a, "dims")]
    if not arrays:
        return fn(*args)
    sizes: dict[Any, int] = {}
    for a in arrays:
        sizes.update(zip(a.dims, a.shape, strict=True))
    order = list(sizes)

    def bare(a: Array) -> Array:
        if not hasattr(a, "dims"):
            return a
        own = [d for d in order if d in a.dims]
        shape = [sizes[d] if d in a.dims else 1 for d in order]
        return a.transpose(*own).data.reshape(shape)

    template = sum(0 * a for a in arrays).transpose(*order)  # the type, dims and coordinates
    return template.copy(data=fn(*[bare(a) for a in args]))


def nan_for_none(x: Array) -> Array:
    """``x`` with missing values as NaN: None itself, or None inside an object array.

    Prices and other optional catalog figures arrive as None where unknown; arithmetic on NaN
    then gives NaN (a null), never zero. Decided on the type, never on a value.

    Parameters
    ----------
    x : A number, None, or an array (object arrays holding None included) [any unit]

    Returns
    -------
    ``x`` as floats where it held None [the unit of ``x``]
    """
    if x is None:
        return np.nan
    if getattr(x, "dtype", None) == np.dtype(object):
        return x.astype(float)
    return x
