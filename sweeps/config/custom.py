"""A config's own ``[models.*]``, ``[hardware.*]`` and ``[dtypes.*]`` tables as catalog records.

A model table may name a Hugging Face ``config.json`` (``config = "..."``, relative to the
config file): it is read bounded, imported, and every value it brings is held to the same
schema bounds as a value written in the table. Problems are added to the caller's
``Problems``; a record is still returned (with placeholders) so that later checks can run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sweeps.catalog import TABLE_FIELDS, DType, Hardware, Model
from sweeps.config import schema
from sweeps.config.messages import Problems, describe
from sweeps.errors import ImportModelError

MODEL_FIELDS: tuple[str, ...] = tuple(
    dict.fromkeys((*TABLE_FIELDS, "vocab_size", "tie_word_embeddings"))
)
"""``Model`` fields a ``[models.*]`` table sets: the catalog's ``TABLE_FIELDS`` and the
vocabulary fields, until the catalog lists those too (then this is ``TABLE_FIELDS``)."""

SHAPE_KEYS = ("params", "layers", "heads", "kv_heads", "head_dim")
"""Keys a ``[models.*]`` table needs unless ``config`` names a config.json to read them from."""


def _read_json(key: str, given: str, path: Path, problems: Problems) -> dict[str, Any] | None:
    """The JSON object in ``path`` (``given`` as written in the table), or None with the
    problem noted under ``<key>.config`` (``sweeps.catalog.hf.read_config`` reads it)."""
    from sweeps.catalog.hf import read_config

    try:
        return read_config(path)
    except ImportModelError as error:
        problems.add(f"{key}.config", f"{given!r}: {error}")
        return None


def _imported(name: str, table: schema.ModelTable, base: Path, problems: Problems) -> Model | None:
    """The record of the table's ``config = "..."`` file (relative to ``base``), or None."""
    from sweeps.catalog.hf import model_from_config

    key, file = f"models.{name}", Path(str(table.config))
    path = file if file.is_absolute() else base / file
    data = _read_json(key, str(table.config), path, problems)
    if data is None:
        return None
    try:
        model = model_from_config(data, name, str(path))
    except (ImportModelError, OverflowError, RecursionError) as error:
        problems.add(f"{key}.config", f"{table.config!r}: {str(error)[:300]}")
        return None
    values = {field: getattr(model, field) for field in MODEL_FIELDS}
    try:  # the imported shapes meet the bounds of the table's own keys
        schema.ModelTable.model_validate(values)
    except ValidationError as error:
        for line in dict.fromkeys(describe(e) for e in error.errors()):
            problems.add(f"{key}.config", f"{table.config!r} gives {line}")
        return None
    return model


def _values(
    name: str, table: schema.ModelTable, imported: Model | None, problems: Problems
) -> dict[str, Any]:
    """The table's fields merged over the imported ones; placeholders where one is missing."""
    given = table.model_fields_set - {"config"}
    if imported is not None:
        values = {field: getattr(imported, field) for field in MODEL_FIELDS}
        values.update({field: getattr(table, field) for field in given})
        return values
    values = {field: getattr(table, field) for field in MODEL_FIELDS}
    for field in SHAPE_KEYS:
        if values[field] is None:
            if table.config is None:
                problems.add(
                    f"models.{name}.{field}",
                    "required key is missing "
                    '(or give config = "path/to/config.json" to read the shapes)',
                )
            values[field] = 1  # placeholder: the problem is reported
    values["active_params"] = table.active_params or values["params"]
    return values


def _check(key: str, v: dict[str, Any], problems: Problems) -> None:
    mla = v["attention"] == "mla" or (v["attention"] is None and v["kv_lora_rank"] > 0)
    if not mla and v["heads"] % v["kv_heads"]:
        problems.add(f"{key}.kv_heads", f"{v['kv_heads']} does not divide heads = {v['heads']}")
    if v["active_params"] > v["params"]:
        problems.add(
            f"{key}.active_params", f"{v['active_params']!r} exceeds params = {v['params']!r}"
        )
    _check_embedding(key, v, problems)
    if v["experts_per_token"] > v["experts"]:
        problems.add(
            f"{key}.experts_per_token",
            f"{v['experts_per_token']} exceeds experts = {v['experts']}",
        )
    if v["local_layers"] > v["layers"]:
        problems.add(f"{key}.local_layers", f"{v['local_layers']} exceeds layers = {v['layers']}")
    if v["local_layers"] and not v["sliding_window"]:
        problems.add(f"{key}.sliding_window", "local_layers needs a sliding_window > 0")


