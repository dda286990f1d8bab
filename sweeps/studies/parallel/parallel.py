"""Parallel: a replica of ``tp x ep x pp`` devices, per rank (beyond-the-step.md section 3).

With the parallel axes every table is per device of such a replica (the model, decode,
prefill, serving and pools analyses take their dims). This one says what the parallelism adds:
the replica's devices and a label of its layout, the experts a rank touches among its own, the
expert all-to-all's bytes and time over the scale-up link, one pipeline hand-off, and whether
the link, not compute or memory, bounds the step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.decode import DIMS as DECODE_DIMS
from sweeps.engine.parallel_terms import (
    PARALLEL_DIMS,
    all_to_all_bytes,
    handoff_time,
    link_time,
)

DIMS = (*DECODE_DIMS, *PARALLEL_DIMS)


def _compute(x: Inputs) -> dict[str, Any]:
    batch, point = x["batch"], x.engine.pointwise
    link = link_time(x, batch)
    return {
        "replica_devices": physics.replica_devices(x["tp"], x["_ep"], x["_pp"]),
        "parallel": x["_parallel_label"],
        "experts_touched_rank": physics.experts_touched_per_rank(
            x["experts"], x["experts_per_token"], batch / x["_pp"], x["_ep"]
        ),
        "all_to_all_bytes": all_to_all_bytes(x, batch),
        "all_to_all_time_s": link,
        "handoff_time_s": handoff_time(x, batch),
        "link_bound": point(np.greater, DIMS, physics.known(link), x["_roof_time"]),
        # the scale-up bandwidth below which the all-to-all, not compute or memory, bounds
        "link_break_even_bandwidth": point(
            physics.break_even_bandwidth, DIMS, all_to_all_bytes(x, batch), x["_roof_time"]
        ),
    }


_V = Variable

PARALLEL = Analysis(
    name="parallel",
    dims=DIMS,
    variables=(
        _V("replica_devices", "device", "Devices of one replica, tp x ep x pp", "int64"),
        _V(
            "parallel",
            "-",
            "The replica's layout: tp, ep (+dp: data-parallel attention) and pp degrees",
            "str",
        ),
        _V(
            "experts_touched_rank",
            "1",
            "Expected distinct experts of a rank's own E/ep that a micro-batch touches, per "
            "MoE layer (the whole batch's routing)",
        ),
        _V(
            "all_to_all_bytes",
            "byte",
            "Expert all-to-all bytes one device sends per decode step, every MoE layer of its "
            "stage: 2 (B/ep) k h a (ep-1)/ep a layer, over tp",
        ),
        _V(
            "all_to_all_time_s",
            "s",
            "The all-to-all over the scale-up link (null: link unknown; 0 at ep = 1)",
            "nullable",
        ),
        _V(
            "handoff_time_s",
            "s",
            "One pipeline hand-off of a micro-batch's activations over the scale-up link "
            "(null: link unknown)",
            "nullable",
        ),
        _V(
            "link_break_even_bandwidth",
            "byte/s",
            "Scale-up bandwidth per device and direction below which the all-to-all bounds the "
            "step (null at ep = 1: nothing crosses it)",
            "nullable",
            rank="full",
        ),
        _V(
            "link_bound",
            "-",
            "The all-to-all's time exceeds compute and memory: the link bounds the step",
            "bool",
            rank="full",
        ),
    ),
    compute=_compute,
    needs=("model", "decode"),
    study="parallel",
    columns=(
        "parallel",
        "replica_devices",
        "weight_bytes",
        "kv_bytes_per_sequence_device",
        "max_batch",
        "experts_touched_rank",
        "all_to_all_bytes",
        "all_to_all_time_s",
        "handoff_time_s",
        "link_break_even_bandwidth",
        "link_bound",
        "step_time_s",
        "tokens_per_s",
    ),
)
