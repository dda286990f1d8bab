"""The one array helper the physics needs: a ``where`` that keeps the caller's array type.

``numpy.where`` turns an xarray DataArray into a bare ndarray and drops its dimensions, and
xarray is not a dependency of the physics. A DataArray condition carries a ``where`` method
(``DataArray.where(cond, other)``), which is used for it; everything else goes to numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = Any
"""A float, a numpy array or an xarray DataArray: whatever supports arithmetic and ufuncs."""


def where(cond: Array, x: Array, y: Array) -> Array:
    """Elementwise ``x`` where ``cond`` holds, else ``y``, broadcast over all three.

    Parameters
    ----------
    cond : Boolean condition [1]
    x, y : Values chosen where ``cond`` is true / false [any unit, the same for both]
    """
    method = getattr(cond, "where", None)
    if method is None:  # numpy array, numpy scalar or Python bool: a type check, not a value check
        return np.where(cond, x, y)
    # DataArray: lift x onto cond's dimensions (0 * cond is an integer zero array), then choose.
    return (x + 0 * cond).where(cond, y)
