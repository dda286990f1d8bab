"""The grid's layout (``sweeps.grid.layout``): ``pointwise`` against xarray's own broadcasting,
and the operands it spreads over the innermost dims."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.grid import layout
from sweeps.grid.layout import SPAN, pointwise

DIMS = ("model", "hardware", "tp", "batch", "context", "kv_heads", "kv_dtype", "weight_dtype")
SIZES = {"model": 2, "hardware": 3, "tp": 1, "batch": 64, "context": 8, "kv_heads": 3,
         "kv_dtype": 2, "weight_dtype": 2}  # fmt: skip


def variable(dims: tuple[str, ...], seed: int) -> xr.Variable:
    rng = np.random.default_rng(seed)
    order = dims[::-1]  # stored in another order than the canonical one
    return xr.Variable(order, rng.random([SIZES[d] for d in order]) + 0.5)


subsets = st.lists(st.sampled_from(DIMS), min_size=1, unique=True).map(tuple)


@settings(max_examples=40, deadline=None)
@given(subsets, subsets, st.integers(0, 2**16))
def test_pointwise_is_xarrays_broadcasting_bit_for_bit_in_canonical_order(
    first: tuple[str, ...], second: tuple[str, ...], seed: int
) -> None:
    a, b = variable(first, seed), variable(second, seed + 1)
    out = pointwise(lambda x, y, z: x / y * z, DIMS, a, b, 3.0)
    expected = (a / b * 3.0).transpose(*[d for d in DIMS if d in out.dims])
    assert out.dims == tuple(d for d in DIMS if d in set(first) | set(second))
    np.testing.assert_array_equal(out.values, expected.values)
    assert out.values.flags.c_contiguous


def _operands(*args: Any) -> list[np.ndarray]:
    seen: list[np.ndarray] = []

    def record(*arrays: np.ndarray) -> np.ndarray:
        seen.extend(arrays)
        return np.asarray(arrays[0] * arrays[1])

    pointwise(record, DIMS, *args)
    return seen


def test_a_device_figure_is_laid_out_over_the_innermost_dims() -> None:
    full = variable(DIMS, 1)
    device = variable(("hardware", "weight_dtype"), 2)
    big, small = _operands(full, device)
    assert big.shape == tuple(SIZES[d] for d in DIMS)
    # context x kv_heads x kv_dtype x weight_dtype = 96 elements, batch too would pass SPAN
    assert small.shape == (1, 3, 1, 1, 8, 3, 2, 2)
    assert small.flags.c_contiguous
    assert 96 * SIZES["batch"] > SPAN >= 96
    np.testing.assert_array_equal(small[0, :, 0, 0, 5, 1, 1, :], device.transpose().values)


def test_an_operand_whose_copy_would_be_large_is_left_as_it_is() -> None:
    # the same as the full grid but for the innermost dim: spread, it would be half the result
    full = variable(DIMS, 3)
    most = variable(DIMS[:-1], 4)
    _, kept = _operands(full, most)
    assert kept.shape == (*(SIZES[d] for d in DIMS[:-1]), 1)


def test_the_tail_stops_before_passing_the_span() -> None:
    assert layout._tail([1024, 32, 4, 2, 2]) == 4
    assert layout._tail([SPAN + 1]) == 0
    assert layout._tail([2, 2]) == 2
    assert layout._tail([]) == 0
