"""The rules a ``Family`` is built from, shared by the families that apply them: biases, KV
heads, norms, the dense MLP or routed experts (with the fields that hold them) and the
sliding-window layouts. Each reads its fields through ``Fields``, so every complaint names
the file and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sweeps.catalog.hf.fields import Fields
from sweeps.errors import ImportModelError

Rule = Callable[[Fields], bool]
"""A yes/no fact of a config (a bias present or not)."""


def never(f: Fields) -> bool:
    """No such bias in this family."""
    return False


def always(f: Fields) -> bool:
    """This bias is part of the architecture, whatever the file says."""
    return True


def flag(key: str) -> Rule:
    """The bias is on when the file's ``key`` is true (default: the family's defaults, else
    false)."""

    def rule(f: Fields) -> bool:
        return f.flag(key, False)

    rule.__doc__ = f"``{key}`` of the file"
    return rule


ATTENTION_BIAS = flag("attention_bias")
"""Q/K/V (and, where the family says so, O) biases per the file's ``attention_bias``."""


# --- KV heads -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KvHeadsField:
    """KV heads read from one field."""

    key: str = "num_key_value_heads"

    def read(self, f: Fields, heads: int) -> int:
        """KV heads [head]."""
        return f.integer(self.key)


@dataclass(frozen=True, slots=True)
class FalconKvHeads:
    """Falcon: one KV head (``multi_query``) or as many as query heads; the new decoder
    architecture names them (``num_kv_heads``). No single field holds them (``key`` None)."""

    key: None = None

    def read(self, f: Fields, heads: int) -> int:
        """KV heads [head]."""
        if f.flag("new_decoder_architecture", False):
            return f.integer("num_kv_heads", why="new_decoder_architecture")
        return 1 if f.flag("multi_query", True) else heads


KV_HEADS = KvHeadsField()
"""KV heads in ``num_key_value_heads``: most families."""


# --- norms ----------------------------------------------------------------------------------

Norms = Callable[[Fields, int], tuple[int, int]]
"""(fields, hidden) -> (parameters of one norm, norms per layer)."""


def rms_norms(per_layer: int) -> Norms:
    """RMSNorm (``hidden`` weights), ``per_layer`` of them a layer."""

    def norms(f: Fields, hidden: int) -> tuple[int, int]:
        return hidden, per_layer

    return norms


def falcon_norms(f: Fields, hidden: int) -> tuple[int, int]:
    """LayerNorm (weight and bias, ``2 * hidden``): one a layer with parallel attention in the
    old architecture, two otherwise."""
    parallel = f.flag("parallel_attn", True)
    per_layer = 2 if f.flag("new_decoder_architecture", False) or not parallel else 1
    return 2 * hidden, per_layer


RMS_NORMS = rms_norms(2)
"""Two RMSNorms a layer (before attention and before the MLP): most families."""


# --- MLP and experts ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mlp:
    """The MLP shapes of a model (``experts = 1``, ``moe_layers = 0`` for dense)."""

    intermediate: int  # dense MLP width, 0 where no layer is dense
    gated: bool = True
    experts: int = 1
    experts_per_token: int = 1
    moe_intermediate: int = 0
    shared_experts: int = 0
    moe_layers: int = 0
    expert_bias: bool = False


@dataclass(frozen=True, slots=True)
class Dense:
    """Every layer dense, its width in ``key`` (``default_ratio * hidden`` where absent and
    the family has such a default; required otherwise)."""

    key: str = "intermediate_size"
    default_ratio: int = 0
    gated: bool = True

    def read(self, f: Fields, hidden: int, layers: int, notes: list[str]) -> Mlp:
        """The family's MLP shapes."""
        if self.default_ratio and not f.has(self.key):
            width = self.default_ratio * hidden
            notes.append(f"FFN width {self.default_ratio}*hidden = {width} (family default)")
        else:
            width = f.integer(self.key)
        return Mlp(intermediate=width, gated=self.gated)


DENSE = Dense()
"""Dense MLPs of ``intermediate_size``, gated: most families."""

Layout = Callable[[Fields, int, list[str]], int]
"""(fields, layers, notes) -> how many layers are MoE."""


def every_layer_moe(f: Fields, layers: int, notes: list[str]) -> int:
    """Every layer routes to experts."""
    return layers


