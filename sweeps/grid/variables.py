"""The one registry of output variables: name, unit and one-line description, declared once.

It flows into xarray attrs (``units``, ``long_name``), Parquet schema metadata, chart axis
titles and the README's column table. A test fails if a variable of the grid is missing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Phase = Literal["axis", "decode", "prefill", "model", "hardware"]

BOTTLENECK_FLAGS = ("memory-bound", "compute-bound")
"""Meaning of the int8 ``bottleneck`` codes: 0 memory-bound, 1 compute-bound."""


@dataclass(frozen=True, slots=True)
class Variable:
    """One output quantity.

    name : Name in the xarray Dataset
    unit : Unit, SI (``FLOP``, ``byte``, ``s``, ``FLOP/s``, ``1`` for a pure number)
    description : One line, what it means
    phase : ``decode`` / ``prefill`` output, an ``axis``, or a ``model`` / ``hardware`` spec
    column : Name of its Parquet column (defaults to ``name``)
    """

    name: str
    unit: str
    description: str
    phase: Phase
    column: str = ""

    @property
    def column_name(self) -> str:
        """The Parquet column name."""
        return self.column or self.name

    @property
    def label(self) -> str:
        """``name [unit]`` with the name's underscores as spaces (``step time s [s]``), for axis
        titles and tables."""
        return f"{self.name.replace('_', ' ')} [{self.unit}]"


_V = Variable

VARIABLES: tuple[Variable, ...] = (
    # axes -----------------------------------------------------------------------------------
    _V("model", "-", "Model id (catalog id or [models.*] table name)", "axis"),
    _V("hardware", "-", "Device id (catalog id or [hardware.*] table name)", "axis"),
    _V("tp", "device", "Tensor-parallel degree: devices the model is split across", "axis"),
    _V("batch", "sequence", "Sequences processed together in one step", "axis"),
    _V("context", "token", "Tokens in each sequence's KV cache at the decode step", "axis"),
    _V("prompt", "token", "Prompt tokens per sequence in the prefill", "axis", "context"),
    _V("kv_heads", "head", "Key/value heads: the model's own ('native') or a GQA override", "axis"),
    _V("kv_dtype", "-", "Number format of the KV cache", "axis"),
    _V("weight_dtype", "-", "Number format of the weights", "axis"),
    # coordinates of the axes ----------------------------------------------------------------
    _V(
        "kv_heads_count",
        "head",
        "Key/value heads in effect (native resolved per model)",
        "axis",
        "kv_heads",
    ),
    _V(
        "kv_heads_native",
        "-",
        "True where kv_heads is the model's own (the 'native' setting)",
        "axis",
    ),
    _V("kv_bytes", "byte", "Bytes per KV-cache element, group-scale overhead included", "axis"),
    _V("weight_bytes_per_param", "byte", "Bytes per weight, group-scale overhead included", "axis"),
    # model specs ----------------------------------------------------------------------------
    _V("params", "1", "All parameters, every expert", "model"),
    _V("active_params", "1", "Parameters used per token (= params for dense models)", "model"),
    _V("layers", "1", "Transformer layers", "model"),
    _V("heads", "head", "Query heads", "model"),
    _V("native_kv_heads", "head", "The model's own key/value heads", "model", "kv_heads"),
    _V("head_dim", "1", "Query/key dimension of one head", "model"),
    _V("hidden_size", "1", "Model width", "model"),
    _V("attention", "-", "Attention kind: mha, gqa, mqa, mla or gqa+sliding", "model"),
    _V("attention_dim", "1", "Query-key plus value dimension per head, attention FLOPs", "model"),
    _V("kv_latent", "1", "MLA latent elements cached per token per layer (0: not MLA)", "model"),
    _V("experts", "1", "Routed experts per MoE layer (1 for dense)", "model"),
    _V("experts_per_token", "1", "Experts each token is routed to (1 for dense)", "model"),
    _V("sliding_window", "token", "Window of the local layers (0: none)", "model"),
    _V("local_layers", "1", "Layers that keep only the sliding window", "model"),
    _V(
        "model_kv_bytes_per_token",
        "byte",
        "KV bytes per token at the model's native KV heads in bf16, all layers",
        "model",
        "kv_bytes_per_token",
    ),
    _V("model_source", "-", "Where the model's figures come from", "model", "source"),
    # hardware specs -------------------------------------------------------------------------
    _V("hardware_name", "-", "Device name", "hardware", "name"),
    _V("vendor", "-", "Device vendor", "hardware"),
    _V("bandwidth", "byte/s", "Peak DRAM/HBM bandwidth (datasheet)", "hardware"),
    _V("memory", "byte", "Device memory", "hardware"),
    _V("peak_flops", "FLOP/s", "Peak dense throughput in the sweep's compute dtype", "hardware"),
    _V("peak_flops_bf16", "FLOP/s", "Peak dense bf16 throughput", "hardware"),
    _V("peak_flops_fp8", "FLOP/s", "Peak dense fp8 throughput (null: not supported)", "hardware"),
    _V("peak_flops_int8", "OP/s", "Peak dense int8 throughput (null: not published)", "hardware"),
    _V("peak_flops_fp4", "FLOP/s", "Peak dense fp4 throughput (null: not supported)", "hardware"),
    _V("peak_flops_fp32", "FLOP/s", "Peak non-tensor fp32 throughput", "hardware"),
    _V("hardware_source", "-", "Where the device's figures come from", "hardware", "source"),
    # decode ---------------------------------------------------------------------------------
    _V("flops", "FLOP", "FLOPs of one decode step, per device", "decode"),
    _V(
        "bytes", "byte", "HBM bytes of one decode step, per device: weights + every cache", "decode"
    ),
    _V("arithmetic_intensity", "FLOP/byte", "Decode FLOPs per HBM byte", "decode"),
    _V(
        "ridge_point",
        "FLOP/byte",
        "Peak FLOP/s over bandwidth of the device (efficiencies applied)",
        "decode",
    ),
    _V("bottleneck", "-", "memory-bound or compute-bound (a tie is compute-bound)", "decode"),
    _V(
        "attainable_flops",
        "FLOP/s",
        "Roofline bound on throughput, min(AI*bandwidth, peak)",
        "decode",
    ),
    _V("utilization", "1", "Attainable over peak FLOP/s, 0..1", "decode"),
    _V(
        "ceiling", "FLOP/byte", "Asymptotic decode intensity as batch grows, F_seq/KV_seq", "decode"
    ),
    _V("fraction_of_ceiling", "1", "Arithmetic intensity over the ceiling, 0..1", "decode"),
    _V("knee_batch", "sequence", "Batch reaching half the ceiling, W/KV_seq", "decode"),
    _V(
        "ceiling_batch",
        "sequence",
        "Batch reaching options.ceiling_fraction of the ceiling",
        "decode",
    ),
    _V("ridge_batch", "sequence", "Batch where decode turns compute-bound (null: never)", "decode"),
    _V(
        "max_batch",
        "sequence",
        "Largest batch whose weights and caches fit (0: does not fit)",
        "decode",
    ),
    _V(
        "ceiling_reachable",
        "-",
        "ceiling_batch fits in memory (ceiling_batch <= max_batch)",
        "decode",
    ),
    _V("feasible", "-", "The batch fits in device memory (batch <= max_batch)", "decode"),
    _V("step_time_s", "s", "Roofline bound on one decode step (inter-token latency)", "decode"),
    _V("tokens_per_s", "token/s", "Decode throughput bound, batch / step time", "decode"),
    _V("weight_bytes", "byte", "Weight bytes held per device (all experts)", "decode"),
    _V("weights_read_bytes", "byte", "Weight bytes one decode step reads per device", "decode"),
    _V("kv_bytes_per_token", "byte", "KV bytes one token adds, all layers", "decode"),
    _V("kv_bytes_per_sequence", "byte", "KV bytes of one sequence at this context", "decode"),
    _V(
        "experts_touched", "1", "Expected distinct experts per MoE layer in a decode step", "decode"
    ),
    _V(
        "allreduce_bytes",
        "byte",
        "Tensor-parallel all-reduce bytes per device per step (interconnect, not in bytes)",
        "decode",
    ),
    _V("tile_fill", "1", "Useful share of a 16-row tensor-core tile's rows, 0..1", "decode"),
    # prefill --------------------------------------------------------------------------------
    _V("prefill_flops", "FLOP", "FLOPs of the prefill, per device", "prefill", "flops"),
    _V(
        "prefill_bytes",
        "byte",
        "HBM bytes of the prefill, per device: weights + new caches",
        "prefill",
        "bytes",
    ),
    _V(
        "prefill_arithmetic_intensity",
        "FLOP/byte",
        "Prefill FLOPs per HBM byte",
        "prefill",
        "arithmetic_intensity",
    ),
    _V(
        "prefill_bottleneck",
        "-",
        "memory-bound or compute-bound (a tie is compute-bound)",
        "prefill",
        "bottleneck",
    ),
    _V(
        "prefill_attainable_flops",
        "FLOP/s",
        "Roofline bound on prefill throughput",
        "prefill",
        "attainable_flops",
    ),
    _V("prefill_utilization", "1", "Attainable over peak FLOP/s, 0..1", "prefill", "utilization"),
    _V(
        "prefill_feasible",
        "-",
        "Weights and the prompts' caches fit in device memory",
        "prefill",
        "feasible",
    ),
    _V("ttft_s", "s", "Roofline bound on the prefill time (time to first token)", "prefill"),
    _V(
        "prefill_memory_bound_prompt",
        "token",
        "Prompt length below which prefill is memory-bound, R*wb/2",
        "prefill",
        "memory_bound_prompt",
    ),
)

REGISTRY: dict[str, Variable] = {variable.name: variable for variable in VARIABLES}


def variable(name: str) -> Variable:
    """The registry entry of ``name``; ``KeyError`` names the unknown variable."""
    try:
        return REGISTRY[name]
    except KeyError:
        msg = f"variable {name!r} is not declared in sweeps.grid.variables.VARIABLES"
        raise KeyError(msg) from None


def by_phase(phase: Phase) -> tuple[Variable, ...]:
    """Registry entries of one phase, in declaration order."""
    return tuple(v for v in VARIABLES if v.phase == phase)
