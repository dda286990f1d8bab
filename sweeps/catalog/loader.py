"""Load the catalog's CSV files into frozen records, and look ids up with helpful errors."""

from __future__ import annotations

import csv
import dataclasses
import datetime
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Protocol, TypeVar, get_args, get_origin, get_type_hints

from sweeps.catalog.records import COMPUTE_DTYPES, DType, Hardware, Model
from sweeps.errors import CatalogError

T = TypeVar("T")


class _Record(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...


R = TypeVar("R", bound=_Record)
D = TypeVar("D", Hardware, Model, DType)


def _rows(filename: str) -> list[dict[str, str]]:
    text = resources.files("sweeps.catalog").joinpath("data", filename).read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def _key(row: dict[str, str]) -> str:
    return row.get("id") or row.get("name") or "?"


def _number(text: str, row: dict[str, str], key: str, filename: str) -> float:
    try:
        return float(text)
    except ValueError:
        msg = f"{filename}: row {_key(row)!r}, column {key!r}: {text!r} is not a number"
        raise CatalogError(msg) from None


def _cell(row: dict[str, str], spec: dataclasses.Field[Any], kind: Any, filename: str) -> Any:
    """One CSV cell as the field's annotated type; the field's default where it is empty."""
    text = row[spec.name].strip()
    has_default = spec.default is not dataclasses.MISSING
    optional = type(None) in get_args(kind)
    if not text and (has_default or optional):
        return spec.default if has_default else None
    base = next(arg for arg in get_args(kind) if arg is not type(None)) if optional else kind
    if base is str:
        return row[spec.name]
    if not text:
        msg = f"{filename}: row {_key(row)!r}, column {spec.name!r} is empty; it is required"
        raise CatalogError(msg)
    if base is bool:
        if text.lower() not in ("true", "false"):
            msg = f"{filename}: row {_key(row)!r}, column {spec.name!r}: {text!r} is not true/false"
            raise CatalogError(msg)
        return text.lower() == "true"
    if base is datetime.date:
        try:
            return datetime.date.fromisoformat(text)
        except ValueError:
            msg = f"{filename}: row {_key(row)!r}, column {spec.name!r}: {text!r} is not a date"
            raise CatalogError(msg) from None
    if get_origin(base) is tuple:
        return tuple(alias.strip() for alias in text.split(";") if alias.strip())
    value = _number(text, row, spec.name, filename)
    return int(value) if base is int else value


def _record(cls: type[D], row: dict[str, str], filename: str, **given: Any) -> D:
    """A record of ``cls`` from one CSV row: each dataclass field from the column of its name,
    read as its annotated type (``given`` fields are supplied by the caller)."""
    hints = get_type_hints(cls)
    values = dict(given)
    for spec in dataclasses.fields(cls):
        if spec.name in given:
            continue
        if spec.name not in row:
            if spec.default is dataclasses.MISSING:
                msg = f"{filename}: column {spec.name!r} is missing"
                raise CatalogError(msg)
            continue
        values[spec.name] = _cell(row, spec, hints[spec.name], filename)
    return cls(**values)


def csv_columns(cls: type[Hardware | Model | DType]) -> list[str]:
    """The columns of a catalog CSV file of ``cls`` records: one per field, in field order,
    ``peak_flops`` spread over ``peak_flops_<dtype>`` for each compute dtype."""
    columns = []
    for spec in dataclasses.fields(cls):
        if spec.name == "peak_flops":
            columns += [f"peak_flops_{dtype}" for dtype in COMPUTE_DTYPES]
        else:
            columns.append(spec.name)
    return columns


def _hardware(row: dict[str, str]) -> Hardware:
    """A device row; its ``peak_flops_<dtype>`` columns make up ``peak_flops``."""
    name = "hardware.csv"
    peaks = {
        dtype: _number(row[f"peak_flops_{dtype}"], row, f"peak_flops_{dtype}", name)
        for dtype in COMPUTE_DTYPES
        if row[f"peak_flops_{dtype}"].strip()
    }
    return _record(Hardware, row, name, peak_flops=peaks)


def _model(row: dict[str, str]) -> Model:
    return _record(Model, row, "models.csv")


def _dtype(row: dict[str, str]) -> DType:
    return _record(DType, row, "dtypes.csv")


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
