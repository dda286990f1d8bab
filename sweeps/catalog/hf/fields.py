"""Typed access to a parsed ``config.json``: every complaint names the file and the field.

A family's defaults (the values its Hugging Face config class supplies when a file omits a
field) and the old Falcon spellings (``ALIASES``) are applied here, so a rule reads a field
by its one name and gets the value the checkpoint was built with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sweeps import limits
from sweeps.errors import ImportModelError

ALIASES: Mapping[str, tuple[str, ...]] = {
    "hidden_size": ("n_embed",),
    "num_hidden_layers": ("n_layer",),
    "num_attention_heads": ("n_head",),
    "num_kv_heads": ("n_head_kv", "num_key_value_heads"),
    "num_experts_per_tok": ("experts_per_token",),
}
"""Other spellings of a field, tried in order after its own name (old Falcon "RefinedWeb"
files; gpt-oss's ``experts_per_token``)."""

MAX_INTEGER = 2**53
"""Largest integer a field may hold [1]: exact as a float, far above any real shape."""

LIMITED: Mapping[str, str] = {
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "num_attention_heads",
            "num_kv_heads",
            "num_experts_per_tok",
            "num_nextn_predict_layers",
            "first_k_dense_replace",
            "max_window_layers",
            "decoder_sparse_step",
            "moe_layer_freq",
            "n_shared_experts",
        ),
        "MAX_COUNT",
    ),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts"), "MAX_EXPERTS"),
    **dict.fromkeys(
        (
            "hidden_size",
            "intermediate_size",
            "moe_intermediate_size",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_nope_head_dim",
            "qk_rope_head_dim",
            "v_head_dim",
            "head_dim",
        ),
        "MAX_WIDTH",
    ),
    "vocab_size": "MAX_VOCAB",
}
"""Fields whose largest value is a structural limit of ``sweeps.limits`` (by its name):
layers, heads and experts are loops and array lengths, so a ``config.json`` with 2**53 layers
is refused when read, before anything is counted, with the limit a config table has."""


def field_maximum(key: str) -> int:
    """The largest value field ``key`` may hold: its ``LIMITED`` bound, else ``MAX_INTEGER``."""
    name = LIMITED.get(key)
    if name is None:
        return MAX_INTEGER
    return int(getattr(limits, name))


_DIGITS = 20
"""Integers with more digits than this are kept as ``Oversized`` by ``parse_int``."""


@dataclass(frozen=True, slots=True)
class Oversized:
    """An integer literal of a config.json too long to be a shape (``10**400``), kept as text
    so that the field holding it is named when it is read, and no huge number is built."""

    digits: str

    def __repr__(self) -> str:
        return f"{self.digits[:12]}... ({len(self.digits.lstrip('-'))} digits)"


def parse_int(text: str) -> int | Oversized:
    """``json.loads``'s ``parse_int``: the integer, or ``Oversized`` past ``_DIGITS`` digits."""
    return Oversized(text) if len(text.lstrip("-")) > _DIGITS else int(text)


class Fields:
    """Typed fields of one config dict, for one ``model_type``, with that family's defaults.

    data : The parsed ``config.json``
    source : The file, named in every message
    model_type : The architecture, named in "missing" messages
    defaults : Values the family's config class uses when the file omits a field
    """

    def __init__(
        self,
        data: Mapping[str, Any],
        source: str,
        model_type: str,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self.data = data
        self.source = source
        self.model_type = model_type
        self.defaults = defaults or {}

    def value(self, key: str) -> Any:
        """The raw value of ``key`` (or of an alias), else the family default, else None."""
        for name in (key, *ALIASES.get(key, ())):
            if self.data.get(name) is not None:
                return self.data[name]
        return self.defaults.get(key)

    def spelled(self, key: str) -> str:
        """The name the file gives ``key`` under (``key`` or one of its aliases); ``key``
        where the file gives none (a family default)."""
        for name in (key, *ALIASES.get(key, ())):
            if self.data.get(name) is not None:
                return name
        return key

    def has(self, key: str) -> bool:
        """True when the file (or the family default) gives ``key`` a non-null value."""
        return self.value(key) is not None

    def missing(self, key: str, why: str = "") -> ImportModelError:
        """The error for a needed field that is absent or null."""
        extra = f" ({why})" if why else ""
        msg = (
            f"{self.source}: field {key!r} is missing or null; it is needed for a "
            f"{self.model_type!r} model{extra}"
        )
        return ImportModelError(msg)

    def bad(self, key: str, value: Any, expected: str) -> ImportModelError:
        """The error for a field whose value is not what the formulas need."""
        msg = f"{self.source}: field {key!r} = {value!r} is not {expected}"
        return ImportModelError(msg)

    def integer(
        self, key: str, default: int | None = None, *, minimum: int = 1, why: str = ""
    ) -> int:
        """An integer in ``[minimum, MAX_INTEGER]`` [1]; ``default`` where absent (else an
        error naming the field, and ``why`` it is needed)."""
        value = self.value(key)
        if value is None:
            if default is None:
                raise self.missing(key, why)
            return default
        maximum = field_maximum(key)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            top = "2**53" if maximum == MAX_INTEGER else f"{maximum:,} (sweeps' limit)"
            raise self.bad(key, value, f"an integer from {minimum} to {top}")
        return value

    def opt_int(self, key: str, *, minimum: int = 1) -> int | None:
        """``integer(key)`` where the field is given, else None."""
        return self.integer(key, minimum=minimum) if self.has(key) else None

    def flag(self, key: str, default: bool) -> bool:
        """A true/false field; ``default`` where absent."""
        value = self.value(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.bad(key, value, "true or false")
        return value

    def indices(self, key: str) -> list[int]:
        """A list of layer indices (empty where absent)."""
        value = self.value(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in value
        ):
            raise self.bad(key, value, "a list of layer indices")
        return value

    def layer_types(self, layers: int) -> list[str] | None:
        """``layer_types``, one string per layer, or None where absent."""
        value = self.value("layer_types")
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key="layer_types", value=value, expected="a list of strings")
        if len(value) != layers:
            msg = (
                f"{self.source}: field 'layer_types' has {len(value)} entries, but "
                f"num_hidden_layers = {layers}"
            )
            raise ImportModelError(msg)
        return value
