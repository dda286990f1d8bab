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


def where(cond: Array, x: Array, y: Array) -> Array:
    """Elementwise ``x`` where ``cond`` holds, else ``y``, broadcast over all three.

    Whichever argument is a DataArray (it has ``dims``) decides the result type, so the
    physics stays free of xarray imports; with none, ``numpy.where``.

    Parameters
    ----------
    cond : Boolean condition [1]
    x, y : Values chosen where ``cond`` is true / false [any unit, the same for both]
    """
    if hasattr(x, "dims"):
        return x.where(cond, y)
    if hasattr(y, "dims"):
        return y.where(np.logical_not(cond), x)
    if hasattr(cond, "dims"):  # lift x onto cond's dims: 0 * a boolean array is integer zeros
        return (x + 0 * cond).where(cond, y)
    return np.where(cond, x, y)


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
