"""``sweeps.physics._array``: ``on_values`` gives the same result on scalars, numpy, DataArrays and
Variables, with the broadcast dims and coordinates of the labelled arguments."""

from __future__ import annotations

import numpy as np
import xarray as xr

from sweeps.physics._array import on_values, where


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


def test_where_on_scalars_picks_as_numpy_does() -> None:
    # the scalar pick (sweeps.point's path) against numpy.where itself: the same value and the
    # same dtype for every pair of the scalar types it takes, and a zero picked stays a numpy
    # scalar (a division by it is inf, as numpy's 0-d result gives, never ZeroDivisionError)
    conds = (True, False, np.True_, np.False_)
    numbers = (0, 3, 0.0, 2.5, np.int64(-4), np.int64(0), np.float64(0.0), np.float64(-1.5))
    for cond in conds:
        for x in numbers:
            for y in numbers:
                got, want = where(cond, x, y), np.where(cond, x, y)
                assert got == want, (cond, x, y)
                assert np.asarray(got).dtype == want.dtype, (cond, x, y)
                assert isinstance(got, np.generic)
    with np.errstate(divide="ignore"):
        assert 1.0 / where(True, 0.0, 1.0) == np.inf
