"""Typed, frozen records for catalog entries: hardware, models and number formats (dtypes).

Every figure is SI: bytes, bytes/s, FLOP/s. Records built from a config's custom
``[models.*]`` / ``[hardware.*]`` / ``[dtypes.*]`` tables are the same types.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from sweeps.physics import embedding_params, mla_attention_dim

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla", "gqa+sliding")

COMPUTE_DTYPES = ("bf16", "fp8", "int8", "fp4", "fp32")
"""Compute dtypes a hardware record may carry a peak for (``peak_flops_<dtype>`` columns)."""

BF16_BYTES = 2.0
"""Bytes of a bf16 element: the basis of ``Model.kv_bytes_per_token``'s default [byte]."""

TABLE_KEY = MappingProxyType({"table": True})
"""Field metadata of a ``Model`` field that a config's ``[models.*]`` table can set."""


@dataclass(frozen=True, slots=True)
class DType:
    """A number format for weights or KV cache.

    name : Format name, e.g. ``bf16`` or ``int4``
    bits : Bits per element [bit]
    group_size : Elements sharing one scale, 0 for none [1]
    scale_bytes : Bytes of one scale [byte]
    compute : The hardware peak column (``bf16``, ``fp8``, ...) that runs this format
    """

    name: str
    bits: float
    group_size: int = 0
    scale_bytes: float = 0.0
    compute: str = "bf16"
    description: str = ""

    @property
    def bytes_per_element(self) -> float:
        """Bytes per element, group-scale overhead included [byte]."""
        overhead = self.scale_bytes / self.group_size if self.group_size else 0.0
        return self.bits / 8 + overhead


@dataclass(frozen=True, slots=True)
class Hardware:
    """One accelerator (per device: a GPU, a TPU chip, a package).

    memory : Device memory [byte]
    bandwidth : Peak DRAM/HBM bandwidth [byte/s]
    peak_flops : Peak dense throughput per compute dtype [FLOP/s]; never the 2:4-sparse figure
    price_per_hour : What one device-hour costs [USD/h]; None where no price is known
    price_kind : How that price is offered (provider, on-demand or reserved, region)
    price_as_of : The date the price was read; None with no price
    price_source : Where the price was read
    """

    id: str
    name: str
    vendor: str
    memory: float
    bandwidth: float
    peak_flops: Mapping[str, float]
    memory_basis: str = ""
    cache_bytes: float | None = None
    price_per_hour: float | None = None
    price_kind: str = ""
    price_as_of: datetime.date | None = None
    price_source: str = ""
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(self.peak_flops)))


