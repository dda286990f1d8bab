"""``sweeps.physics._array.on_values``: the same result on scalars, numpy, DataArrays and
Variables, with the broadcast dims and coordinates of the labelled arguments."""

from __future__ import annotations

import numpy as np
import xarray as xr

from sweeps.physics._array import on_values


def _fn(a, b, c):
    return a * b + c


def test_scalars_and_numpy_are_passed_through() -> None:
    assert on_values(_fn, 2.0, 3.0, 1.0) == 7.0
    np.testing.assert_array_equal(on_values(_fn, np.array([1.0, 2.0]), 3.0, 1.0), [4.0, 7.0])


def test_dataarrays_broadcast_by_name_and_keep_their_coordinates() -> None:
    a = xr.DataArray([1.0, 2.0], dims="x", coords={"x": [10, 20]})
    b = xr.DataArray([[1.0, 2.0, 3.0]] * 2, dims=("x", "y")).transpose("y", "x")
    out = on_values(_fn, a, b, 0.5)
    expected = a * b + 0.5
    assert set(out.dims) == {"x", "y"}
    xr.testing.assert_identical(out.transpose(*expected.dims), expected)
    assert list(out["x"].values) == [10, 20]


def test_variables_are_broadcast_too() -> None:
    a = xr.Variable("x", [1.0, 2.0])
    b = xr.Variable("y", [3.0, 4.0, 5.0])
    out = on_values(_fn, a, b, 1.0)
    assert isinstance(out, xr.Variable)
    np.testing.assert_array_equal(out.transpose("x", "y").values, np.outer([1, 2], [3, 4, 5]) + 1)
