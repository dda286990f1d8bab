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

import hashlib
import marshal
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

import numpy as np
import xarray as xr

from sweeps import physics

KERNEL_MIN_POINTS = 8_000_000
"""Full-rank points of one pass [point] from which the compiled kernel is used. The kernel's gain is
numpy's temporaries, and grows faster than the pass: measured on issue 14's grid (2 December,
idle two cores, warm), numpy took 0.01 s longer for 2.1 M points, 0.04-0.08 s for 4.2 M,
0.28-0.51 s for 8.4 M and 1.3-1.4 s for 16.8 M. Its first pass in a process costs 0.64 s more
(numba's import and its cached loop's load: the first model's grid 1.30 s with it, 0.66 s
without), so below about 8 M points one pass never earns it back, and a run of eight 2.1 M
passes (a grid computed model by model) lost about 0.4 s before its first row was written."""

ROOF_OUTPUTS = ("bottleneck", "attainable_flops", "utilization", "time", "tokens_per_s")


def _full_rank(da: xr.Variable, dims: tuple[str, ...]) -> np.ndarray:
    """``da``'s values with one axis per dim of ``dims`` (size 1 where ``da`` has none)."""
    present = [d for d in dims if d in da.dims]
    values = np.asarray(da.transpose(*present).values)
    return values.reshape([da.sizes[d] if d in da.dims else 1 for d in dims])


@cache
def _kernel() -> Callable[..., None] | None:
    """The compiled roofline loop, or None where numba is not installed (the ``fast`` extra)
    or cannot load here (an llvmlite that does not match: any error of its import)."""
    try:
        import numba
    except Exception:  # ImportError, or an OSError of llvmlite's shared library
        return None
    # IEEE division (inf/nan, no ZeroDivisionError branch) lets LLVM vectorize the loop.
    jit = numba.njit(error_model="numpy", inline="always")
    attainable = jit(physics.attainable_flops)
    utilization = jit(physics.utilization)
    compute_bound = jit(physics.is_compute_bound)
    roofline_time = jit(physics.roofline_time)
    tokens = jit(physics.tokens_per_second)

    def roof(
        ai,
        nbytes,
        flops,
        batch,
        max_batch,
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
        o_feasible,
    ):
        # points are (tp, batch, rest) in C order; max_batch has no batch axis; the device
        # figures vary with the rest too (the compute peak with the weight format)
        models, devices, splits, batches, rest = o_attainable.shape
        for m in range(models):
            for h in range(devices):
                pks, bws, rds, pfs = peak[h], bandwidth[h], ridge[h], peak_flops[h]
                for s in range(splits):
                    for b in range(batches):
                        size = batch[b]
                        for r in range(rest):
                            pk, bw, rd, pf = pks[r], bws[r], rds[r], pfs[r]
                            a = ai[m, s, b, r]
                            att = attainable(a, pk, bw)
                            t = roofline_time(flops[m, s, b, r], nbytes[m, s, b, r], pk, bw)
                            o_attainable[m, h, s, b, r] = att
                            o_utilization[m, h, s, b, r] = utilization(att, pf)
                            o_bottleneck[m, h, s, b, r] = compute_bound(a, rd)
                            o_time[m, h, s, b, r] = t
                            o_feasible[m, h, s, b, r] = size <= max_batch[m, h, s, r]
                        if with_tokens:  # a loop of its own keeps the one above branch-free
                            for r in range(rest):
                                o_tokens[m, h, s, b, r] = tokens(size, o_time[m, h, s, b, r])

    return _cached(numba, roof)


def _temporary_cache() -> str:
    """A cache folder in the temporary folder: this user's own, kept across runs so that
    only the first compiles; a fresh one if another user holds that name."""
    folder = Path(tempfile.gettempdir()) / f"sweeps-numba-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.stat().st_uid == os.getuid() and os.access(folder, os.W_OK):
            return str(folder)
    except OSError:
        pass
    return tempfile.mkdtemp(prefix="sweeps-numba-")


