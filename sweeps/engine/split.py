"""The compute roof split between the GEMMs and attention (docs/cost-model.md, FP4 split).

A step's GEMMs run at the weight format's peak and its attention (the scores and the weighted
sum over the cache) at the attention format's (``options.attention_dtype``; by default the KV
format's compute dtype, bf16 where a device lacks it). Where one peak runs both
(``_attention_ratio`` 1 everywhere: the same format, or ``attention_dtype = "gemm"``) the
roofline pass's outputs stand as they are, bit for bit; otherwise the per-point outputs are
taken again from ``sweeps.physics.split_roofline_time``: the time, the bottleneck, the FLOP/s
attained at that time, the utilization and the tokens/s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Inputs


def splits(x: Inputs) -> bool:
    """True where some device runs attention at another peak than the GEMMs."""
    return bool(np.any(np.asarray(x["_attention_ratio"]) != 1.0))


def attention_ratio(x: Inputs) -> Any:
    """GEMM peak over attention peak per device, KV and weight format [1]."""
    return x["_attention_ratio"]


def roofline(
    x: Inputs,
    dims: tuple[str, ...],
    work: Callable[[], tuple[Any, Any]],
    *,
    with_tokens: bool,
    **inputs: Any,
) -> dict[str, Any]:
    """The roofline of every point over ``dims``: the pass's outputs (``x.engine.roofline``,
    keys and ``inputs`` as ``sweeps.grid.roof.roofline_outputs``), taken at the split compute
    roof where some device runs attention at another peak than the GEMMs.

    There the time, the bottleneck, the FLOP/s attained at that time, the utilization and
    (``with_tokens``) the tokens/s are ``split_outputs``', and only feasibility is the pass's
    own (``batch <= max_batch``), so the pass is not run: computing its five full-rank
    outputs to replace them was 40 % of the grid's time (measured on issue 14's 16.8 M-point
    grid, 3 December). ``work`` gives the step's (GEMM FLOPs, attention FLOPs) per device
    [FLOP], called only then. So is work that differs by device (a prefix hit at each
    device's own cache, ``prefix_hit_rate = "trace"``): the pass takes the work per point,
    the same on every device.
    """
    if not (splits(x) or _per_device(inputs)):
        return x.engine.roofline(dims, with_tokens=with_tokens, **inputs)
    gemm, attention = work()
    device = (inputs["peak"], inputs["bandwidth"])
    step = (gemm, attention, inputs["nbytes"], inputs["ai"])
    out = split_outputs(x, dims, step, device, inputs["batch"] if with_tokens else None)
    return {**out, "feasible": x.engine.fits(dims, **inputs)}


def _per_device(inputs: dict[str, Any]) -> bool:
    """Whether the step's work has a hardware dim (the pass's has none)."""
    return any("hardware" in getattr(inputs[k], "dims", ()) for k in ("flops", "nbytes", "ai"))


def split_outputs(
    x: Inputs,
    dims: tuple[str, ...],
    work: tuple[Any, Any, Any, Any],
    device: tuple[Any, Any],
    tokens: Any = None,
) -> dict[str, Any]:
    """The time, bottleneck, attained FLOP/s, utilization and (given ``tokens``, the tokens a
    step makes) tokens/s at the split compute roof.

    ``work`` is ``(gemm FLOPs, attention FLOPs, bytes, arithmetic intensity)`` of the step,
    per device; ``device`` the GEMM peak and the bandwidth, efficiencies applied [FLOP/s,
    byte/s]. The split compute time and the memory time are computed once, and the time and
    the flag from them: ``physics.split_roofline_time`` and ``physics.split_compute_bound``,
    the same operations.
    """
    gemm, attention, nbytes, ai = work
    point, ratio = x.engine.pointwise, attention_ratio(x)
    peak, bandwidth = device
    compute = point(physics.split_compute_time, dims, gemm, attention, peak, ratio)
    memory = point(np.divide, dims, nbytes, bandwidth)
    time = point(np.maximum, dims, compute, memory)
    out = {"time": time, "bottleneck": point(_compute_bound, dims, compute, memory)}
    # min(AI * bandwidth, effective peak): the pass's own formula, the same bits where a point
    # is memory-bound; the effective peak is the step's FLOPs over its split compute time
    effective = point(_effective_peak, dims, gemm, attention, compute)
    attained = point(physics.attainable_flops, dims, ai, effective, bandwidth)
    out["attainable_flops"] = attained
    # over the step's own roof: the formats' peaks weighted by their FLOPs (the effective
    # peak, efficiency taken back out as the pass's ``peak_flops`` has none), so 0..1 holds
    own = point(_own_roof, dims, effective, x["peak_flops"], peak)
    out["utilization"] = point(physics.utilization, dims, attained, own)
    if tokens is not None:
        out["tokens_per_s"] = point(physics.tokens_per_second, dims, tokens, time)
    return out


def _compute_bound(compute: Any, memory: Any) -> Any:
    """True where the compute time reaches the memory time (a tie is compute-bound) [int8]."""
    return np.asarray(compute >= memory).astype(np.int8)


def _own_roof(effective: Any, peak_flops: Any, peak: Any) -> Any:
    """The step's own compute roof as a catalog peak: the effective peak (the step's FLOPs
    over their split compute time, the formats' peaks weighted by their FLOPs) over the
    efficiency ``peak / peak_flops`` [FLOP/s]."""
    return effective * peak_flops / peak


def _effective_peak(gemm: Any, attention: Any, compute: Any) -> Any:
    """The step's FLOPs over its split compute time ``compute`` [FLOP/s]."""
    return (gemm + attention) / compute


def timed_flops(x: Inputs, gemm: Any, attention: Any, total: Any) -> Any:
    """FLOPs that take at the GEMM peak the time the step's take at their two peaks [FLOP]:
    ``gemm + r attention``; ``total`` itself where one peak runs both (the same bits)."""
    if not splits(x):
        return total
    return gemm + attention_ratio(x) * attention


def timed_coefficients(x: Inputs, flops: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
    """A decode step's FLOP coefficients (``steps.step_coefficients``: the constant is the
    GEMMs', the per-token terms attention's) as ``timed_flops``."""
    if not splits(x):
        return flops
    ratio = attention_ratio(x)
    return flops[0], flops[1] * ratio, flops[2] * ratio
