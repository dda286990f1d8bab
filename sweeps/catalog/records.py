"""Typed, frozen records for catalog entries: hardware, models and number formats (dtypes).

Every figure is SI: bytes, bytes/s, FLOP/s. Records built from a config's custom
``[models.*]`` / ``[hardware.*]`` / ``[dtypes.*]`` tables are the same types.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from sweeps.catalog.specs import COMPUTE_DTYPES, HARDWARE_SPECS, MODEL_SPECS, Spec
from sweeps.physics import embedding_params, mla_attention_dim

__all__ = [  # the specs live in sweeps.catalog.specs and are re-exported here
    "ATTENTION_KINDS",
    "COMPUTE_DTYPES",
    "HARDWARE_SPECS",
    "MODEL_SPECS",
    "TABLE_FIELDS",
    "DType",
    "Hardware",
    "Model",
    "Spec",
]

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla", "gqa+sliding")

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
    memory_basis : Which document or driver log ``memory`` is read from
    board_power_w : Board power, TGP/TDP [W]; None where not published
    scale_up_link : The device-to-device link (NVLink 4, Infinity Fabric, ICI, ...); "" for none
    scale_up_bandwidth : That link's bandwidth per device and direction [byte/s]; None where
        the device has none or none is published
    host_link : The link to the host CPU (PCIe Gen5 x16, NVLink-C2C, ...)
    host_link_bandwidth : Host link bandwidth per direction [byte/s]; None where unknown
    board_power_source, scale_up_source, host_link_source : The vendor document each is read from
    """

    id: str
    name: str
    vendor: str
    memory: float
    bandwidth: float
    peak_flops: Mapping[str, float]
    memory_basis: str = ""
    cache_bytes: float | None = None
    board_power_w: float | None = None
    board_power_source: str = ""
    scale_up_link: str = ""
    scale_up_bandwidth: float | None = None
    scale_up_source: str = ""
    host_link: str = ""
    host_link_bandwidth: float | None = None
    host_link_source: str = ""
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
