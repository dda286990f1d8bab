"""Speculative decoding over the decode grid and ``k x alpha x draft`` (docs/speculative.md).

Per decode point and draft setting: the expected tokens per verification ``E``, the verify
step (the target on ``B`` sequences of ``k + 1`` rows: FLOPs, bytes, intensity, roofline),
the draft's time (``ngram`` free, ``mtp`` ``k`` passes of one head, a draft model ``k`` decode
steps of its own), its weights and cache in the memory wall, the time per output token, the
speedup over plain decode, the ceiling with speculation and the break-even batch (the first
batch of the axis where the speedup is at most 1). ``k = 0`` is the decode table exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.decode import DIMS as DECODE_DIMS
from sweeps.engine.drafts import draft
from sweeps.engine.parallel_terms import PARALLEL_DIMS, parallel, step_times
from sweeps.engine.split import roofline
from sweeps.engine.steps import pipeline_fill, weights_read

DIMS = (*DECODE_DIMS, "spec_tokens", "spec_acceptance", "spec_draft")

DRAFT_KINDS = ("ngram", "mtp", "model")
"""The kinds of draft, by their code in ``_draft_kind``."""


def verify_terms(x: Any, context: Any, k: Any) -> tuple[Any, Any, Any]:
    """The verify step's terms before they are spread over devices: the GEMM FLOPs of one
    row [FLOP], the attention FLOPs of one sequence's ``k + 1`` rows at first-row ``context``
    [FLOP] and one sequence's cache bytes on a device [byte]; the grid's verify step and the
    simulator's (``sweeps.studies.serving.simulate.speculation``) both take them from here."""
    shape = (x["layers"], x["local_layers"], x["_window"])
    lookup = physics.lookup_params(x["vocab_size"], x["hidden_size"], x["tied_embeddings"])
    linear = physics.decode_flops_per_sequence(x["active_params"], 0.0, 0.0, lookup)
    attended = physics.verify_attended_layer_tokens(context, k, *shape)
    attention = x["_attention_on"] * physics.attention_flops_per_token(
        x["heads"], x["attention_dim"], attended
    )
    cached = physics.verify_cached_layer_tokens(context, k, *shape)
    cache = physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], cached) / x["_shards"]
    return linear, attention, cache


def _verify(x: Inputs, k: Any) -> tuple[Any, Any, Any, Any]:
    """The verify step per device: FLOPs per sequence [FLOP], one sequence's cache bytes
    [byte], the weight bytes the ``B (k + 1)`` rows read [byte] and the GEMMs' share of the
    FLOPs per sequence (the rest is attention, at its own peak: ``analyses/split.py``)
    [FLOP], each in the decode analysis's form term for term, so that ``k = 0`` is its step
    exactly."""
    # a step's FLOPs spread over the replica's devices, as the decode table's (tp x ep x pp)
    tp = x["_flop_devices"]
    linear, attention, cache = verify_terms(x, x["context"], k)
    f_seq = physics.verify_flops_per_sequence(k, linear, attention) / tp
    gemm = (k + 1) * linear / tp
    return f_seq, cache, weights_read(x, x["batch"] * (k + 1)), gemm


def _break_even(speedup: Any, batch: Any) -> Any:
    """The first batch of the axis with speedup <= 1, the batch dim reduced [sequence]."""
    values = np.asarray(batch.values if hasattr(batch, "values") else batch, dtype=float)

    def first(data: np.ndarray, axis: int) -> np.ndarray:
        shape = [1] * data.ndim
        shape[axis] = values.size
        return physics.first_batch_at_most(data, values.reshape(shape), axis)

    if hasattr(speedup, "reduce"):
        return speedup.reduce(first, dim="batch")
    return first(np.asarray(speedup)[None], 0)


def _compute(x: Inputs) -> dict[str, Any]:
    opt, batch, k, point = x.options, x["batch"], x["spec_tokens"], x.engine.pointwise
    e = physics.expected_tokens(k, x["spec_acceptance"])
    f_seq, cache, weights, gemm = _verify(x, k)
    flops = physics.decode_flops(batch, f_seq)
    nbytes = point(physics.verify_bytes, DIMS, weights, batch, cache)
    ai = point(physics.arithmetic_intensity, DIMS, flops, nbytes)
    draft_time, draft_weights, draft_cache = draft(x, k, x["context"], exact=True, link=True)
    max_batch = physics.max_batch(
        x["memory"], opt.memory_reserve, x["weight_bytes"] + draft_weights, cache + draft_cache
    )
    # the GEMMs at the weight format's peak, attention at the attention format's
    gemms = physics.decode_flops(batch, gemm)
    roof = roofline(
        x, DIMS, lambda: (gemms, point(np.subtract, DIMS, flops, gemms)),
        with_tokens=False, flops=flops, nbytes=nbytes, ai=ai, batch=batch,
        max_batch=max_batch, peak=x["_peak"], bandwidth=x["_bandwidth"],
        ridge=x["ridge_point"], peak_flops=x["peak_flops"],
    )  # fmt: skip
    verify_time, bound = roof["time"], roof["time"]
    if parallel(x):  # the link and the hand-offs of the B (k + 1) rows, as decode's step
        filled = point(np.multiply, DIMS, roof["time"], pipeline_fill(x, batch))
        bound, verify_time = step_times(x, batch * (k + 1), filled)
    per_token = physics.speculative_time_per_token(verify_time, draft_time, e)
    # throughput from the device's time a round (the bound), latency with the hand-offs
    busy = physics.speculative_time_per_token(bound, draft_time, e) if parallel(x) else per_token
    speedup = physics.speculative_speedup(x["step_time_s"], verify_time, draft_time, e)
    out = {
        "expected_tokens": e,
        "useful_share": physics.useful_share(e, k),
        "verify_flops": flops,
        "verify_bytes": nbytes,
        "verify_arithmetic_intensity": ai,
        "verify_bottleneck": roof["bottleneck"],
        "verify_utilization": roof["utilization"],
        "verify_time_s": verify_time,
        "draft_time_s": draft_time,
        "draft_weight_bytes": draft_weights,
        "draft_kv_bytes_per_sequence": draft_cache,
        "spec_time_per_output_token_s": per_token,
        "spec_tokens_per_s": batch / busy,
        "speedup": speedup,
        "spec_ceiling": physics.asymptotic_ceiling(f_seq, cache + (k + 1) * x["_gather"]),
        "spec_max_batch": max_batch,
        "spec_feasible": roof["feasible"],
        "break_even_batch": _break_even(speedup, batch),
    }
    energy = physics.energy_per_token(x["_board_power"], x["_devices"], busy, batch)
    out["spec_energy_per_output_token_j"] = energy
    out["spec_output_tokens_per_joule"] = physics.tokens_per_joule(energy)
    return out


