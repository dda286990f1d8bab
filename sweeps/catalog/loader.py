"""Load the catalog's CSV files into frozen records, and look ids up with helpful errors."""

from __future__ import annotations

import csv
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Protocol, TypeVar

from sweeps.catalog.records import COMPUTE_DTYPES, DType, Hardware, Model
from sweeps.errors import CatalogError

T = TypeVar("T")


class _Record(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...


R = TypeVar("R", bound=_Record)


def _rows(filename: str) -> list[dict[str, str]]:
    text = resources.files("sweeps.catalog").joinpath("data", filename).read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def _float(row: dict[str, str], key: str, filename: str) -> float | None:
    text = row[key].strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        msg = f"{filename}: row {row['id']!r}, column {key!r}: {text!r} is not a number"
        raise CatalogError(msg) from None


def _int(row: dict[str, str], key: str, filename: str, default: int = 0) -> int:
    value = _float(row, key, filename)
    return default if value is None else int(value)


def _aliases(text: str) -> tuple[str, ...]:
    return tuple(alias.strip() for alias in text.split(";") if alias.strip())


def _hardware(row: dict[str, str]) -> Hardware:
    name = "hardware.csv"
    peaks = {}
    for dtype in COMPUTE_DTYPES:
        value = _float(row, f"peak_flops_{dtype}", name)
        if value is not None:
            peaks[dtype] = value
    return Hardware(
        id=row["id"],
        name=row["name"],
        vendor=row["vendor"],
        memory=_float(row, "memory", name) or 0.0,
        bandwidth=_float(row, "bandwidth", name) or 0.0,
        peak_flops=peaks,
        memory_basis=row["memory_basis"],
        cache_bytes=_float(row, "cache_bytes", name),
        price_per_hour=_float(row, "price_per_hour", name),
        aliases=_aliases(row["aliases"]),
        source=row["source"],
        notes=row["notes"],
    )


def _model(row: dict[str, str]) -> Model:
    name = "models.csv"
    return Model(
        id=row["id"],
        params=_float(row, "params", name) or 0.0,
        active_params=_float(row, "active_params", name) or 0.0,
        layers=_int(row, "layers", name),
        heads=_int(row, "heads", name),
        kv_heads=_int(row, "kv_heads", name),
        head_dim=_int(row, "head_dim", name),
        hidden_size=_int(row, "hidden_size", name),
        intermediate_size=_int(row, "intermediate_size", name),
        vocab_size=_int(row, "vocab_size", name),
        attention=row["attention"],
        kv_lora_rank=_int(row, "kv_lora_rank", name),
        qk_rope_head_dim=_int(row, "qk_rope_head_dim", name),
        v_head_dim=_int(row, "v_head_dim", name),
        experts=_int(row, "experts", name, default=1),
        experts_per_token=_int(row, "experts_per_token", name, default=1),
        shared_experts=_int(row, "shared_experts", name),
        moe_intermediate_size=_int(row, "moe_intermediate_size", name),
        sliding_window=_int(row, "sliding_window", name),
        local_layers=_int(row, "local_layers", name),
        max_context=_int(row, "max_context", name),
        tie_word_embeddings=row["tie_word_embeddings"].strip().lower() == "true",
        family=row["family"],
        hf_repo=row["hf_repo"],
        aliases=_aliases(row["aliases"]),
        source=row["source"],
        notes=row["notes"],
    )


def _dtype(row: dict[str, str]) -> DType:
    return DType(
        name=row["name"],
        bits=float(row["bits"]),
        group_size=int(row["group_size"] or 0),
        scale_bytes=float(row["scale_bytes"] or 0),
        compute=row["compute"],
        description=row["description"],
    )


@dataclass(frozen=True)
class Catalog:
    """The shipped specs: hardware and models by id (aliases included), dtypes by name."""

    hardware: Mapping[str, Hardware]
    models: Mapping[str, Model]
    dtypes: Mapping[str, DType]

    def lookup_hardware(self, name: str) -> Hardware:
        """The hardware record for an id or alias; ``CatalogError`` naming the closest id."""
        return _lookup(self.hardware, name, "hardware")

    def lookup_model(self, name: str) -> Model:
        """The model record for an id or alias; ``CatalogError`` naming the closest id."""
        return _lookup(self.models, name, "model")

    def lookup_dtype(self, name: str) -> DType:
        """The dtype record for a name; ``CatalogError`` listing the allowed names."""
        return _lookup(self.dtypes, name, "dtype")


def _lookup(table: Mapping[str, T], name: str, kind: str) -> T:
    try:
        return table[name]
    except KeyError:
        ids = sorted({getattr(record, "id", key) for key, record in table.items()})
        msg = f"unknown {kind} {name!r}; {suggest(name, ids)}"
        raise CatalogError(msg) from None


def suggest(name: str, allowed: list[str]) -> str:
    """A hint for a mistyped name: the closest allowed values, else the list of them."""
    close = [value for value in sorted(allowed) if value.startswith(name) and value != name][:3]
    close += [
        v for v in difflib.get_close_matches(name, allowed, n=3, cutoff=0.6) if v not in close
    ]
    if close:
        quoted = [repr(value) for value in close[:3]]
        return (
            "did you mean "
            + (
                " or ".join(quoted)
                if len(quoted) < 3
                else ", ".join(quoted[:2]) + " or " + quoted[2]
            )
            + "?"
        )
    shown = ", ".join(sorted(allowed)[:40])
    return f"allowed: {shown}"


def _index(records: list[R]) -> Mapping[str, R]:
    table: dict[str, R] = {}
    for record in records:
        for key in (record.id, *record.aliases):
            table[key] = record
    return MappingProxyType(table)


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """Read the shipped catalog once; the records are frozen and shared."""
    return Catalog(
        hardware=_index([_hardware(row) for row in _rows("hardware.csv")]),
        models=_index([_model(row) for row in _rows("models.csv")]),
        dtypes=MappingProxyType({row["name"]: _dtype(row) for row in _rows("dtypes.csv")}),
    )


def unique(table: Mapping[str, R]) -> list[R]:
    """Each record once, in catalog order (the tables also index aliases)."""
    seen: dict[str, R] = {}
    for record in table.values():
        seen.setdefault(record.id, record)
    return list(seen.values())
