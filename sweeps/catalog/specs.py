"""Each spec a catalog record carries into the grid and the spec tables, declared once.

``MODEL_SPECS`` and ``HARDWARE_SPECS`` name every per-model and per-device coordinate the grid
carries and every column ``models.parquet`` / ``hardware.parquet`` write, with its unit and
description; the values come from the records (``sweeps.catalog.records``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

COMPUTE_DTYPES = ("bf16", "fp8", "int8", "fp4", "fp32")
"""Compute dtypes a hardware record may carry a peak for (``peak_flops_<dtype>`` columns)."""


SpecDType = Literal["float64", "int64", "bool", "str"]


@dataclass(frozen=True, slots=True)
class Spec:
    """One spec of a record as the grid and the spec tables carry it, declared once.

    name : Coordinate name in the grid (unique across models and hardware)
    unit : Unit, SI (``1`` for a pure number, ``-`` for a label)
    description : One line, what it means
    value : The record's value
    dtype : ``float64``, ``int64``, ``bool`` or ``str``
    column : Column of ``models.parquet`` / ``hardware.parquet`` (defaults to ``name``)
    """

    name: str
    unit: str
    description: str
    value: Callable[[Any], object]
    dtype: SpecDType
    column: str = ""

    @property
    def column_name(self) -> str:
        """The Parquet column name."""
        return self.column or self.name


def _attr(name: str) -> Callable[[Any], object]:
    return lambda record: getattr(record, name)


MODEL_SPECS: tuple[Spec, ...] = (
    Spec("params", "1", "All parameters, every expert", _attr("params"), "float64"),
    Spec(
        "active_params",
        "1",
        "Parameters used per token (= params for dense models)",
        _attr("active_params"),
        "float64",
    ),
    Spec("layers", "1", "Transformer layers", _attr("layers"), "int64"),
    Spec("heads", "head", "Query heads", _attr("heads"), "int64"),
    Spec(
        "native_kv_heads",
        "head",
        "The model's own key/value heads",
        _attr("kv_heads"),
        "int64",
        "kv_heads",
    ),
    Spec("head_dim", "1", "Query/key dimension of one head", _attr("head_dim"), "int64"),
    Spec("hidden_size", "1", "Model width", _attr("width"), "int64"),
    Spec(
        "attention",
        "-",
        "Attention kind: mha, gqa, mqa, mla or gqa+sliding",
        _attr("attention"),
        "str",
    ),
    Spec(
        "attention_dim",
        "1",
        "Query-key plus value dimension per head, attention FLOPs",
        _attr("attention_dim"),
        "int64",
    ),
    Spec(
        "kv_latent",
        "1",
        "MLA latent elements cached per token per layer (0: not MLA)",
        _attr("kv_latent"),
        "int64",
    ),
    Spec("experts", "1", "Routed experts per MoE layer (1 for dense)", _attr("experts"), "int64"),
    Spec(
        "experts_per_token",
        "1",
        "Experts each token is routed to (1 for dense)",
        _attr("experts_per_token"),
        "int64",
    ),
    Spec(
        "sliding_window",
        "token",
        "Window of the local layers (0: none)",
        _attr("sliding_window"),
        "int64",
    ),
    Spec(
        "local_layers",
        "1",
        "Layers that keep only the sliding window",
        _attr("local_layers"),
        "int64",
    ),
    Spec(
        "model_kv_bytes_per_token",
        "byte",
        "KV bytes per token at the model's native KV heads in bf16, all layers",
        lambda model: model.kv_bytes_per_token(),
        "float64",
        "kv_bytes_per_token",
    ),
    Spec(
        "vocab_size",
        "token",
        "Vocabulary (0: not given, the note's abstract form)",
        _attr("vocab_size"),
        "int64",
    ),
    Spec(
        "tied_embeddings",
        "-",
        "The input embedding and the lm_head share one matrix",
        _attr("tie_word_embeddings"),
        "bool",
    ),
    Spec(
        "embedding_params",
        "1",
        "Embedding parameters E: 2*V*width untied, V*width tied (0 without a vocabulary)",
        _attr("embedding_params"),
        "float64",
    ),
    Spec(
        "model_source", "-", "Where the model's figures come from", _attr("source"), "str", "source"
    ),
)
"""Every model spec the grid carries per model and ``models.parquet`` writes, in column order."""


def _optional(name: str) -> Callable[[Any], object]:
    """A float field that may be None, as NaN (written null by every table)."""

    def value(record: Any) -> float:
        figure = getattr(record, name)
        return float("nan") if figure is None else float(figure)

    return value


def _peak(dtype: str) -> Callable[[Any], object]:
    return lambda device: device.peak_flops.get(dtype, float("nan"))


_PEAK_NOTES = {
    "bf16": ("FLOP/s", "Peak dense bf16 throughput"),
    "fp8": ("FLOP/s", "Peak dense fp8 throughput (null: not supported)"),
    "int8": ("OP/s", "Peak dense int8 throughput (null: not published)"),
    "fp4": ("FLOP/s", "Peak dense fp4 throughput (null: not supported)"),
    "fp32": ("FLOP/s", "Peak non-tensor fp32 throughput"),
}

HARDWARE_SPECS: tuple[Spec, ...] = (
    Spec("hardware_name", "-", "Device name", _attr("name"), "str", "name"),
    Spec("vendor", "-", "Device vendor", _attr("vendor"), "str"),
    Spec(
        "bandwidth", "byte/s", "Peak DRAM/HBM bandwidth (datasheet)", _attr("bandwidth"), "float64"
    ),
    Spec("memory", "byte", "Device memory", _attr("memory"), "float64"),
    *(
        Spec(f"peak_flops_{dtype}", *_PEAK_NOTES[dtype], _peak(dtype), "float64")
        for dtype in COMPUTE_DTYPES
    ),
    Spec(
        "memory_basis",
        "-",
        "Which document or driver log the memory figure is read from",
        _attr("memory_basis"),
        "str",
    ),
    Spec(
        "board_power_w",
        "W",
        "Board power, TGP/TDP (null: not published)",
        _optional("board_power_w"),
        "float64",
    ),
    Spec(
        "board_power_source",
        "-",
        "Where the board power is read",
        _attr("board_power_source"),
        "str",
    ),
    Spec(
        "scale_up_link",
        "-",
        "Device-to-device link: NVLink, Infinity Fabric, ICI (empty: none)",
        _attr("scale_up_link"),
        "str",
    ),
    Spec(
        "scale_up_bandwidth",
        "byte/s",
        "Scale-up link bandwidth per device and direction (null: none or not published)",
        _optional("scale_up_bandwidth"),
        "float64",
    ),
    Spec(
        "scale_up_source", "-", "Where the scale-up figure is read", _attr("scale_up_source"), "str"
    ),
    Spec(
        "host_link",
        "-",
        "Link to the host: PCIe generation and width, NVLink-C2C",
        _attr("host_link"),
        "str",
    ),
    Spec(
        "host_link_bandwidth",
        "byte/s",
        "Host link bandwidth per direction (null: not published)",
        _optional("host_link_bandwidth"),
        "float64",
    ),
    Spec(
        "host_link_source",
        "-",
        "Where the host link figure is read",
        _attr("host_link_source"),
        "str",
    ),
    Spec(
        "price_per_hour",
        "USD/h",
        "Price of one device-hour (null: none known)",
        _optional("price_per_hour"),
        "float64",
    ),
    Spec("price_kind", "-", "What the price is (on-demand, list, ...)", _attr("price_kind"), "str"),
    Spec(
        "hardware_price_as_of",
        "-",
        "Date the price was read",
        lambda device: "" if device.price_as_of is None else device.price_as_of.isoformat(),
        "str",
        "price_as_of",
    ),
    Spec("price_source", "-", "Where the price comes from", _attr("price_source"), "str"),
    Spec(
        "hardware_source",
        "-",
        "Where the device's figures come from",
        _attr("source"),
        "str",
        "source",
    ),
)
"""Every device spec the grid carries per device and ``hardware.parquet`` writes, in column
order (the peak the sweep's weights run at is the grid's ``peak_flops``)."""