def _check_embedding(key: str, v: dict[str, Any], problems: Problems) -> None:
    """The embedding must be a part of the parameters: the FLOPs count ``active_params -
    embedding`` (a larger embedding gave negative FLOPs, step times and ceilings)."""
    from sweeps.physics import embedding_params

    width = v["hidden_size"] or v["heads"] * v["head_dim"]
    tied = bool(v["tie_word_embeddings"])
    embedding = int(embedding_params(v["vocab_size"], width, tied))
    active = float(v["active_params"] or v["params"])
    if embedding and embedding >= active:
        per_token = width * (1 if tied else 2)
        problems.add(
            f"{key}.vocab_size",
            f"the embedding ({v['vocab_size']:,} x {width:,}{'' if tied else ' x 2'} = "
            f"{embedding:,} parameters) is not less than active_params = {active:,.0f}; "
            f"allowed: vocab_size below {int(active // per_token):,}, or more parameters",
        )


def _attention(table: schema.ModelTable, imported: Model | None, v: dict[str, Any]) -> str:
    """The attention kind: as given, else the imported one, else inferred from the shapes."""
    given = table.model_fields_set
    if "attention" in given and table.attention:
        return str(table.attention)
    reshaped = given & {"kv_lora_rank", "kv_heads", "heads", "local_layers", "sliding_window"}
    if imported is not None and not reshaped:
        return imported.attention
    if v["kv_lora_rank"]:
        return "mla"
    if imported is not None and v["local_layers"] and v["sliding_window"]:
        return "gqa+sliding"
    heads, kv_heads = v["heads"], v["kv_heads"]
    return "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"


def custom_model(
    name: str, table: schema.ModelTable, problems: Problems, base: Path = Path()
) -> Model:
    """The ``Model`` of ``[models.<name>]`` (``base``: the folder ``config`` paths start from)."""
    key = f"models.{name}"
    imported = _imported(name, table, base, problems) if table.config else None
    values = _values(name, table, imported, problems)
    _check(key, values, problems)
    attention = _attention(table, imported, values)
    if attention == "mla" and not values["kv_lora_rank"]:
        problems.add(f"{key}.kv_lora_rank", "an MLA model needs kv_lora_rank > 0")
    values.update(
        id=name,
        attention=attention,
        params=float(values["params"]),
        active_params=float(values["active_params"]),
        v_head_dim=values["v_head_dim"] or (values["kv_lora_rank"] and values["head_dim"]),
    )
    if imported is not None:
        return replace(imported, **values)  # keeps shared experts, family, notes, ...
    return Model(**values)


_HARDWARE_FIELDS = {f.name for f in dataclasses.fields(Hardware)}


def custom_hardware(name: str, table: schema.HardwareTable) -> Hardware:
    """The ``Hardware`` of ``[hardware.<name>]``: every key of the table that is a field of
    the record, as given (a new ``Hardware`` field is one schema key away from custom tables)."""
    given = {
        key: getattr(table, key) for key in type(table).model_fields if key in _HARDWARE_FIELDS
    }
    given["peak_flops"] = {k: v for k, v in table.peak_flops.model_dump().items() if v is not None}
    given["name"] = table.name or name
    return Hardware(id=name, memory_basis="bytes, as given in the config", **given)


def custom_dtype(name: str, table: schema.DTypeTable) -> DType:
    """The ``DType`` of ``[dtypes.<name>]``."""
    return DType(
        name=name,
        bits=table.bits,
        group_size=table.group_size,
        scale_bytes=table.scale_bytes,
        compute=table.compute,
        description=table.description,
    )
