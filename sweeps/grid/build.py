"""Build the sweep's ``xarray.Dataset``: coordinates from the resolved config, physics over them.

Every quantity is computed at its natural dimensions by xarray broadcasting (weights per model
and dtype, caches per context and KV setting, the roofline per device); only the export
flattens. Canonical dimension order: model, hardware, tp, batch, context (prompt for the
prefill), kv_heads, kv_dtype, weight_dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from sweeps import physics
from sweeps.catalog import COMPUTE_DTYPES
from sweeps.config import NATIVE, Sweep
from sweeps.grid.chunks import estimate_bytes
from sweeps.grid.roof import roofline_outputs
from sweeps.grid.variables import BOTTLENECK_FLAGS, REGISTRY

DECODE_DIMS = (
    "model",
    "hardware",
    "tp",
    "batch",
    "context",
    "kv_heads",
    "kv_dtype",
    "weight_dtype",
)
PREFILL_DIMS = (
    "model",
    "hardware",
    "tp",
    "batch",
    "prompt",
    "kv_heads",
    "kv_dtype",
    "weight_dtype",
)
BF16_BYTES = 2.0

__all__ = ["DECODE_DIMS", "PREFILL_DIMS", "build_grid", "estimate_bytes"]


def _coords(sweep: Sweep) -> dict[str, tuple[str | tuple[str, ...], np.ndarray]]:
    models, devices = sweep.models, sweep.hardware
    native = np.array([m.kv_heads for m in models])
    counts = np.array(
        [
            [m.kv_heads if label == NATIVE else int(label) for label in sweep.kv_heads]
            for m in models
        ]
    )

    def per_model(values: list[object], dtype: Any = None) -> tuple[str, np.ndarray]:
        return ("model", np.asarray(values, dtype=dtype))

    def per_device(values: list[object], dtype: Any = None) -> tuple[str, np.ndarray]:
        return ("hardware", np.asarray(values, dtype=dtype))

    coords: dict[str, tuple[str | tuple[str, ...], np.ndarray]] = {
        "model": per_model([m.id for m in models], object),
        "hardware": per_device([d.id for d in devices], object),
        "tp": ("tp", np.asarray(sweep.tp, dtype=np.int64)),
        "batch": ("batch", np.asarray(sweep.batch, dtype=np.int64)),
        "context": ("context", np.asarray(sweep.context, dtype=np.int64)),
        "prompt": ("prompt", np.asarray(sweep.prompt, dtype=np.int64)),
        "kv_heads": ("kv_heads", np.asarray(sweep.kv_heads, dtype=object)),
        "kv_dtype": ("kv_dtype", np.asarray([d.name for d in sweep.kv_dtype], dtype=object)),
        "weight_dtype": (
            "weight_dtype",
            np.asarray([d.name for d in sweep.weight_dtype], dtype=object),
        ),
        "kv_heads_count": (("model", "kv_heads"), counts.astype(np.int64)),
        "kv_bytes": ("kv_dtype", np.array([d.bytes_per_element for d in sweep.kv_dtype])),
        "weight_bytes_per_param": (
            "weight_dtype",
            np.array([d.bytes_per_element for d in sweep.weight_dtype]),
        ),
        "params": per_model([m.params for m in models], float),
        "active_params": per_model([m.active_params for m in models], float),
        "layers": per_model([m.layers for m in models], np.int64),
        "heads": per_model([m.heads for m in models], np.int64),
        "native_kv_heads": ("model", native.astype(np.int64)),
        "head_dim": per_model([m.head_dim for m in models], np.int64),
        "hidden_size": per_model([m.hidden_size or m.heads * m.head_dim for m in models], np.int64),
        "attention": per_model([m.attention for m in models], object),
        "attention_dim": per_model(
            [
                (2 * m.kv_lora_rank + m.qk_rope_head_dim) if m.is_mla else 2 * m.head_dim
                for m in models
            ],
            np.int64,
        ),
        "kv_latent": per_model(
            [(m.kv_lora_rank + m.qk_rope_head_dim) if m.is_mla else 0 for m in models], np.int64
        ),
        "experts": per_model([m.experts for m in models], np.int64),
        "experts_per_token": per_model([m.experts_per_token for m in models], np.int64),
        "sliding_window": per_model([m.sliding_window for m in models], np.int64),
        "local_layers": per_model([m.local_layers for m in models], np.int64),
        "model_source": per_model([m.source for m in models], object),
        "hardware_name": per_device([d.name for d in devices], object),
        "vendor": per_device([d.vendor for d in devices], object),
        "bandwidth": per_device([d.bandwidth for d in devices], float),
        "memory": per_device([d.memory for d in devices], float),
        "peak_flops": per_device(
            [d.peak_flops[sweep.options.compute_dtype] for d in devices], float
        ),
        "hardware_source": per_device([d.source for d in devices], object),
    }
    for dtype in COMPUTE_DTYPES:
        coords[f"peak_flops_{dtype}"] = per_device(
            [d.peak_flops.get(dtype, np.nan) for d in devices], float
        )
    return coords


def _annotate(ds: xr.Dataset) -> xr.Dataset:
    # on the Variables themselves: ds[name] would build a DataArray (with its coordinates)
    # for each of the ~100 names
    variables = ds.variables
    for name, variable in variables.items():
        entry = REGISTRY.get(str(name))
        if entry is None:
            continue
        variable.attrs.update({"units": entry.unit, "long_name": entry.description})
    for name in ("bottleneck", "prefill_bottleneck"):
        variables[name].attrs.update(
            {
                "flag_values": np.array([0, 1], dtype=np.int8),
                "flag_meanings": " ".join(BOTTLENECK_FLAGS),
            }
        )
    return ds


def _order(variable: xr.Variable, dims: tuple[str, ...]) -> xr.Variable:
    return variable.transpose(*[d for d in dims if d in variable.dims])


def _pointwise(function: Any, dims: tuple[str, ...], *args: Any) -> xr.Variable:
    """``function(*args)`` with numpy broadcasting in the canonical order of ``dims``.

    xarray orders a result's dimensions as they first appear in the expression, and numpy lays
    the result out by its operands' strides, so a per-point quantity such as the step bytes
    came out transposed (batch outermost) and the roofline pass copied it into order. Here
    every Variable operand is made contiguous with its dimensions in canonical order, size-1
    axes for the others (a copy only for the low-rank operands; per-point ones already are):
    the result is C-contiguous over its dimensions in that order, and the pass reads it in
    place.
    """
    variables = [a for a in args if isinstance(a, xr.Variable)]
    present = [d for d in dims if any(d in v.dims for v in variables)]

    def laid_out(a: Any) -> Any:
        if not isinstance(a, xr.Variable):
            return a
        own = [d for d in present if d in a.dims]
        data = np.ascontiguousarray(a.transpose(*own).values)
        return data.reshape([a.sizes[d] if d in a.dims else 1 for d in present])

    return xr.Variable(present, function(*(laid_out(a) for a in args)))


def build_grid(
    sweep: Sweep, use_kernel: bool | None = None, chunks: Mapping[str, int] | None = None
) -> xr.Dataset:
    """Evaluate the decode and prefill roofline of every point of ``sweep``.

    Returns a Dataset whose variables are declared in ``sweeps.grid.variables`` (units and
    descriptions in their attrs) and whose ``attrs`` record the sweep's name, title and options.
    Variables keep their natural dimensions; the few that span the whole grid (bottleneck,
    attainable FLOP/s, times, ...) are written in one pass by ``sweeps.grid.roof``;
    ``use_kernel`` forces its compiled (True) or numpy (False) path, for tests.

    ``chunks`` (``{"model": 1, "hardware": 4}``; needs the ``dask`` extra) makes those
    full-rank variables dask arrays, one block per that many models and devices: nothing of
    them is computed until asked (``.compute()``, ``.sel(...).values``), and with a
    ``dask.distributed`` client the blocks are computed on its workers. The low-rank variables
    are small and computed at once.
    """
    ds = xr.Dataset(coords=_coords(sweep))
    sizes = {str(k): int(v) for k, v in ds.sizes.items()}
    # xarray Variables (named dims, no coordinates or indexes): broadcasting by name without
    # the alignment and coordinate merging of DataArrays, which cost more than the math itself.
    c: dict[str, Any] = {str(k): ds[k].variable for k in ds.variables}
    opt = sweep.options
    attention_on = 1.0 if opt.attention_flops else 0.0
    bandwidth = c["bandwidth"] * opt.bandwidth_efficiency
    peak = c["peak_flops"] * opt.compute_efficiency
    tp, batch = c["tp"], c["batch"]
    is_mla = c["kv_latent"] > 0
    window = xr.where(c["sliding_window"] > 0, c["sliding_window"], np.inf)
    heads_for_kv = xr.where(is_mla, 1, c["kv_heads_count"])
    kv_elements = xr.where(is_mla, c["kv_latent"], 2 * c["kv_heads_count"] * c["head_dim"])

    out: dict[str, xr.Variable] = {}
    # model bytes --------------------------------------------------------------------------
    weights = physics.weight_bytes(c["params"], c["weight_bytes_per_param"])
    out["weight_bytes"] = weights / tp
    out["experts_touched"] = physics.expected_experts_touched(
        c["experts"], c["experts_per_token"], batch
    )
    read_params = physics.params_read(
        c["params"], c["active_params"], c["experts"], c["experts_per_token"], batch
    )
    out["weights_read_bytes"] = read_params * c["weight_bytes_per_param"] / tp
    shards = physics.kv_shards(tp, heads_for_kv)
    ds = ds.assign_coords(
        model_kv_bytes_per_token=xr.where(
            is_mla, c["kv_latent"], 2 * c["native_kv_heads"] * c["head_dim"]
        )
        * BF16_BYTES
        * c["layers"]
    )

    # decode -------------------------------------------------------------------------------
    layer_tokens = physics.kv_cached_layer_tokens(
        c["context"], c["layers"], c["local_layers"], window
    )
    out["kv_bytes_per_token"] = kv_elements * c["kv_bytes"] * c["layers"]
    kv_seq = physics.kv_bytes_per_sequence(kv_elements, c["kv_bytes"], layer_tokens)
    out["kv_bytes_per_sequence"] = kv_seq
    kv_dev = kv_seq / shards
    f_seq = (
        physics.decode_flops_per_sequence(
            c["active_params"],
            physics.attention_flops_per_token(c["heads"], c["attention_dim"], layer_tokens),
            attention_on,
        )
        / tp
    )
    out["flops"] = physics.decode_flops(batch, f_seq)
    ridge = physics.ridge_point(peak, bandwidth)
    out["ridge_point"] = ridge
    ceiling = physics.asymptotic_ceiling(f_seq, kv_dev)
    out["ceiling"] = ceiling
    w_dev = out["weight_bytes"]
    out["knee_batch"] = physics.knee_batch(w_dev, kv_dev)
    out["ceiling_batch"] = physics.batch_for_fraction(opt.ceiling_fraction, w_dev, kv_dev)
    out["ridge_batch"] = physics.ridge_batch(ridge, w_dev, f_seq, kv_dev)
    max_batch = physics.max_batch(c["memory"], opt.memory_reserve, w_dev, kv_dev)
    out["max_batch"] = max_batch.astype(np.int64)
    out["ceiling_reachable"] = out["ceiling_batch"] <= max_batch
    out["allreduce_bytes"] = physics.allreduce_bytes(
        c["layers"], batch, c["hidden_size"], opt.activation_bytes, tp
    )
    out["tile_fill"] = physics.tile_fill(batch)
    step_bytes = _pointwise(
        physics.decode_bytes, DECODE_DIMS, out["weights_read_bytes"], batch, kv_dev
    )
    ai = _pointwise(physics.arithmetic_intensity, DECODE_DIMS, out["flops"], step_bytes)
    out["bytes"] = step_bytes
    out["arithmetic_intensity"] = ai
    out["fraction_of_ceiling"] = _pointwise(np.divide, DECODE_DIMS, ai, ceiling)
    roof = roofline_outputs(
        DECODE_DIMS, sizes, flops=out["flops"], nbytes=step_bytes, ai=ai, batch=batch,
        max_batch=max_batch, peak=peak, bandwidth=bandwidth, ridge=ridge,
        peak_flops=c["peak_flops"], with_tokens=True, use_kernel=use_kernel, chunks=chunks,
    )  # fmt: skip
    out["bottleneck"] = roof["bottleneck"]
    out["attainable_flops"] = roof["attainable_flops"]
    out["utilization"] = roof["utilization"]
    out["step_time_s"] = roof["time"]
    out["tokens_per_s"] = roof["tokens_per_s"]
    out["feasible"] = roof["feasible"]

    # prefill ------------------------------------------------------------------------------
    prompt = c["prompt"]
    prompt_layer_tokens = physics.kv_cached_layer_tokens(
        prompt, c["layers"], c["local_layers"], window
    )
    prompt_kv_dev = (
        physics.kv_bytes_per_sequence(kv_elements, c["kv_bytes"], prompt_layer_tokens) / shards
    )
    pairs = physics.prefill_attention_pairs(prompt, c["layers"], c["local_layers"], window)
    pre_flops = (
        physics.prefill_flops(
            batch, prompt, c["active_params"], c["heads"], c["attention_dim"], pairs, attention_on
        )
        / tp
    )
    pre_params = physics.params_read(
        c["params"], c["active_params"], c["experts"], c["experts_per_token"], batch * prompt
    )
    pre_read = pre_params * c["weight_bytes_per_param"] / tp
    out["prefill_flops"] = pre_flops
    pre_max = physics.max_batch(c["memory"], opt.memory_reserve, w_dev, prompt_kv_dev)
    pre_bytes = _pointwise(physics.prefill_bytes, PREFILL_DIMS, pre_read, batch, prompt_kv_dev)
    pre_ai = _pointwise(physics.arithmetic_intensity, PREFILL_DIMS, pre_flops, pre_bytes)
    out["prefill_bytes"] = pre_bytes
    out["prefill_arithmetic_intensity"] = pre_ai
    roof = roofline_outputs(
        PREFILL_DIMS, sizes, flops=pre_flops, nbytes=pre_bytes, ai=pre_ai, batch=batch,
        max_batch=pre_max, peak=peak, bandwidth=bandwidth, ridge=ridge,
        peak_flops=c["peak_flops"], with_tokens=False, use_kernel=use_kernel, chunks=chunks,
    )  # fmt: skip
    out["prefill_bottleneck"] = roof["bottleneck"]
    out["prefill_attainable_flops"] = roof["attainable_flops"]
    out["prefill_utilization"] = roof["utilization"]
    out["ttft_s"] = roof["time"]
    out["prefill_feasible"] = roof["feasible"]
    out["prefill_memory_bound_prompt"] = physics.prefill_memory_bound_prompt(
        ridge, c["weight_bytes_per_param"]
    )

    data_vars = {}
    for name, da in out.items():
        dims = PREFILL_DIMS if name.startswith("prefill_") or name == "ttft_s" else DECODE_DIMS
        data_vars[name] = _order(da, dims)
    # one construction, not one merge per variable: the variables carry no coordinates
    ds = xr.Dataset(data_vars, coords=ds.coords)
    ds.attrs.update(
        {
            "title": sweep.title,
            "sweep": sweep.name,
            "attention_flops": int(opt.attention_flops),
            "memory_reserve": opt.memory_reserve,
            "ceiling_fraction": opt.ceiling_fraction,
            "compute_dtype": opt.compute_dtype,
            "bandwidth_efficiency": opt.bandwidth_efficiency,
            "compute_efficiency": opt.compute_efficiency,
            "max_chart_cells": opt.max_chart_cells,
            "note": "Roofline bounds: real kernels reach 60-85% of peak bandwidth and less of "
            "peak FLOP/s; times are lower bounds, throughputs upper bounds.",
        }
    )
    return _annotate(ds)
