"""Turn a config file into a ``Sweep``: validated once, every name resolved to a record.

All mistakes found are reported together in one ``ConfigError``, each line naming the file, the
key path, the value and what is allowed. Nothing downstream re-validates.
"""

from __future__ import annotations

import difflib
import hashlib
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sweeps.catalog import (
    COMPUTE_DTYPES,
    TABLE_FIELDS,
    Catalog,
    DType,
    Hardware,
    Model,
    load_catalog,
    suggest,
)
from sweeps.config import schema
from sweeps.errors import CatalogError, ConfigError, ImportModelError

NATIVE = "native"
T = TypeVar("T")


@dataclass(frozen=True)
class Options:
    """Resolved ``[options]``; see the README's config reference for each key."""

    attention_flops: bool
    memory_reserve: float
    ceiling_fraction: float
    compute_dtype: str
    bandwidth_efficiency: float
    compute_efficiency: float
    activation_bytes: float
    max_chart_cells: int


@dataclass(frozen=True)
class Sweep:
    """One validated sweep: axes as tuples of values or records, options, outputs, provenance."""

    name: str
    title: str
    models: tuple[Model, ...]
    hardware: tuple[Hardware, ...]
    batch: tuple[int, ...]
    context: tuple[int, ...]
    prompt: tuple[int, ...]
    kv_heads: tuple[str, ...]
    kv_dtype: tuple[DType, ...]
    weight_dtype: tuple[DType, ...]
    tp: tuple[int, ...]
    options: Options
    charts: tuple[str, ...]
    formats: tuple[str, ...]
    grid_format: str
    path: str
    text: str
    figures: schema.Figures = field(default_factory=schema.Figures)

    @property
    def sha256(self) -> str:
        """SHA-256 of the config text, as hex."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def decode_points(self) -> int:
        """Points of the decode grid."""
        return _product(
            len(self.models),
            len(self.hardware),
            len(self.tp),
            len(self.batch),
            len(self.context),
            len(self.kv_heads),
            len(self.kv_dtype),
            len(self.weight_dtype),
        )

    @property
    def prefill_points(self) -> int:
        """Points of the prefill grid."""
        return self.decode_points // len(self.context) * len(self.prompt)


def _product(*sizes: int) -> int:
    out = 1
    for size in sizes:
        out *= size
    return out


# --- formatting pydantic's errors -------------------------------------------------------------

_TABLES: dict[tuple[str, ...], type[BaseModel]] = {
    (): schema.ConfigFile,
    ("sweep",): schema.SweepTable,
    ("axes",): schema.Axes,
    ("options",): schema.Options,
    ("outputs",): schema.Outputs,
    ("outputs", "figures"): schema.Figures,
    ("models", "*"): schema.ModelTable,
    ("hardware", "*"): schema.HardwareTable,
    ("hardware", "*", "peak_flops"): schema.PeakFlops,
    ("dtypes", "*"): schema.DTypeTable,
    ("axes", "*"): schema.AxisRange,
}


def _table_for(path: tuple[str, ...]) -> type[BaseModel] | None:
    for pattern, table in _TABLES.items():
        if len(pattern) != len(path):
            continue
        if all(p in ("*", q) for p, q in zip(pattern, path, strict=True)):
            return table
    return None


def key_path(loc: Sequence[str | int]) -> str:
    """``("axes", "batch", 2)`` as ``axes.batch[2]``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(error: Any) -> str:
    loc = tuple(part for part in error["loc"] if not (isinstance(part, str) and part[:1] == "@"))
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        parent = tuple(str(p) for p in loc[:-1])
        table = _table_for(parent)
        allowed = sorted(table.model_fields) if table else []
        hint = suggest(str(loc[-1]), allowed) if allowed else ""
        return f"{key_path(loc)}: unknown key; {hint}".rstrip("; ")
    if kind == "missing":
        return f"{key_path(loc)}: required key is missing"
    if kind == "string_pattern_mismatch":
        return f"{key_path(loc)}: {value!r} is not a valid name; use only a-z, 0-9, '.', '_', '-'"
    if kind == "too_short":
        return f"{key_path(loc)}: the axis is empty; give at least one value"
    message = str(error["msg"])
    if kind == "literal_error":
        message = f"must be one of {error['ctx']['expected']}"
    return f"{key_path(loc)}: {message} (got {value!r})"


# --- cross-checks against the catalog ---------------------------------------------------------


class _Problems:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, key: str, message: str) -> None:
        self.lines.append(f"{key}: {message}")


_SHAPE_KEYS = ("params", "layers", "heads", "kv_heads", "head_dim")
"""Keys a ``[models.*]`` table needs unless ``config`` names a config.json to read them from."""


def _imported_model(
    name: str, table: schema.ModelTable, base: Path, problems: _Problems
) -> Model | None:
    """The record of the table's ``config = "..."`` file (relative to ``base``), or None."""
    from sweeps.catalog.hf_import import load_model

    assert table.config is not None  # the caller checks; not user input
    file = Path(table.config)
    try:
        return load_model(file if file.is_absolute() else base / file, name)
    except ImportModelError as error:
        problems.add(f"models.{name}.config", f"{table.config!r}: {error}")
        return None