def _physics_digest() -> str:
    """SHA-256 of the ``sweeps.physics`` sources the loop inlines [hex]."""
    digest = hashlib.sha256()
    for source in sorted(Path(physics.__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _cache_class(numba: Any) -> type:
    """numba's on-disk cache, keyed by the loop's code and the physics it inlines.

    numba's own key hashes the pickled closure (the physics dispatchers), which pickle with a
    fresh id in every process: every run missed its cache and compiled the loop again, 1 to
    3 s of a cold run. The physics sources' digest keys it instead, so an edit to the physics
    still recompiles."""
    from numba.core.caching import FunctionCache

    physics_key = _physics_digest()

    class PhysicsKeyedCache(FunctionCache):
        def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
            code = hashlib.sha256(marshal.dumps(self._py_func.__code__)).hexdigest()
            return (sig, codegen.magic_tuple(), (code, physics_key))

    return PhysicsKeyedCache


def _cached(numba: Any, function: Callable[..., None]) -> Callable[..., None]:
    """``function`` compiled with its machine code cached on disk, beside the package or in
    numba's user cache folder; where neither is writable (a read-only install run by a user
    without a writable home), in a temporary folder instead, said once with a warning."""
    dispatcher = numba.njit(nogil=True, error_model="numpy")(function)
    cache = _cache_class(numba)
    try:
        dispatcher._cache = cache(dispatcher.py_func)
    except RuntimeError as error:
        if "no locator available" not in str(error):
            raise
        config: Any = numba.core.config
        config.CACHE_DIR = _temporary_cache()
        warnings.warn(
            "sweeps: no writable place to cache the compiled roofline loop (the package "
            f"folder and the home folder are read-only); caching it in {config.CACHE_DIR}",
            RuntimeWarning,
            stacklevel=3,
        )
        dispatcher._cache = cache(dispatcher.py_func)
    return cast(Callable[..., None], dispatcher)


def roofline_outputs(
    dims: tuple[str, ...],
    sizes: dict[str, int],
    *,
    flops: xr.Variable,
    nbytes: xr.Variable,
    ai: xr.Variable,
    batch: xr.Variable,
    max_batch: xr.Variable,
    peak: xr.Variable,
    bandwidth: xr.Variable,
    ridge: xr.Variable,
    peak_flops: xr.Variable,
    with_tokens: bool,
    use_kernel: bool | None = None,
    chunks: Mapping[str, int] | None = None,
) -> dict[str, xr.Variable]:
    """Bottleneck, attainable FLOP/s, utilization, roofline time, feasibility (and tokens/s).

    ``dims`` is ``model, hardware, tp, batch, ...``; ``flops``, ``nbytes`` and ``ai`` have no
    hardware dimension, ``max_batch`` no batch dimension, the device figures no model, tp or
    batch dimension (the compute peak depends on the weight format).
    ``use_kernel`` forces the compiled (True) or the numpy (False) path; by default the kernel
    runs on large grids when available. ``chunks`` (``{"model": n, "hardware": n}``, needs
    dask) returns dask arrays instead, one block per that many models and devices, each
    evaluated only when computed.

    Returns Variables over ``dims``: ``bottleneck`` [int8 flag], ``attainable_flops``
    [FLOP/s], ``utilization`` [1], ``time`` [s], ``feasible`` [bool] (batch <= max_batch) and,
    with ``with_tokens``, ``tokens_per_s`` [token/s].
    """
    if dims[:4] != ("model", "hardware", "tp", "batch"):
        msg = f"roofline_outputs needs dims starting with model, hardware, tp, batch: {dims}"
        raise ValueError(msg)
    inputs = _gather(
        dims, sizes, ai=ai, nbytes=nbytes, flops=flops, batch=batch, max_batch=max_batch,
        device=(peak, bandwidth, ridge, peak_flops),
    )  # fmt: skip
    points = math.prod(sizes[d] for d in dims)
    if use_kernel is None:
        # numba is imported (0.4 s) only for a grid big enough to gain from it
        use_kernel = points >= KERNEL_MIN_POINTS and _kernel() is not None
    names = (*(ROOF_OUTPUTS if with_tokens else ROOF_OUTPUTS[:-1]), "feasible")
    full_shape = tuple(sizes[d] for d in dims)
    out: Mapping[str, Any] = (
        _evaluate(inputs, with_tokens, use_kernel)
        if chunks is None
        else _lazy(inputs, names, chunks, with_tokens, use_kernel)
    )
    return {name: xr.Variable(dims, out[name].reshape(full_shape)) for name in names}


def _gather(
    dims: tuple[str, ...],
    sizes: dict[str, int],
    *,
    ai: xr.Variable,
    nbytes: xr.Variable,
    flops: xr.Variable,
    batch: xr.Variable,
    max_batch: xr.Variable,
    device: tuple[xr.Variable, ...],
) -> _Inputs:
    """The pass's inputs as contiguous float64 arrays in its loop order (see ``_Inputs``)."""
    models, devices, splits, batches = (sizes[d] for d in dims[:4])
    rest = tuple(sizes[d] for d in dims[4:])
    size = math.prod(rest)

    def contiguous(da: xr.Variable, shape: tuple[int, ...], final: tuple[int, ...]) -> Any:
        full = np.broadcast_to(_full_rank(da, dims), shape)
        return np.ascontiguousarray(full, dtype=np.float64).reshape(final)

    per_point = (models, 1, splits, batches, *rest)
    point_shape = (models, splits, batches, size)
    return _Inputs(
        ai=contiguous(ai, per_point, point_shape),
        nbytes=contiguous(nbytes, per_point, point_shape),
        flops=contiguous(flops, per_point, point_shape),
        batch=np.asarray(batch.values, dtype=np.float64),
        max_batch=contiguous(
            max_batch, (models, devices, splits, 1, *rest), (models, devices, splits, size)
        ),
        device=tuple(contiguous(x, (1, devices, 1, 1, *rest), (devices, size)) for x in device),
    )


@dataclass(frozen=True)
class _Inputs:
    """The roofline pass's inputs: per point (model, tp, batch, rest) without the device,
    ``max_batch`` per (model, device, tp, rest), the device figures per (device, rest)."""

    ai: np.ndarray
    nbytes: np.ndarray
    flops: np.ndarray
    batch: np.ndarray
    max_batch: np.ndarray
    device: tuple[np.ndarray, ...]  # peak, bandwidth, ridge, peak_flops

    def block(self, models: slice, devices: slice) -> _Inputs:
        """The inputs of some models on some devices."""
        return _Inputs(
            self.ai[models],
            self.nbytes[models],
            self.flops[models],
            self.batch,
            np.ascontiguousarray(self.max_batch[models, devices]),
            tuple(x[devices] for x in self.device),
        )


_DTYPES = {"bottleneck": np.int8, "feasible": np.bool_}


def _evaluate(inputs: _Inputs, with_tokens: bool, use_kernel: bool) -> dict[str, np.ndarray]:
    """Every output of the pass over (model, device, tp, batch, rest), written once."""
    models, splits, batches, size = inputs.ai.shape
    shape = (models, len(inputs.device[0]), splits, batches, size)
    out: dict[str, np.ndarray] = {
        name: np.empty(shape, dtype=_DTYPES.get(name, np.float64))
        for name in (*ROOF_OUTPUTS[:-1], "feasible")
    }
    out["tokens_per_s"] = np.empty(shape if with_tokens else (1, 1, 1, 1, 1))
    kernel = _kernel() if use_kernel else None
    args = [inputs.ai, inputs.nbytes, inputs.flops, inputs.batch, inputs.max_batch]
    if kernel is not None and _compiled(kernel, args, inputs, with_tokens, out):
        return out
    _numpy_roof(args, list(inputs.device), with_tokens, out)
    return out


def _compiled(
    kernel: Callable[..., None],
    args: list[np.ndarray],
    inputs: _Inputs,
    with_tokens: bool,
    out: dict[str, np.ndarray],
) -> bool:
    """Run the compiled pass into ``out``; False (numpy then does it) where numba fails to
    compile it here, said once with a warning: the numbers never depend on numba."""
    try:
        kernel(
            *args,
            *inputs.device,
            with_tokens,
            *(out[n] for n in ("bottleneck", "attainable_flops", "utilization", "time")),
            out["tokens_per_s"],
            out["feasible"],
        )
    except Exception as error:  # numba's own errors (typing, lowering, LLVM) have no common base
        if not _FAILED:
            warnings.warn(
                f"the compiled roofline loop failed ({type(error).__name__}: {error}); "
                "numpy computes it instead",
                RuntimeWarning,
                stacklevel=2,
            )
        _FAILED.append(error)
        return False
    return True


_FAILED: list[BaseException] = []
"""Compile failures of the loop in this process (the warning is said for the first)."""


def _lazy(
    inputs: _Inputs,
    names: tuple[str, ...],
    chunks: Mapping[str, int],
    with_tokens: bool,
    use_kernel: bool,
) -> dict[str, Any]:
    """The outputs as dask arrays: one delayed pass per block of models and devices."""
    unknown = sorted(set(chunks) - {"model", "hardware"})
    if unknown or any(int(n) < 1 for n in chunks.values()):
        msg = (
            f"chunks: {dict(chunks)} is not valid; allowed keys: 'model', 'hardware', "
            "each a positive number of labels per block"
        )
        raise ValueError(msg)
    import dask
    import dask.array as dsa

    models, splits, batches, size = inputs.ai.shape
    devices = len(inputs.device[0])

    def ranges(total: int, step: int) -> list[slice]:
        return [slice(i, min(i + step, total)) for i in range(0, total, step)]

    rows: dict[str, list[Any]] = {name: [] for name in names}
    for m in ranges(models, int(chunks.get("model", models))):
        row: dict[str, list[Any]] = {name: [] for name in names}
        for h in ranges(devices, int(chunks.get("hardware", devices))):
            part = dask.delayed(_evaluate, pure=True, traverse=False)(
                inputs.block(m, h), with_tokens, use_kernel
            )
            shape = (m.stop - m.start, h.stop - h.start, splits, batches, size)
            for name in names:
                dtype = _DTYPES.get(name, np.float64)
                row[name].append(dsa.from_delayed(part[name], shape=shape, dtype=dtype))
        for name in names:
            rows[name].append(dsa.concatenate(row[name], axis=1))
    return {name: dsa.concatenate(rows[name], axis=0) for name in names}


def _numpy_roof(
    args: list[np.ndarray], device: list[np.ndarray], with_tokens: bool, out: dict[str, Any]
) -> None:
    """The same physics, one device at a time, with numpy (no compiler needed)."""
    ai, nbytes, flops, batch, max_batch = args
    size = batch[:, None]  # (batch, 1) against points (model, tp, batch, rest)
    for h, (pk, bw, rd, pf) in enumerate(zip(*device, strict=True)):  # each (rest,): broadcast
        attainable = physics.attainable_flops(ai, pk, bw)
        time = physics.roofline_time(flops, nbytes, pk, bw)
        out["attainable_flops"][:, h] = attainable
        out["utilization"][:, h] = physics.utilization(attainable, pf)
        out["bottleneck"][:, h] = physics.is_compute_bound(ai, rd)
        out["time"][:, h] = time
        out["feasible"][:, h] = size <= max_batch[:, h, :, None, :]
        if with_tokens:
            out["tokens_per_s"][:, h] = physics.tokens_per_second(size, time)