_V = Variable

VARIABLES = (
    _V("expected_tokens", "token", "Expected tokens per verification, (1-a^(k+1))/(1-a)"),
    _V("useful_share", "1", "Share of the verified rows that become output, E/(k+1)"),
    _V("verify_flops", "FLOP", "FLOPs of the verify step (k+1 rows a sequence), per device"),
    _V(
        "verify_bytes",
        "byte",
        "HBM bytes of the verify step per device: weights once for B(k+1) tokens, each cache once",
        rank="point",
    ),
    _V(
        "verify_arithmetic_intensity",
        "FLOP/byte",
        "Verify-step FLOPs per HBM byte",
        rank="point",
    ),
    _V(
        "verify_bottleneck",
        "-",
        "memory-bound or compute-bound verify step (a tie is compute-bound)",
        "flag",
        rank="full",
    ),
    _V(
        "verify_utilization",
        "1",
        "Verify step: attainable over its own peak FLOP/s (formats weighted by FLOPs), 0..1",
        rank="full",
    ),
    _V("verify_time_s", "s", "Roofline bound on the verify step", rank="full"),
    _V(
        "draft_time_s",
        "s",
        "Time the draft takes to propose k tokens (ngram: 0; mtp: k head passes; a draft "
        "model: k decode steps), a bound",
        rank="full",
    ),
    _V("draft_weight_bytes", "byte", "Draft weights held per device (ngram: 0)"),
    _V(
        "draft_kv_bytes_per_sequence",
        "byte",
        "Draft KV bytes of one sequence per device, at context + k",
    ),
    _V(
        "spec_time_per_output_token_s",
        "s",
        "Time per output token of a sequence, (t_verify + t_draft)/E, a bound",
        column="time_per_output_token_s",
        rank="full",
    ),
    _V(
        "spec_tokens_per_s",
        "token/s",
        "Output throughput bound of the batch with speculation",
        column="tokens_per_s",
        rank="full",
    ),
    _V("speedup", "1", "Speedup over plain decode, t_d E/(t_verify + t_draft)", rank="full"),
    _V(
        "spec_ceiling",
        "FLOP/byte",
        "Asymptotic verify-step intensity as batch grows, (k+1) times the decode ceiling",
        column="ceiling",
    ),
    _V(
        "spec_max_batch",
        "sequence",
        "Largest batch whose target and draft weights and caches fit on a device",
        "int64",
        column="max_batch",
    ),
    _V(
        "spec_feasible",
        "-",
        "The batch fits beside the draft (batch <= max_batch)",
        "bool",
        column="feasible",
        rank="full",
    ),
    _V(
        "break_even_batch",
        "sequence",
        "First batch of the axis whose speedup is <= 1 (null: speculation pays at every "
        "batch of the axis)",
        "nullable",
        reduces="batch",
    ),
    _V(
        "spec_energy_per_output_token_j",
        "J/token",
        "Estimate: the replica's devices (tp x ep x pp) at board power for one token's time "
        "of the batch (null: power unknown)",
        "nullable",
        column="energy_per_output_token_j",
        rank="full",
    ),
    _V(
        "spec_output_tokens_per_joule",
        "token/J",
        "Estimate: output tokens per joule at board power (null: power unknown)",
        "nullable",
        column="output_tokens_per_joule",
        rank="full",
    ),
)

SPECULATIVE = Analysis(
    name="speculative",
    dims=DIMS,
    variables=VARIABLES,
    compute=_compute,
    needs=("model", "decode"),
    columns=(
        "expected_tokens",
        "useful_share",
        "verify_flops",
        "verify_bytes",
        "verify_arithmetic_intensity",
        "ridge_point",
        "verify_bottleneck",
        "verify_utilization",
        "verify_time_s",
        "draft_time_s",
        "step_time_s",
        "spec_time_per_output_token_s",
        "spec_tokens_per_s",
        "speedup",
        "spec_ceiling",
        "break_even_batch",
        "spec_max_batch",
        "spec_feasible",
        "draft_weight_bytes",
        "draft_kv_bytes_per_sequence",
        "spec_energy_per_output_token_j",
        "spec_output_tokens_per_joule",
    ),
    study="speculative",
    extra_dims=PARALLEL_DIMS,
    keeps=("batch",),
)
