"""Build the sweep's ``xarray.Dataset``: coordinates from the resolved config, physics over them.

Every quantity is computed at its natural dimensions by xarray broadcasting (weights per model
and dtype, caches per context and KV setting, the roofline per device); only the export
flattens. Canonical dimension order: model, hardware, tp, batch, context (prompt for the
prefill), kv_heads, kv_dtype, weight_dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from sweeps import physics
from sweeps.catalog import COMPUTE_DTYPES
from sweeps.config import NATIVE, Sweep
from sweeps.grid.chunks import estimate_bytes
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
    for name in list(ds.variables):
        entry = REGISTRY.get(str(name))
        if entry is None:
            continue
        ds[name].attrs.update({"units": entry.unit, "long_name": entry.description})
    for name in ("bottleneck", "prefill_bottleneck"):
        ds[name].attrs.update(
            {
                "flag_values": np.array([0, 1], dtype=np.int8),
                "flag_meanings": " ".join(BOTTLENECK_FLAGS),
            }
        )
    return ds


def _order(da: xr.DataArray, dims: tuple[str, ...]) -> xr.DataArray:
    return da.transpose(*[d for d in dims if d in da.dims])


# --- blocked evaluation of the full-rank outputs ----------------------------------------------
#
# Every full-rank output is a cheap elementwise function of low-rank inputs. Evaluated over the
# whole grid, each physics call would allocate a grid-sized temporary and stream it through main
# memory several times. Instead the grid is walked in cache-sized blocks: each block's inputs are
# broadcast into small contiguous slabs, the same physics functions run on them (so the values
# are bit-for-bit those of whole-array evaluation), and only the results are written out, once.

BLOCK_ELEMENTS = 1 << 16
"""Points per block: a few of its float64 temporaries fit the L2 cache of one core."""
MIN_INNER = 1 << 9
"""Smallest contiguous run of points a block is built from (keeps numpy's inner loops long)."""

Kernel = Callable[[dict[str, np.ndarray], frozenset[str]], dict[str, np.ndarray]]


def _full_rank(da: xr.DataArray, dims: tuple[str, ...]) -> np.ndarray:
    """``da``'s values with one axis per dim of ``dims`` (size 1 where ``da`` has none)."""
    present = [d for d in dims if d in da.dims]
    values = np.asarray(da.transpose(*present).values)
    return values.reshape([da.sizes[d] if d in da.dims else 1 for d in dims])


def _union(dims: tuple[str, ...], *arrays: xr.DataArray) -> tuple[str, ...]:
    """The dims of the broadcast of ``arrays``, in the canonical order ``dims``."""
    found = {d for a in arrays for d in a.dims}
    return tuple(d for d in dims if d in found)


def _evaluate(
    dims: tuple[str, ...],
    sizes: dict[str, int],
    inputs: dict[str, xr.DataArray],
    outputs: dict[str, tuple[tuple[str, ...], type]],
    kernel: Kernel,
) -> dict[str, np.ndarray]:
    """Run ``kernel`` over the grid ``dims`` block by block; fill one array per output.

    ``outputs`` maps each name to its dims (a subset of ``dims``, in order) and dtype; an output
    that lacks some dims is written from the blocks at index 0 of those dims only.
    """
    shape = tuple(sizes[d] for d in dims)
    arrays = {name: _full_rank(da, dims) for name, da in inputs.items()}
    results: dict[str, np.ndarray] = {
        name: np.empty(tuple(sizes[d] for d in odims), dtype=dtype)
        for name, (odims, dtype) in outputs.items()
    }
    k, inner = len(dims) - 1, 1
    while k > 0 and inner < MIN_INNER:
        inner *= shape[k]
        k -= 1
    if k == 0 or any(d not in odims for odims, _ in outputs.values() for d in dims[k:]):
        # Small or oddly shaped grid: one block, plain numpy broadcasting.
        block = kernel(arrays, frozenset(outputs))
        for name, (odims, _) in outputs.items():
            index = tuple(slice(None) if d in odims else 0 for d in dims)
            results[name][...] = np.broadcast_to(block[name], shape)[index]
        return results
    rows = max(1, min(shape[k], BLOCK_ELEMENTS // inner))
    cols = min(inner, BLOCK_ELEMENTS)
    views = {}
    for name, (odims, _) in outputs.items():
        full = [shape[i] if d in odims else 1 for i, d in enumerate(dims)]
        views[name] = results[name].reshape(full).reshape(*full[:k], shape[k], inner)
    cache: dict[str, tuple[object, np.ndarray]] = {}

    def slab(name: str, prefix: tuple[int, ...], r0: int, r1: int) -> np.ndarray:
        array = arrays[name]
        along = array.shape[k] > 1
        key = (
            tuple(p if array.shape[i] > 1 else 0 for i, p in enumerate(prefix)),
            (r0, r1) if along else None,
        )
        hit = cache.get(name)
        if hit is not None and hit[0] == key:
            return hit[1]
        sub = array[(*key[0], slice(r0, r1) if along else slice(0, 1))]  # type: ignore[arg-type]
        if sub[0].size == 1:
            out = sub.reshape(sub.shape[0], 1)
        else:
            out = np.broadcast_to(sub, (sub.shape[0], *shape[k + 1 :])).reshape(sub.shape[0], inner)
        cache[name] = (key, out)
        return out

    for prefix in np.ndindex(*shape[:k]):
        want = frozenset(
            name
            for name, (odims, _) in outputs.items()
            if all(p == 0 or dims[i] in odims for i, p in enumerate(prefix))
        )
        for r0 in range(0, shape[k], rows):
            r1 = min(r0 + rows, shape[k])
            slabs = {name: slab(name, prefix, r0, r1) for name in arrays}
            for c0 in range(0, inner, cols):
                c1 = min(c0 + cols, inner)
                block = {n: s if s.shape[1] == 1 else s[:, c0:c1] for n, s in slabs.items()}
                values = kernel(block, want)
                for name in want:
                    view = views[name]
                    index = tuple(p if view.shape[i] > 1 else 0 for i, p in enumerate(prefix))
                    np.copyto(view[index][r0:r1, c0:c1], values[name], casting="unsafe")
    return results


def _decode_kernel(x: dict[str, np.ndarray], want: frozenset[str]) -> dict[str, np.ndarray]:
    """The full-rank decode outputs of one block, from the physics."""
    step_bytes = physics.decode_bytes(x["weights_read"], x["batch"], x["kv_dev"])
    ai = physics.arithmetic_intensity(x["flops"], step_bytes)
    attainable = physics.attainable_flops(ai, x["peak"], x["bandwidth"])
    step = physics.roofline_time(x["flops"], step_bytes, x["peak"], x["bandwidth"])
    out = {
        "bytes": step_bytes,
        "arithmetic_intensity": ai,
        "bottleneck": physics.is_compute_bound(ai, x["ridge"]),
        "attainable_flops": attainable,
        "utilization": physics.utilization(attainable, x["peak_flops"]),
        "feasible": x["batch"] <= x["max_batch"],
        "step_time_s": step,
        "tokens_per_s": physics.tokens_per_second(x["batch"], step),
    }
    if "fraction_of_ceiling" in want:
        out["fraction_of_ceiling"] = ai / x["ceiling"]
    return out


def _prefill_kernel(x: dict[str, np.ndarray], want: frozenset[str]) -> dict[str, np.ndarray]:
    """The full-rank prefill outputs of one block, from the physics."""
    pre_bytes = physics.prefill_bytes(x["weights_read"], x["batch"], x["kv_dev"])
    pre_ai = physics.arithmetic_intensity(x["flops"], pre_bytes)
    attainable = physics.attainable_flops(pre_ai, x["peak"], x["bandwidth"])
    return {
        "prefill_bytes": pre_bytes,
        "prefill_arithmetic_intensity": pre_ai,
        "prefill_bottleneck": physics.is_compute_bound(pre_ai, x["ridge"]),
        "prefill_attainable_flops": attainable,
        "prefill_utilization": physics.utilization(attainable, x["peak_flops"]),
        "prefill_feasible": x["batch"] <= x["max_batch"],
        "ttft_s": physics.roofline_time(x["flops"], pre_bytes, x["peak"], x["bandwidth"]),
    }


def build_grid(sweep: Sweep) -> xr.Dataset:
    """Evaluate the decode and prefill roofline of every point of ``sweep``.

    Returns a Dataset whose variables are declared in ``sweeps.grid.variables`` (units and
    descriptions in their attrs) and whose ``attrs`` record the sweep's name, title and options.
    Variables keep their natural dimensions; the few that span the whole grid (bottleneck,
    attainable FLOP/s, times, ...) are evaluated block by block in cache (see ``_evaluate``).
    """
    ds = xr.Dataset(coords=_coords(sweep))
    # Bare DataArrays (dims, no coordinates): arithmetic then skips xarray's alignment and
    # coordinate merging, which would otherwise cost more than the low-rank math itself.
    c = {str(k): xr.DataArray(ds[k].variable) for k in ds.variables}
    opt = sweep.options
    attention_on = 1.0 if opt.attention_flops else 0.0
    bandwidth = c["bandwidth"] * opt.bandwidth_efficiency
    peak = c["peak_flops"] * opt.compute_efficiency
    tp, batch = c["tp"], c["batch"]
    is_mla = c["kv_latent"] > 0
    window = xr.where(c["sliding_window"] > 0, c["sliding_window"], np.inf)
    heads_for_kv = xr.where(is_mla, 1, c["kv_heads_count"])
    kv_elements = xr.where(is_mla, c["kv_latent"], 2 * c["kv_heads_count"] * c["head_dim"])

    out: dict[str, xr.DataArray] = {}
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
    inputs = {
        "weights_read": out["weights_read_bytes"],
        "batch": batch,
        "kv_dev": kv_dev,
        "flops": out["flops"],
        "ridge": ridge,
        "peak": peak,
        "bandwidth": bandwidth,
        "peak_flops": c["peak_flops"],
        "ceiling": ceiling,
        "max_batch": max_batch,
    }
    step_dims = _union(DECODE_DIMS, inputs["weights_read"], batch, kv_dev)
    ai_dims = _union(DECODE_DIMS, out["flops"], inputs["weights_read"], batch, kv_dev)
    full = _union(DECODE_DIMS, *inputs.values())
    decode_outputs: dict[str, tuple[tuple[str, ...], type]] = {
        "bytes": (step_dims, np.float64),
        "arithmetic_intensity": (ai_dims, np.float64),
        "bottleneck": (full, np.int8),
        "attainable_flops": (full, np.float64),
        "utilization": (full, np.float64),
        "fraction_of_ceiling": (
            _union(DECODE_DIMS, out["flops"], inputs["weights_read"], kv_dev, ceiling),
            np.float64,
        ),
        "feasible": (_union(DECODE_DIMS, batch, max_batch), np.bool_),
        "step_time_s": (full, np.float64),
        "tokens_per_s": (full, np.float64),
    }
    dense = _evaluate(
        DECODE_DIMS,
        {str(k): v for k, v in ds.sizes.items()},
        inputs,
        decode_outputs,
        _decode_kernel,
    )
    for name, values in dense.items():
        out[name] = xr.DataArray(values, dims=decode_outputs[name][0])

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
    inputs = {
        "weights_read": pre_read,
        "batch": batch,
        "kv_dev": prompt_kv_dev,
        "flops": pre_flops,
        "ridge": ridge,
        "peak": peak,
        "bandwidth": bandwidth,
        "peak_flops": c["peak_flops"],
        "max_batch": pre_max,
    }
    bytes_dims = _union(PREFILL_DIMS, pre_read, batch, prompt_kv_dev)
    ai_dims = _union(PREFILL_DIMS, pre_flops, pre_read, batch, prompt_kv_dev)
    full = _union(PREFILL_DIMS, *inputs.values())
    prefill_outputs: dict[str, tuple[tuple[str, ...], type]] = {
        "prefill_bytes": (bytes_dims, np.float64),
        "prefill_arithmetic_intensity": (ai_dims, np.float64),
        "prefill_bottleneck": (full, np.int8),
        "prefill_attainable_flops": (full, np.float64),
        "prefill_utilization": (full, np.float64),
        "prefill_feasible": (_union(PREFILL_DIMS, batch, pre_max), np.bool_),
        "ttft_s": (full, np.float64),
    }
    dense = _evaluate(
        PREFILL_DIMS,
        {str(k): v for k, v in ds.sizes.items()},
        inputs,
        prefill_outputs,
        _prefill_kernel,
    )
    for name, values in dense.items():
        out[name] = xr.DataArray(values, dims=prefill_outputs[name][0])
    out["prefill_memory_bound_prompt"] = physics.prefill_memory_bound_prompt(
        ridge, c["weight_bytes_per_param"]
    )

    for name, da in out.items():
        dims = PREFILL_DIMS if name.startswith("prefill_") or name == "ttft_s" else DECODE_DIMS
        ds[name] = _order(da.drop_vars([k for k in da.coords if k not in da.dims]), dims)
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
            "note": "Roofline bounds: real kernels reach 60-85% of peak bandwidth and less of "
            "peak FLOP/s; times are lower bounds, throughputs upper bounds.",
        }
    )
    return _annotate(ds)