def _custom_model(
    name: str, table: schema.ModelTable, problems: _Problems, base: Path = Path()
) -> Model:
    key = f"models.{name}"
    given = table.model_fields_set - {"config"}
    imported = _imported_model(name, table, base, problems) if table.config else None
    if table.config is None:
        for field in _SHAPE_KEYS:
            if getattr(table, field) is None:
                problems.add(
                    f"{key}.{field}",
                    "required key is missing "
                    '(or give config = "path/to/config.json" to read the shapes)',
                )
    values: dict[str, Any] = {}
    if imported is not None:
        values = {field: getattr(imported, field) for field in TABLE_FIELDS}
        # fields given next to config override the file's values
        values.update({field: getattr(table, field) for field in given})
    else:
        values = {field: getattr(table, field) for field in TABLE_FIELDS}
        for field in _SHAPE_KEYS:  # placeholders where a problem was already reported
            values[field] = values[field] or 1
        values["active_params"] = table.active_params or values["params"]
    params, active = float(values["params"]), float(values["active_params"])
    layers, heads = int(values["layers"]), int(values["heads"])
    kv_heads, head_dim = int(values["kv_heads"]), int(values["head_dim"])
    kv_lora_rank = int(values["kv_lora_rank"])
    experts = int(values["experts"])
    experts_per_token = int(values["experts_per_token"])
    sliding_window = int(values["sliding_window"])
    local_layers = int(values["local_layers"])
    mla = values["attention"] == "mla" or (values["attention"] is None and kv_lora_rank > 0)
    if not mla and heads % kv_heads:
        problems.add(f"{key}.kv_heads", f"{kv_heads} does not divide heads = {heads}")
    if active > params:
        problems.add(f"{key}.active_params", f"{active!r} exceeds params = {params!r}")
    if experts_per_token > experts:
        problems.add(f"{key}.experts_per_token", f"{experts_per_token} exceeds experts = {experts}")
    if local_layers > layers:
        problems.add(f"{key}.local_layers", f"{local_layers} exceeds layers = {layers}")
    if local_layers and not sliding_window:
        problems.add(f"{key}.sliding_window", "local_layers needs a sliding_window > 0")
    attention = str(table.attention) if "attention" in given and table.attention else None
    if (
        attention is None
        and imported is not None
        and not given & {"kv_lora_rank", "kv_heads", "heads", "local_layers", "sliding_window"}
    ):
        attention = imported.attention
    if attention is None:
        attention = (
            "mla"
            if kv_lora_rank
            else "gqa+sliding"
            if imported is not None and local_layers and sliding_window
            else "mha"
            if kv_heads == heads
            else "mqa"
            if kv_heads == 1
            else "gqa"
        )
    if attention == "mla" and not kv_lora_rank:
        problems.add(f"{key}.kv_lora_rank", "an MLA model needs kv_lora_rank > 0")
    v_head_dim = int(values["v_head_dim"]) or (kv_lora_rank and head_dim)
    common: dict[str, Any] = {
        "id": name,
        "params": params,
        "active_params": active,
        "layers": layers,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "hidden_size": int(values["hidden_size"]),
        "attention": attention,
        "kv_lora_rank": kv_lora_rank,
        "qk_rope_head_dim": int(values["qk_rope_head_dim"]),
        "v_head_dim": v_head_dim,
        "experts": experts,
        "experts_per_token": experts_per_token,
        "sliding_window": sliding_window,
        "local_layers": local_layers,
        "max_context": int(values["max_context"]),
        "source": str(values["source"]),
    }
    if imported is not None:
        return replace(imported, **common)  # keeps vocab, tie, shared experts, notes, ...
    return Model(**common)


def _custom_hardware(name: str, table: schema.HardwareTable) -> Hardware:
    peaks = {k: v for k, v in table.peak_flops.model_dump().items() if v is not None}
    return Hardware(
        id=name,
        name=table.name or name,
        vendor=table.vendor,
        memory=table.memory,
        bandwidth=table.bandwidth,
        peak_flops=peaks,
        memory_basis="bytes, as given in the config",
        price_per_hour=table.price_per_hour,
        source=table.source,
    )


def _custom_dtype(name: str, table: schema.DTypeTable) -> DType:
    return DType(
        name=name,
        bits=table.bits,
        group_size=table.group_size,
        scale_bytes=table.scale_bytes,
        compute=table.compute,
        description=table.description,
    )


def _resolve_names(
    names: list[str], key: str, custom: dict[str, T], lookup: Any, problems: _Problems
) -> tuple[T, ...]:
    out: list[T] = []
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            problems.add(f"{key}[{index}]", f"duplicate value {name!r}")
            continue
        seen.add(name)
        if name in custom:
            out.append(custom[name])
            continue
        try:
            out.append(lookup(name))
        except CatalogError as error:
            problems.add(f"{key}[{index}]", str(error))
    return tuple(out)


