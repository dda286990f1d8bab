"""Typed, frozen records for catalog entries: hardware, models and number formats (dtypes).

Every figure is SI: bytes, bytes/s, FLOP/s. Records built from a config's custom
``[models.*]`` / ``[hardware.*]`` / ``[dtypes.*]`` tables are the same types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla", "gqa+sliding")

TABLE_FIELDS = (
    "params",
    "active_params",
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "hidden_size",
    "attention",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "v_head_dim",
    "experts",
    "experts_per_token",
    "sliding_window",
    "local_layers",
    "max_context",
    "source",
)
"""``Model`` fields a config's ``[models.*]`` table can set (the schema's keys, less ``config``)."""


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
    """

    id: str
    params: float
    active_params: float
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden_size: int = 0
    intermediate_size: int = 0
    vocab_size: int = 0
    attention: str = "gqa"
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    experts: int = 1
    experts_per_token: int = 1
    shared_experts: int = 0
    moe_intermediate_size: int = 0
    sliding_window: int = 0
    local_layers: int = 0
    max_context: int = 0
    tie_word_embeddings: bool = False
    family: str = ""
    hf_repo: str = ""
    aliases: tuple[str, ...] = field(default=())
    source: str = ""
    notes: str = ""

    @property
    def is_mla(self) -> bool:
        """True for a multi-head latent attention cache (DeepSeek-V2/V3)."""
        return self.attention == "mla"

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.experts > self.experts_per_token