@dataclass(frozen=True, slots=True)
class Model:
    """One LLM architecture, as its ``config.json`` describes it.

    params : All parameters, every expert [1]
    active_params : Parameters used per token [1]
    head_dim : Query/key head dimension (for MLA the q/k dim, nope + rope) [1]
    kv_lora_rank, qk_rope_head_dim, v_head_dim : MLA latent ranks [1]; 0 elsewhere
    experts, experts_per_token : Routed experts per MoE layer and per token; 1, 1 for dense
    sliding_window : Window length of the local layers [token]; 0 for none
    local_layers : Layers that keep only ``sliding_window`` tokens [1]
    hidden_size : Width of the residual stream [1]; 0 where a custom table gives none
    vocab_size : Vocabulary [token]; 0 where unknown (a custom table without one)
    tie_word_embeddings : The input embedding and the LM head are one matrix
    """

    id: str
    params: float = field(metadata=TABLE_KEY)
    active_params: float = field(metadata=TABLE_KEY)
    layers: int = field(metadata=TABLE_KEY)
    heads: int = field(metadata=TABLE_KEY)
    kv_heads: int = field(metadata=TABLE_KEY)
    head_dim: int = field(metadata=TABLE_KEY)
    hidden_size: int = field(default=0, metadata=TABLE_KEY)
    intermediate_size: int = 0
    vocab_size: int = 0
    attention: str = field(default="gqa", metadata=TABLE_KEY)
    kv_lora_rank: int = field(default=0, metadata=TABLE_KEY)
    qk_rope_head_dim: int = field(default=0, metadata=TABLE_KEY)
    v_head_dim: int = field(default=0, metadata=TABLE_KEY)
    experts: int = field(default=1, metadata=TABLE_KEY)
    experts_per_token: int = field(default=1, metadata=TABLE_KEY)
    shared_experts: int = 0
    moe_intermediate_size: int = 0
    sliding_window: int = field(default=0, metadata=TABLE_KEY)
    local_layers: int = field(default=0, metadata=TABLE_KEY)
    max_context: int = field(default=0, metadata=TABLE_KEY)
    tie_word_embeddings: bool = False
    family: str = ""
    hf_repo: str = ""
    aliases: tuple[str, ...] = ()
    source: str = field(default="", metadata=TABLE_KEY)
    notes: str = ""

    @property
    def is_mla(self) -> bool:
        """True for a multi-head latent attention cache (DeepSeek-V2/V3)."""
        return self.attention == "mla"

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.experts > self.experts_per_token

    @property
    def width(self) -> int:
        """Model width [1]: ``hidden_size``, or ``heads * head_dim`` where a custom table gives
        none (the two agree for every catalog model but those whose attention is wider or
        narrower than the residual stream, which always state ``hidden_size``)."""
        return self.hidden_size or self.heads * self.head_dim

    @property
    def embedding_params(self) -> int:
        """Embedding parameters [1]: the input embedding and the LM head, ``2 * vocab_size *
        width``, or ``vocab_size * width`` when they are one tied matrix; 0 where the
        vocabulary is unknown (``sweeps.physics.embedding_params``)."""
        return int(embedding_params(self.vocab_size, self.width, self.tie_word_embeddings))

    @property
    def kv_latent(self) -> int:
        """MLA latent elements cached per token per layer, ``kv_lora_rank + qk_rope_head_dim``
        [1]; 0 where the model is not MLA (docs/cost-model.md section 2)."""
        return self.kv_lora_rank + self.qk_rope_head_dim if self.is_mla else 0

    @property
    def attention_dim(self) -> int:
        """Query-key plus value dimension per head that one attended pair costs, FLOP-wise [1].

        ``2 * head_dim`` for MHA/GQA/MQA; for MLA in its absorbed (decode) form the scores and
        the weighted sum run against the latent: ``kv_lora_rank + rope`` for q.k and
        ``kv_lora_rank`` for the values, ``2 * kv_lora_rank + qk_rope_head_dim``."""
        if self.is_mla:
            return 2 * self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.head_dim

    @property
    def prefill_attention_dim(self) -> float:
        """Query-key plus value dimension per head of one attended pair in a prefill [1].

        ``attention_dim`` but for MLA, whose prefill kernels run the non-absorbed form
        (``d_qk + d_v``, 320 for DeepSeek-V3 against 1088 absorbed): each phase takes the
        cheaper form (``sweeps.physics.mla_attention_dim``, no cached keys to re-project)."""
        if not self.is_mla:
            return float(self.attention_dim)
        nope = self.head_dim - self.qk_rope_head_dim
        return float(
            mla_attention_dim(
                self.kv_lora_rank, self.qk_rope_head_dim, nope, self.v_head_dim, math.inf
            )
        )

    def cache_heads(self, kv_heads: int) -> int:
        """Heads the KV cache is split into across tensor-parallel ranks [head].

        An MLA latent is one vector per token shared by every query head: it cannot be split
        by head, so it counts as one head (replicated on every rank)."""
        return 1 if self.is_mla else kv_heads

    def kv_elements_per_token_layer(self, kv_heads: int) -> int:
        """Elements one token adds to one layer's cache [1]: K and V of each KV head,
        ``2 * kv_heads * head_dim``, or the MLA latent."""
        return self.kv_latent if self.is_mla else 2 * kv_heads * self.head_dim

    def kv_bytes_per_token(
        self, kv_bytes: float = BF16_BYTES, kv_heads: int | None = None
    ) -> float:
        """KV bytes one token adds over all layers [byte], at ``kv_bytes`` per element
        [byte] and ``kv_heads`` (default: the model's own)."""
        heads = self.kv_heads if kv_heads is None else kv_heads
        return self.kv_elements_per_token_layer(heads) * kv_bytes * self.layers


TABLE_FIELDS = tuple(f.name for f in dataclasses.fields(Model) if f.metadata.get("table"))
"""``Model`` fields a config's ``[models.*]`` table can set (the schema's keys, less
``config``), in field order: those declared with ``metadata=TABLE_KEY``."""


SpecDType = Literal["float64", "int64", "bool", "str"]


@dataclass(frozen=True, slots=True)
class Spec:
    """One spec of a record as the grid and the spec tables carry it, declared once.

    name : Coordinate name in the grid (unique across models and hardware)
    unit : Unit, SI (``1`` for a pure number, ``-`` for a label)
    description : One line, what it means
    value : The record's value (``None``: the grid supplies it, e.g. the sweep's compute peak)
    dtype : ``float64``, ``int64``, ``bool`` or ``str``
    column : Column of ``models.parquet`` / ``hardware.parquet`` (defaults to ``name``)
    """

    name: str
    unit: str
    description: str
    value: Callable[[Any], object] | None
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
    Spec(
        "peak_flops",
        "FLOP/s",
        "Peak dense throughput in the sweep's compute dtype",
        None,
        "float64",
    ),
    *(
        Spec(f"peak_flops_{dtype}", *_PEAK_NOTES[dtype], _peak(dtype), "float64")
        for dtype in COMPUTE_DTYPES
    ),
    Spec(
        "price_per_hour",
        "USD/h",
        "Price of one device-hour (null: none known)",
        lambda device: float("nan") if device.price_per_hour is None else device.price_per_hour,
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
order; ``peak_flops`` depends on the sweep's options and is supplied by the grid."""
