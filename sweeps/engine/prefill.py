"""Prefill: N prompt tokens for B sequences (docs/cost-model.md section 4).

FLOPs (linear layers and causal attention), the bytes of the weights read and the new caches
written, and the roofline of every point on every device: bottleneck, attainable FLOP/s,
time to first token, feasibility.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS, handoff_time, link_time, parallel
from sweeps.engine.split import roofline
from sweeps.engine.steps import prefill_split, prefill_work

DIMS = ("model", "hardware", "tp", "batch", "prompt", "kv_heads", "kv_dtype", "weight_dtype")


def _compute(x: Inputs) -> dict[str, Any]:
    opt, batch, prompt, ridge = x.options, x["batch"], x["prompt"], x["ridge_point"]
    flops, weights_read, kv_dev = prefill_work(x, batch, prompt)
    # a prefill writes every stage's cache in turn; a device holds its stage's
    held = kv_dev / x["_pp"]
    max_batch = physics.max_batch(x["memory"], opt.memory_reserve, x["weight_bytes"], held)
    point = x.engine.pointwise
    nbytes = point(physics.prefill_bytes, DIMS, weights_read, batch, kv_dev)
    ai = point(physics.arithmetic_intensity, DIMS, flops, nbytes)
    roof = roofline(
        x, DIMS, lambda: prefill_split(x, batch, prompt, flops),
        with_tokens=False, flops=flops, nbytes=nbytes, ai=ai, batch=batch,
        max_batch=max_batch, peak=x["_peak"], bandwidth=x["_bandwidth"], ridge=ridge,
        peak_flops=x["peak_flops"],
    )  # fmt: skip
    if parallel(x):  # every stage in turn (the path's bytes and FLOPs), plus the hand-offs
        path = batch * prompt * x["_pp"]  # every stage's tokens: the path's layers
        handoff = physics.known(handoff_time(x, path))
        ttft = physics.step_bound(roof["time"], physics.known(link_time(x, path)))
        roof = {**roof, "time": point(np.add, DIMS, ttft, (x["_pp"] - 1) * handoff)}
    return {
        "prefill_flops": flops,
        "prefill_bytes": nbytes,
        "prefill_arithmetic_intensity": ai,
        "prefill_bottleneck": roof["bottleneck"],
        "prefill_attainable_flops": roof["attainable_flops"],
        "prefill_utilization": roof["utilization"],
        "ttft_s": roof["time"],
        "prefill_feasible": roof["feasible"],
        "prefill_memory_bound_prompt": physics.prefill_memory_bound_prompt(
            ridge, x["weight_bytes_per_param"]
        ),
    }


_V = Variable

PREFILL = Analysis(
    name="prefill",
    dims=DIMS,
    variables=(
        _V("prefill_flops", "FLOP", "FLOPs of the prefill, per device", column="flops"),
        _V(
            "prefill_bytes",
            "byte",
            "HBM bytes of the prefill, per device: weights + new caches",
            column="bytes",
            rank="point",
        ),
        _V(
            "prefill_arithmetic_intensity",
            "FLOP/byte",
            "Prefill FLOPs per HBM byte",
            column="arithmetic_intensity",
            rank="point",
        ),
        _V(
            "prefill_bottleneck",
            "-",
            "memory-bound or compute-bound (a tie is compute-bound)",
            "flag",
            "bottleneck",
            "full",
        ),
        _V(
            "prefill_attainable_flops",
            "FLOP/s",
            "Roofline bound on prefill throughput",
            column="attainable_flops",
            rank="full",
        ),
        _V(
            "prefill_utilization",
            "1",
            "Attainable over the prefill's own peak FLOP/s (the formats' peaks weighted by "
            "their FLOPs), 0..1",
            column="utilization",
            rank="full",
        ),
        _V(
            "prefill_feasible",
            "-",
            "Weights and the prompts' caches fit in device memory",
            "bool",
            "feasible",
            "full",
        ),
        _V(
            "ttft_s",
            "s",
            "Roofline bound on the prefill time (time to first token)",
            rank="full",
        ),
        _V(
            "prefill_memory_bound_prompt",
            "token",
            "Prompt length below which prefill is memory-bound, R*wb/2",
            column="memory_bound_prompt",
        ),
    ),
    compute=_compute,
    needs=("model", "decode"),
    extra_dims=PARALLEL_DIMS,
    columns=(
        "ridge_point",
        "prefill_flops",
        "prefill_bytes",
        "prefill_arithmetic_intensity",
        "prefill_bottleneck",
        "prefill_attainable_flops",
        "prefill_utilization",
        "prefill_feasible",
        "ttft_s",
        "prefill_memory_bound_prompt",
    ),
)