def _int_axis(value: Any, key: str, problems: _Problems) -> tuple[int, ...]:
    values = value.values() if isinstance(value, schema.AxisRange) else list(value)
    duplicates = sorted({v for v in values if values.count(v) > 1})
    if duplicates:
        problems.add(key, f"duplicate values {duplicates}")
    if not values:
        problems.add(key, "the range holds no value")
    return tuple(values)


def _kv_heads(
    values: list[str | int], models: Sequence[Model], problems: _Problems
) -> tuple[str, ...]:
    labels: list[str] = []
    for index, value in enumerate(values):
        key = f"axes.kv_heads[{index}]"
        label = str(value)
        if label in labels:
            problems.add(key, f"duplicate value {value!r}")
            continue
        labels.append(label)
        if value == NATIVE:
            continue
        for model in models:
            if model.is_mla:
                problems.add(
                    key,
                    f"{value} cannot apply to MLA model {model.id!r}, whose cache "
                    "is one latent per layer; allowed: 'native'",
                )
            elif model.heads % int(value):
                divisors = [d for d in range(1, model.heads + 1) if model.heads % d == 0]
                problems.add(
                    key,
                    f"{value} does not divide the {model.heads} query heads of "
                    f"model {model.id!r}; allowed: 'native', {divisors}",
                )
    return tuple(labels)


def parse_config(text: str, path: str = "<config>", catalog: Catalog | None = None) -> Sweep:
    """Validate config ``text`` (TOML) and resolve it; ``path`` names it in error messages."""
    catalog = catalog or load_catalog()
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        msg = f"{path}: not valid TOML: {error}"
        raise ConfigError(msg) from None
    try:
        config = schema.ConfigFile.model_validate(raw)
    except ValidationError as error:
        lines = list(dict.fromkeys(_describe(e) for e in error.errors()))
        msg = "\n".join(f"{path}: {line}" for line in lines)
        raise ConfigError(msg) from None

    problems = _Problems()
    base = Path(path).parent
    custom_models = {n: _custom_model(n, t, problems, base) for n, t in config.models.items()}
    custom_hw = {n: _custom_hardware(n, t) for n, t in config.hardware.items()}
    custom_dtypes = {n: _custom_dtype(n, t) for n, t in config.dtypes.items()}
    axes = config.axes
    models = _resolve_names(axes.model, "axes.model", custom_models, catalog.lookup_model, problems)
    hardware = _resolve_names(
        axes.hardware, "axes.hardware", custom_hw, catalog.lookup_hardware, problems
    )
    kv_dtype = _resolve_names(
        axes.kv_dtype, "axes.kv_dtype", custom_dtypes, catalog.lookup_dtype, problems
    )
    weight_dtype = _resolve_names(
        axes.weight_dtype, "axes.weight_dtype", custom_dtypes, catalog.lookup_dtype, problems
    )
    context = _int_axis(axes.context, "axes.context", problems)
    prompt = _int_axis(axes.prompt, "axes.prompt", problems) if axes.prompt else context
    options = config.options
    compute = options.compute_dtype
    if compute not in COMPUTE_DTYPES:
        close = difflib.get_close_matches(compute, COMPUTE_DTYPES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        problems.add(
            "options.compute_dtype", f"unknown {compute!r}; {hint}allowed: {list(COMPUTE_DTYPES)}"
        )
    else:
        for device in hardware:
            if compute not in device.peak_flops:
                problems.add(
                    "options.compute_dtype",
                    f"{compute!r} has no peak on hardware {device.id!r}; "
                    f"allowed there: {sorted(device.peak_flops)}",
                )
    sweep = Sweep(
        name=config.sweep.name,
        title=config.sweep.title or config.sweep.name,
        models=models,
        hardware=hardware,
        batch=_int_axis(axes.batch, "axes.batch", problems),
        context=context,
        prompt=prompt,
        kv_heads=_kv_heads(list(axes.kv_heads), models, problems),
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        tp=_int_axis(axes.tp, "axes.tp", problems),
        options=Options(**options.model_dump()),
        charts=tuple(dict.fromkeys(config.outputs.charts)),
        formats=tuple(dict.fromkeys(config.outputs.formats)),
        grid_format=config.outputs.grid,
        path=path,
        text=text,
        figures=config.outputs.figures,
    )
    for key, value, axis in (
        ("tp", sweep.figures.tp, sweep.tp),
        ("weight_dtype", sweep.figures.weight_dtype, tuple(d.name for d in weight_dtype)),
    ):
        if value is not None and value not in axis:
            problems.add(
                f"outputs.figures.{key}", f"{value!r} is not on axes.{key}; allowed: {list(axis)}"
            )
    if problems.lines:
        msg = "\n".join(f"{path}: {line}" for line in problems.lines)
        raise ConfigError(msg)
    return sweep


def load_config(path: str | Path) -> Sweep:
    """Read, validate and resolve the config file at ``path``; ``ConfigError`` on any mistake."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        msg = f"{path}: cannot read the config file: {error.strerror or error}"
        raise ConfigError(msg) from None
    except UnicodeDecodeError:
        msg = f"{path}: the config file is not UTF-8 text"
        raise ConfigError(msg) from None
    return parse_config(text, str(path))