def qwen_moe_layers(f: Fields, layers: int, notes: list[str]) -> int:
    """Qwen3-MoE: every ``decoder_sparse_step``-th layer, less ``mlp_only_layers``."""
    step = f.integer("decoder_sparse_step", 1)
    dense_only = set(f.indices("mlp_only_layers"))
    return sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)


def deepseek_moe_layers(f: Fields, layers: int, notes: list[str]) -> int:
    """DeepSeek: dense up to ``first_k_dense_replace``, then every ``moe_layer_freq``-th; the
    multi-token-prediction layers (``num_nextn_predict_layers``) are not part of the model
    that decodes and are left out."""
    first_dense = f.integer("first_k_dense_replace", 0, minimum=0)
    freq = f.integer("moe_layer_freq", 1)
    mtp = f.integer("num_nextn_predict_layers", 0, minimum=0)
    if mtp:
        notes.append(f"{mtp} MTP layer(s) excluded from params")
    return sum(1 for i in range(first_dense, layers) if i % freq == 0)


@dataclass(frozen=True, slots=True)
class Experts:
    """Routed experts: ``count_key`` experts of width ``width_key``, ``num_experts_per_tok``
    per token, optional ``shared_key`` shared experts, on the layers ``layout`` picks; the
    other layers are dense MLPs of ``intermediate_size`` (required when some layer is dense,
    or always with ``dense_required``)."""

    count_key: str
    width_key: str
    layout: Layout = every_layer_moe
    shared_key: str | None = None
    dense_required: bool = False
    bias: bool = False

    def read(self, f: Fields, hidden: int, layers: int, notes: list[str]) -> Mlp:
        """The family's MLP shapes."""
        experts = f.integer(self.count_key)
        k = f.integer("num_experts_per_tok")
        width = f.integer(self.width_key, why="the width of each expert")
        shared = f.integer(self.shared_key, 0, minimum=0) if self.shared_key else 0
        moe_layers = self.layout(f, layers, notes)
        if self.width_key == "intermediate_size":
            dense = 0
        elif moe_layers < layers or self.dense_required:
            dense = f.integer("intermediate_size", why="the width of the dense layers")
        else:  # kept for the record; no layer uses it
            dense = f.opt_int("intermediate_size") or 0
        if experts < k:
            msg = (
                f"{f.source}: field {f.spelled('num_experts_per_tok')!r} = {k} exceeds "
                f"field {f.spelled(self.count_key)!r} = {experts}; allowed: 1 to {experts} "
                "(a token is routed to at most every expert)"
            )
            raise ImportModelError(msg)
        notes.append(
            f"{layers - moe_layers} dense + {moe_layers} MoE layers "
            f"({experts} routed x {width}, {shared} shared, top-{k})"
        )
        return Mlp(
            intermediate=dense,
            experts=experts,
            experts_per_token=k,
            moe_intermediate=width,
            shared_experts=shared,
            moe_layers=moe_layers,
            expert_bias=self.bias,
        )


# --- sliding windows ------------------------------------------------------------------------

Window = Callable[[Fields, int, int, list[str]], int]
"""(fields, window, layers, notes) -> layers that keep only the window, where the file has a
``sliding_window`` and no ``layer_types`` (which, when present, always decides)."""


def no_window(f: Fields, window: int, layers: int, notes: list[str]) -> int:
    """No sliding window in this architecture."""
    return 0


def window_every_layer(f: Fields, window: int, layers: int, notes: list[str]) -> int:
    """The window applies to every layer."""
    notes.append(f"sliding window {window} on every layer")
    return layers


def alternating(local: str, other: str) -> Window:
    """Local and global layers alternate, local first (layers 0, 2, ...)."""

    def rule(f: Fields, window: int, layers: int, notes: list[str]) -> int:
        notes.append(f"alternating {local} ({window}) / {other} layers, {local} first")
        return (layers + 1) // 2

    return rule


def qwen_window(f: Fields, window: int, layers: int, notes: list[str]) -> int:
    """Qwen: only with ``use_sliding_window``, on the layers from ``max_window_layers`` up."""
    if not f.flag("use_sliding_window", False):
        return 0
    first = f.integer("max_window_layers", minimum=0)
    notes.append(f"sliding window {window} on layers {first} and up")
    return max(layers - first, 0)
