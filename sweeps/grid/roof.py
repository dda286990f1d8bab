"""The outputs that span the whole grid: the roofline of every point on every device.

Everything else in the grid has fewer dimensions and is evaluated by xarray broadcasting. These
outputs (bottleneck, attainable FLOP/s, utilization, step time or TTFT, tokens/s) depend on the
device, so they are the grid's only full-rank arrays, and they are produced in one pass: a
numba-compiled loop that calls the same ``sweeps.physics`` functions (compiled for scalars) and
writes each result once. Without numba, or for small grids where compiling would cost more
than it saves, numpy evaluates the same functions one device at a time; both give the same
bits (IEEE arithmetic, no fast-math).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import xarray as xr

from sweeps import physics

KERNEL_MIN_POINTS = 2_000_000
"""Full-rank points from which the compiled kernel is used (below, numpy is as fast)."""

ROOF_OUTPUTS = ("bottleneck", "attainable_flops", "utilization", "time", "tokens_per_s")


def _full_rank(da: xr.DataArray, dims: tuple[str, ...]) -> np.ndarray:
    """``da``'s values with one axis per dim of ``dims`` (size 1 where ``da`` has none)."""
    present = [d for d in dims if d in da.dims]
    values = np.asarray(da.transpose(*present).values)
    return values.reshape([da.sizes[d] if d in da.dims else 1 for d in dims])


@cache
def _kernel() -> Callable[..., None] | None:
    """The compiled roofline loop, or None where numba is not installed."""
    try:
        import numba
    except ImportError:
        return None
    # IEEE division (inf/nan, no ZeroDivisionError branch) lets LLVM vectorize the loop.
    jit = numba.njit(error_model="numpy", inline="always")
    attainable = jit(physics.attainable_flops)
    utilization = jit(physics.utilization)
    compute_bound = jit(physics.is_compute_bound)
    roofline_time = jit(physics.roofline_time)
    tokens = jit(physics.tokens_per_second)

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def roof(
        ai,
        nbytes,
        flops,
        batch,
        peak,
        bandwidth,
        ridge,
        peak_flops,
        with_tokens,
        o_bottleneck,
        o_attainable,
        o_utilization,
        o_time,
        o_tokens,
    ):
        models, devices, points = o_attainable.shape
        for m in range(models):
            for h in range(devices):
                pk, bw, rd, pf = peak[h], bandwidth[h], ridge[h], peak_flops[h]
                for j in range(points):
                    a = ai[m, j]
                    att = attainable(a, pk, bw)
                    t = roofline_time(flops[m, j], nbytes[m, j], pk, bw)
                    o_attainable[m, h, j] = att
                    o_utilization[m, h, j] = utilization(att, pf)
                    o_bottleneck[m, h, j] = compute_bound(a, rd)
                    o_time[m, h, j] = t
                    if with_tokens:
                        o_tokens[m, h, j] = tokens(batch[m, j], t)

    return roof


def roofline_outputs(
    dims: tuple[str, ...],
    sizes: dict[str, int],
    *,
    flops: xr.DataArray,
    nbytes: xr.DataArray,
    ai: xr.DataArray,
    batch: xr.DataArray,
    peak: xr.DataArray,
    bandwidth: xr.DataArray,
    ridge: xr.DataArray,
    peak_flops: xr.DataArray,
    with_tokens: bool,
    use_kernel: bool | None = None,
) -> dict[str, xr.DataArray]:
    """Bottleneck, attainable FLOP/s, utilization, roofline time (and tokens/s) at full rank.

    ``dims`` starts with ``model, hardware``; ``flops``, ``nbytes``, ``ai`` and ``batch`` have
    no hardware dimension, the device figures only that one. ``use_kernel`` forces the compiled
    (True) or the numpy (False) path; by default the kernel runs on large grids when available.

    Returns DataArrays over ``dims``: ``bottleneck`` [int8 flag], ``attainable_flops``
    [FLOP/s], ``utilization`` [1], ``time`` [s] and, with ``with_tokens``, ``tokens_per_s``
    [token/s].
    """
    if dims[:2] != ("model", "hardware"):
        msg = f"roofline_outputs needs dims starting with model, hardware, got {dims}"
        raise ValueError(msg)
    models, devices = sizes[dims[0]], sizes[dims[1]]
    rest = tuple(sizes[d] for d in dims[2:])
    points = int(np.prod(rest))

    def per_point(da: xr.DataArray) -> np.ndarray:  # (model, points), contiguous
        full = np.broadcast_to(_full_rank(da, dims), (models, 1, *rest))
        return np.ascontiguousarray(full).reshape(models, points)

    def per_device(da: xr.DataArray) -> np.ndarray:
        return np.ascontiguousarray(_full_rank(da, dims).reshape(-1), dtype=np.float64)

    args = [per_point(ai), per_point(nbytes), per_point(flops), per_point(batch).astype(float)]
    device = [per_device(peak), per_device(bandwidth), per_device(ridge), per_device(peak_flops)]
    shape = (models, devices, points)
    out: dict[str, np.ndarray] = {
        "bottleneck": np.empty(shape, dtype=np.int8),
        "attainable_flops": np.empty(shape),
        "utilization": np.empty(shape),
        "time": np.empty(shape),
        "tokens_per_s": np.empty(shape if with_tokens else (1, 1, 1)),
    }
    kernel = _kernel()
    if use_kernel is None:
        use_kernel = kernel is not None and models * devices * points >= KERNEL_MIN_POINTS
    if use_kernel and kernel is not None:
        kernel(*args, *device, with_tokens, *out.values())
    else:
        _numpy_roof(args, device, with_tokens, out)
    full_shape = tuple(sizes[d] for d in dims)
    names = ROOF_OUTPUTS if with_tokens else ROOF_OUTPUTS[:-1]
    return {name: xr.DataArray(out[name].reshape(full_shape), dims=dims) for name in names}


def _numpy_roof(
    args: list[np.ndarray], device: list[np.ndarray], with_tokens: bool, out: dict[str, Any]
) -> None:
    """The same physics, one device at a time, with numpy (no compiler needed)."""
    ai, nbytes, flops, batch = args
    for h, (pk, bw, rd, pf) in enumerate(zip(*device, strict=True)):
        attainable = physics.attainable_flops(ai, pk, bw)
        time = physics.roofline_time(flops, nbytes, pk, bw)
        out["attainable_flops"][:, h] = attainable
        out["utilization"][:, h] = physics.utilization(attainable, pf)
        out["bottleneck"][:, h] = physics.is_compute_bound(ai, rd)
        out["time"][:, h] = time
        if with_tokens:
            out["tokens_per_s"][:, h] = physics.tokens_per_second(batch, time)
