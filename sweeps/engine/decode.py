"""Decode: one step for B sequences at context S (docs/cost-model.md section 3).

FLOPs and bytes of the step, the asymptotic ceiling ``F_seq / KV_seq`` and the batches that
matter (knee, ceiling fraction, ridge, memory wall), then the roofline of every point on every
device in one pass (bottleneck, attainable FLOP/s, step time, tokens/s, feasibility).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS, parallel, step_times
from sweeps.engine.split import roofline, timed_flops
from sweeps.engine.steps import pipeline_fill, weights_read
from sweeps.physics._array import where

DIMS = ("model", "hardware", "tp", "batch", "context", "kv_heads", "kv_dtype", "weight_dtype")

CONFIGURATION = tuple(dim for dim in DIMS if dim != "batch")
"""The dims of one configuration: every decode dim but the batch, which the summary answers."""
SUMMARY = (
    "ceiling",
    "knee_batch",
    "ceiling_batch",
    "max_batch",
    "ridge_batch",
    "ceiling_reachable",
    "token_time_b1_s",
    "device_tokens_per_s_b1",
    "token_time_wall_s",
    "device_tokens_per_s_wall",
)
"""What the summary says of a configuration (none of them has a batch dimension)."""


def _compute(x: Inputs) -> dict[str, Any]:
    opt, tp, batch = x.options, x["tp"], x["batch"]
    attention_on = 1.0 if opt.attention_flops else 0.0
    bandwidth = x["bandwidth"] * opt.bandwidth_efficiency
    peak = x["peak_flops"] * opt.compute_efficiency
    layer_tokens = physics.kv_cached_layer_tokens(
        x["context"], x["layers"], x["local_layers"], x["_window"]
    )
    out: dict[str, Any] = {
        # per token: every layer holds it, so the "cached token-layers" are the layers
        "kv_bytes_per_token": physics.kv_bytes_per_sequence(
            x["_kv_elements"], x["kv_bytes"], x["layers"]
        ),
    }
    kv_seq = physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], layer_tokens)
    out["kv_bytes_per_sequence"] = kv_seq
    kv_dev = kv_seq / x["_shards"]
    devices = x["_flop_devices"]
    out["kv_bytes_per_sequence_device"] = kv_dev
    lookup = physics.lookup_params(x["vocab_size"], x["hidden_size"], x["tied_embeddings"])
    f_seq = (
        physics.decode_flops_per_sequence(
            x["active_params"],
            physics.attention_flops_per_token(x["heads"], x["attention_dim"], layer_tokens),
            attention_on,
            lookup,
        )
        / devices
    )
    # per sequence a step reads its cache and its embedding row; the rest is shared
    per_sequence, shared = kv_dev + x["_gather"], x["_fixed"]
    out["flops"] = physics.decode_flops(batch, f_seq)
    ridge = physics.ridge_point(peak, bandwidth)
    out["ridge_point"] = ridge
    ceiling = physics.asymptotic_ceiling(f_seq, per_sequence)
    out["ceiling"] = ceiling
    max_batch = physics.max_batch(x["memory"], opt.memory_reserve, x["weight_bytes"], kv_dev)
    gemm = physics.decode_flops_per_sequence(x["active_params"], 0.0, 0.0, lookup) / devices
    attention = attention_on * physics.attention_flops_per_token(
        x["heads"], x["attention_dim"], layer_tokens
    )
    out["_split"] = (gemm, attention / devices)  # per sequence, per device [FLOP]
    # the ridge batch at the split compute roof, as the bottleneck flag (``_roofline``) takes it
    timed = timed_flops(x, gemm, attention / devices, f_seq)
    out.update(_batches(x, (shared, per_sequence), ridge, timed, max_batch))
    out["ceiling_reachable"] = out["ceiling_batch"] <= max_batch
    out["allreduce_bytes"] = physics.allreduce_bytes(
        x["layers"] / x["_pp"],
        batch / physics.attention_replicas(x["_ep"], x["_dp"]),
        x["hidden_size"],
        opt.activation_bytes,
        physics.dense_shards(tp, x["_ep"], x["_dp"]),
    )
    out.update(_user_terms(x, (f_seq, *out["_split"]), kv_dev, peak, bandwidth, max_batch))
    out["tile_fill"] = physics.tile_fill(batch)
    out["compute_dtype"] = x["_compute_dtype"]
    out.update(_roofline(x, out, kv_dev, peak, bandwidth))
    out.update(_bandwidth=bandwidth, _peak=peak, _attention_on=attention_on)
    return out


def _batches(
    x: Inputs, step: tuple[Any, Any], ridge: Any, timed: Any, max_batch: Any
) -> dict[str, Any]:
    """The batches that matter and the share of the ceiling at the memory wall, from a step's
    bytes ``step`` = (shared, per sequence) [byte]. A MoE step reads ``W(B)``, from the experts
    one token touches to all of them, and each batch solves for it (``physics.moe``; dense:
    the closed forms ``W / KV_seq``). The ridge batch takes one sequence's FLOPs as their time
    at the GEMM peak, ``timed`` (``split.timed_flops``: the GEMMs' plus ``r`` times
    attention's) [FLOP], so it is where the bottleneck flag turns compute-bound."""
    shared, per_sequence = step
    moe = (x["_fixed_active"], shared, x["experts"], x["experts_per_token"])
    fraction = x.options.ceiling_fraction
    wall = physics.moe_fraction_of_ceiling(max_batch, *moe, per_sequence)
    return {
        "knee_batch": physics.moe_knee_batch(*moe, per_sequence),
        "ceiling_batch": physics.moe_batch_for_fraction(fraction, *moe, per_sequence),
        "ridge_batch": physics.moe_ridge_batch(ridge, *moe, timed, per_sequence),
        "max_batch": max_batch,
        "wall_fraction_of_ceiling": where(max_batch >= 1, wall, np.nan),
    }


def _user_terms(
    x: Inputs,
    flops: tuple[Any, Any, Any],
    kv_dev: Any,
    peak: Any,
    bandwidth: Any,
    max_batch: Any,
) -> dict[str, Any]:
    """What hardware is chosen by: the time per token and tokens/s per device of one request
    alone (batch 1) and of the largest batch that fits (the memory wall), whatever batches the
    grid's axis holds; every value is null where not one sequence fits. ``flops`` is
    one sequence's FLOPs, its GEMMs' and its attention's, per device (the split compute roof)."""
    f_seq, gemm, attention = flops
    out: dict[str, Any] = {}
    for name, batch in (("b1", 1.0), ("wall", max_batch)):
        nbytes = physics.decode_bytes(weights_read(x, batch), batch, kv_dev)
        work = physics.decode_flops(batch, f_seq)
        timed = timed_flops(x, batch * gemm, batch * attention, work)
        time = physics.roofline_time(timed, nbytes, peak, bandwidth) * pipeline_fill(x, batch)
        bound, latency = step_times(x, batch, time)
        out[f"token_time_{name}_s"] = latency
        out[f"device_tokens_per_s_{name}"] = batch / bound / x["_devices"]
    fits = max_batch >= 1  # not one sequence fits: no figure, at batch 1 nor at the wall
    for name in list(out):
        out[name] = where(fits, out[name], np.nan)
    return out


def _roofline(
    x: Inputs, out: dict[str, Any], kv_dev: Any, peak: Any, bandwidth: Any
) -> dict[str, Any]:
    """The per-point outputs: the step's bytes and intensity laid out for the compiled pass,
    then the pass itself (bottleneck, attainable FLOP/s, step time, tokens/s, feasibility)."""
    batch, point = x["batch"], x.engine.pointwise
    step_bytes = point(physics.decode_bytes, DIMS, x["weights_read_bytes"], batch, kv_dev)
    ai = point(physics.arithmetic_intensity, DIMS, out["flops"], step_bytes)
    gemm, attention = out["_split"]

    def work() -> tuple[Any, Any]:  # the batch's GEMM and attention FLOPs, per device
        return point(np.multiply, DIMS, batch, gemm), point(np.multiply, DIMS, batch, attention)

    roof = roofline(
        x, DIMS, work,
        with_tokens=True, flops=out["flops"], nbytes=step_bytes, ai=ai, batch=batch,
        max_batch=out["max_batch"], peak=peak, bandwidth=bandwidth, ridge=out["ridge_point"],
        peak_flops=x["peak_flops"],
    )  # fmt: skip
    if parallel(x):  # the link and the pipeline's hand-offs: no term at all without the axes
        pre = point(np.multiply, DIMS, roof["time"], pipeline_fill(x, batch))
        bound, latency = step_times(x, batch, pre)
        roof = {**roof, "time": latency, "tokens_per_s": point(np.divide, DIMS, batch, bound)}
        roof.update(_bound=bound, _roof_time=pre)
    extra = {k: roof[k] for k in ("_bound", "_roof_time") if k in roof}
    return {
        **extra,
        "bytes": step_bytes,
        "arithmetic_intensity": ai,
        "fraction_of_ceiling": point(np.divide, DIMS, ai, out["ceiling"]),
        "bottleneck": roof["bottleneck"],
        "attainable_flops": roof["attainable_flops"],
        "utilization": roof["utilization"],
        "step_time_s": roof["time"],
        "tokens_per_s": roof["tokens_per_s"],
        "feasible": roof["feasible"],
        **_energy(x, roof.get("_bound", roof["time"]), batch),
    }


def _energy(x: Inputs, step_time: Any, batch: Any) -> dict[str, Any]:
    """The replica's devices (tp x ep x pp) at board power for the step, per token of the batch
    [J/token], and its inverse [token/J]: estimates, null where the catalog has no power."""
    energy = physics.energy_per_token(x["_board_power"], x["_devices"], step_time, batch)
    return {
        "energy_per_output_token_j": energy,
        "output_tokens_per_joule": physics.tokens_per_joule(energy),
    }


_V = Variable

DECODE = Analysis(
    name="decode",
    dims=DIMS,
    variables=(
        _V(
            "kv_bytes_per_token",
            "byte",
            "KV bytes one token adds, all layers, whole model (every device together)",
        ),
        _V(
            "kv_bytes_per_sequence",
            "byte",
            "KV bytes of one sequence at this context, whole model (every device together)",
        ),
        _V(
            "kv_bytes_per_sequence_device",
            "byte",
            "KV bytes of one sequence at this context held by one device (the busiest)",
        ),
        _V("flops", "FLOP", "FLOPs of one decode step, per device"),
        _V(
            "ridge_point",
            "FLOP/byte",
            "Peak FLOP/s over bandwidth of the device (efficiencies applied), at the peak of "
            "the compute dtype",
        ),
        _V(
            "compute_dtype",
            "-",
            "Tensor-core format that runs the weights (options.compute_dtype; auto: the "
            "weight format's own, bf16 where the device has no such peak)",
            "format",
        ),
        _V(
            "ceiling",
            "FLOP/byte",
            "Asymptotic decode intensity as batch grows, F_seq/(KV_seq + embedding row)",
        ),
        _V(
            "knee_batch",
            "sequence",
            "Batch reaching half the ceiling, W/(KV_seq + embedding row); a mixture of "
            "experts solves B KV_seq = W_read(B), the experts its batch touches",
        ),
        _V(
            "ceiling_batch",
            "sequence",
            "Batch reaching options.ceiling_fraction of the ceiling",
        ),
        _V(
            "ridge_batch",
            "sequence",
            "Batch where decode turns compute-bound: the bottleneck flag is compute-bound "
            "from its ceiling on, attention at its own peak (null: never)",
            "nullable",
        ),
        _V(
            "max_batch",
            "sequence",
            "Largest batch whose weights and caches fit on every device of a replica "
            "(0: does not fit)",
            "int64",
        ),
        _V(
            "ceiling_reachable",
            "-",
            "ceiling_batch fits in memory (ceiling_batch <= max_batch)",
            "bool",
        ),
        _V(
            "wall_fraction_of_ceiling",
            "1",
            "Share of the ceiling decode reaches at the memory wall (batch max_batch; a "
            "mixture of experts reads the experts that batch touches; null: does not fit)",
            "nullable",
        ),
        _V(
            "token_time_b1_s",
            "s",
            "Roofline bound on the time per output token of one request alone (batch 1; "
            "null: does not fit)",
            "nullable",
        ),
        _V(
            "device_tokens_per_s_b1",
            "token/s",
            "Decode throughput bound per device of one request alone (batch 1; null: does not fit)",
            "nullable",
        ),
        _V(
            "token_time_wall_s",
            "s",
            "Roofline bound on the time per output token at the memory wall (batch max_batch; "
            "null: does not fit)",
            "nullable",
        ),
        _V(
            "device_tokens_per_s_wall",
            "token/s",
            "Decode throughput bound per device at the memory wall (batch max_batch; null: "
            "does not fit)",
            "nullable",
        ),
        _V(
            "allreduce_bytes",
            "byte",
            "Tensor-parallel all-reduce bytes per device per step (interconnect, not in bytes)",
        ),
        _V("tile_fill", "1", "Useful share of a 16-row tensor-core tile's rows, 0..1"),
        _V(
            "bytes",
            "byte",
            "HBM bytes of one decode step, per device: weights + every cache",
            rank="point",
        ),
        _V("arithmetic_intensity", "FLOP/byte", "Decode FLOPs per HBM byte", rank="point"),
        _V(
            "fraction_of_ceiling",
            "1",
            "Arithmetic intensity over the ceiling, 0..1",
            rank="point",
        ),
        _V(
            "bottleneck",
            "-",
            "memory-bound or compute-bound (a tie is compute-bound)",
            "flag",
            rank="full",
        ),
        _V(
            "attainable_flops",
            "FLOP/s",
            "Roofline bound on throughput, min(AI*bandwidth, peak)",
            rank="full",
        ),
        _V(
            "utilization",
            "1",
            "Attainable over the step's own peak FLOP/s (the GEMM and attention formats' "
            "peaks weighted by their FLOPs), 0..1",
            rank="full",
        ),
        _V(
            "step_time_s",
            "s",
            "Roofline bound on one decode step (inter-token latency)",
            rank="full",
        ),
        _V("tokens_per_s", "token/s", "Decode throughput bound, batch / step time", rank="full"),
        _V(
            "feasible",
            "-",
            "The batch fits in device memory (batch <= max_batch)",
            "bool",
            rank="full",
        ),
        _V(
            "energy_per_output_token_j",
            "J/token",
            "Estimate: the replica's devices (tp x ep x pp) at board power for the step, per token "
            "(null: power unknown)",
            "nullable",
            rank="full",
        ),
        _V(
            "output_tokens_per_joule",
            "token/J",
            "Estimate: decode tokens per joule at board power (null: power unknown)",
            "nullable",
            rank="full",
        ),
    ),
    compute=_compute,
    needs=("model",),
    extra_dims=PARALLEL_DIMS,
    columns=(
        "flops",
        "bytes",
        "arithmetic_intensity",
        "ridge_point",
        "compute_dtype",
        "bottleneck",
        "attainable_flops",
        "utilization",
        "ceiling",
        "fraction_of_ceiling",
        "knee_batch",
        "ceiling_batch",
        "ridge_batch",
        "max_batch",
        "ceiling_reachable",
        "feasible",
        "step_time_s",
        "tokens_per_s",
        "energy_per_output_token_j",
        "output_tokens_per_joule",
        "weight_bytes",
        "weights_read_bytes",
        "kv_bytes_per_token",
        "kv_bytes_per_sequence",
        "kv_bytes_per_sequence_device",
        "experts_touched",
        "allreduce_bytes",
        "tile_fill",
    ),
)
