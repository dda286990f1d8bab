"""The grid's coordinates and derived inputs, from the resolved ``Sweep``.

Dimension coordinates come from the axis table (``sweeps.axes.AXES``), the per-model and
per-device coordinates from the spec declarations of the records (``MODEL_SPECS``,
``HARDWARE_SPECS``), and the architecture facts from the ``Model`` properties: nothing here
restates a field list or a formula. The derived inputs (names starting with ``_``) are what
the analyses read but the Dataset does not keep.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sweeps.axes import AXIS
from sweeps.catalog.records import HARDWARE_SPECS, MODEL_SPECS, Spec
from sweeps.config import NATIVE, Sweep
from sweeps.engine.base import Variable
from sweeps.grid.analyses import active_dims
from sweeps.grid.parallel import parallel_inputs
from sweeps.grid.techniques import technique_inputs
from sweeps.studies.expected.step import expected_inputs
from sweeps.studies.serving.trace import workload_inputs

AXIS_COORDS: tuple[Variable, ...] = (
    Variable(
        "kv_heads_count",
        "head",
        "Key/value heads in effect (native resolved per model)",
        "int64",
        "kv_heads",
    ),
    Variable(
        "kv_heads_native",
        "-",
        "True where kv_heads is the model's own (the 'native' setting)",
        "bool",
    ),
    Variable("kv_bytes", "byte", "Bytes per KV-cache element, group-scale overhead included"),
    Variable("weight_bytes_per_param", "byte", "Bytes per weight, group-scale overhead included"),
)
"""Coordinates that describe the axes' labels (``kv_heads_native`` exists only as a column)."""

DEVICE_COORDS: tuple[Variable, ...] = (
    Variable(
        "peak_flops",
        "FLOP/s",
        "Peak dense throughput of the device in the compute dtype that runs the weight format",
    ),
)
"""Coordinates of a device that depend on the sweep: the peak the weights run at."""

Coord = tuple[str | tuple[str, ...], np.ndarray]

_NUMPY = {"float64": float, "int64": np.int64, "bool": np.bool_, "str": object}


_AXIS_NUMPY = {"size": np.int64, "value": np.float64, "name": object, "heads": object}


def _axis_values(sweep: Sweep) -> dict[str, Coord]:
    """The dims of the analyses ``sweep`` asks for, with their labels."""
    coords: dict[str, Coord] = {}
    for dim in active_dims(sweep):
        axis = AXIS[dim]
        coords[dim] = (dim, np.asarray(axis.labels(sweep), dtype=_AXIS_NUMPY[axis.kind]))
    return coords


def _spec_values(records: tuple[Any, ...], specs: tuple[Spec, ...], dim: str) -> dict[str, Coord]:
    return {
        spec.name: (dim, np.asarray([spec.value(r) for r in records], dtype=_NUMPY[spec.dtype]))
        for spec in specs
    }


def _kv_counts(sweep: Sweep) -> list[list[int]]:
    """The effective KV heads of each model at each ``kv_heads`` setting."""
    return [
        [m.kv_heads if label == NATIVE else int(label) for label in sweep.kv_heads]
        for m in sweep.models
    ]


def grid_coords(sweep: Sweep) -> dict[str, Coord]:
    """Every coordinate of the sweep's Dataset: dims, axis labels' facts, model and device specs."""
    coords = _axis_values(sweep)
    coords["kv_heads_count"] = (("model", "kv_heads"), np.asarray(_kv_counts(sweep), np.int64))
    coords["kv_bytes"] = ("kv_dtype", np.array([d.bytes_per_element for d in sweep.kv_dtype]))
    coords["weight_bytes_per_param"] = (
        "weight_dtype",
        np.array([d.bytes_per_element for d in sweep.weight_dtype]),
    )
    coords.update(_spec_values(sweep.models, MODEL_SPECS, "model"))
    coords.update(_spec_values(sweep.hardware, HARDWARE_SPECS, "hardware"))
    coords["peak_flops"] = (
        ("hardware", "weight_dtype"),
        np.array(
            [
                [
                    device.peak_flops[sweep.compute_dtype_for(weight, device)]
                    for weight in sweep.weight_dtype
                ]
                for device in sweep.hardware
            ]
        ),
    )
    return coords


def derived_inputs(sweep: Sweep) -> dict[str, Coord]:
    """What the analyses read that the Dataset does not keep, as ``(dims, values)``.

    ``_window`` [token]: the local layers' window, infinite for a model without one;
    ``_kv_elements`` [1]: cached elements per token per layer
    (``Model.kv_elements_per_token_layer``);
    ``_cache_heads`` [head]: heads the cache splits into across ranks (``Model.cache_heads``);
    ``_prefill_attention_dim`` [1]: a prefill pair's attention dim
    (``Model.prefill_attention_dim``); ``_compute_dtype`` [-]: the format whose peak runs
    each weight format on each device (``Sweep.compute_dtype_for``); ``_attention_ratio`` [1]:
    the GEMM peak over the attention peak (``Sweep.attention_dtype_for``), by which attention
    FLOPs weigh in compute time against GEMM FLOPs (1: one peak runs both); with
    ``[workload]``, ``_trace_requests`` [-]: the trace's length distribution
    (``sweeps.studies.serving.trace.workload_inputs``).
    """
    counts = _kv_counts(sweep)
    models = sweep.models
    known = technique_inputs(sweep) | parallel_inputs(sweep) | expected_inputs(sweep)
    known |= workload_inputs(sweep)
    return known | {
        "_window": (
            "model",
            np.array(
                [float(m.sliding_window) if m.sliding_window > 0 else math.inf for m in models]
            ),
        ),
        "_kv_elements": (
            ("model", "kv_heads"),
            np.array(
                [
                    [m.kv_elements_per_token_layer(n) for n in row]
                    for m, row in zip(models, counts, strict=True)
                ],
                dtype=np.int64,
            ),
        ),
        "_prefill_attention_dim": ("model", np.array([m.prefill_attention_dim for m in models])),
        "_compute_dtype": (
            ("hardware", "weight_dtype"),
            np.array(
                [
                    [sweep.compute_dtype_for(w, d) for w in sweep.weight_dtype]
                    for d in sweep.hardware
                ],
                dtype=object,
            ),
        ),
        "_attention_ratio": (
            ("hardware", "kv_dtype", "weight_dtype"),
            np.array(
                [
                    [
                        [
                            d.peak_flops[sweep.compute_dtype_for(w, d)]
                            / d.peak_flops[sweep.attention_dtype_for(k, w, d)]
                            for w in sweep.weight_dtype
                        ]
                        for k in sweep.kv_dtype
                    ]
                    for d in sweep.hardware
                ]
            ),
        ),
        "_cache_heads": (
            ("model", "kv_heads"),
            np.array(
                [[m.cache_heads(n) for n in row] for m, row in zip(models, counts, strict=True)],
                dtype=np.int64,
            ),
        ),
    }
