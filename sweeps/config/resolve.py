"""Turn a config file into a ``Sweep``: validated once, every name resolved to a record.

All mistakes found are reported together in one ``ConfigError``, each line naming the file, the
key path, the value and what is allowed: when the schema rejects some keys, the rest of the file
is still validated and cross-checked. Every check is linear in the size of the config, and every
range is capped (``limits.MAX_AXIS_VALUES``) before it is expanded; the grids' size against
``limits.MAX_POINTS`` is the engine's check (``sweeps.grid.memory.check_points``), made by the
plan and by ``build_grid`` before any work.
"""

from __future__ import annotations

import copy
import tomllib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from sweeps.catalog import Catalog, Model, load_catalog
from sweeps.config import schema
from sweeps.config.custom import custom_dtype, custom_hardware
from sweeps.config.messages import Problems, describe, error_loc, toml_error
from sweeps.config.sizes import custom_models
from sweeps.config.sweep import NATIVE, Sweep, prompt_lengths
from sweeps.errors import CatalogError, ConfigError
from sweeps.files import read_text
from sweeps.limits import structure_problem
from sweeps.studies import STUDIES

T = TypeVar("T")

_BROKEN = "0.invalid-name.sweeps"
"""Stands in for a name the schema rejected, so that later checks keep their indices (itself
a valid name, so the schema's second look at the file passes it)."""

_NAME_AXES = ("model", "hardware", "kv_dtype", "weight_dtype")
_CUSTOM = ("models", "hardware", "dtypes")


def _prune(raw: dict[str, Any], errors: Sequence[Any]) -> tuple[dict[str, Any], set[str]]:
    """``raw`` without the keys the schema rejected, and the names of the broken tables."""
    pruned, broken = copy.deepcopy(raw), set()
    done: set[tuple[Any, ...]] = set()  # keys already dropped whole: their other errors are moot
    for error in errors:
        if tuple(error["loc"][:2]) in done:
            continue
        loc = error_loc(error)
        top = str(loc[0]) if loc else ""
        table = pruned.get(top)
        if not (loc[:1] == ("axes",) and loc[1:2] and loc[1] in _NAME_AXES):
            done.add(tuple(error["loc"][:2]))
        if len(loc) < 2 or not isinstance(table, dict):
            pruned.pop(top, None)
        elif loc[0] in _CUSTOM:
            table.pop(loc[1], None)
            broken.add(str(loc[1]))
        elif loc[:2] == ("sweep", "name"):
            table["name"] = "invalid"
        elif loc[0] == "axes" and loc[1] in _NAME_AXES and len(loc) > 2:
            values = table.get(loc[1])
            if isinstance(values, list) and isinstance(loc[2], int) and loc[2] < len(values):
                values[loc[2]] = _BROKEN
                broken.add(_BROKEN)
            else:
                table.pop(loc[1], None)
        else:
            table.pop(loc[1], None)
    return pruned, broken


def _validate(raw: dict[str, Any], problems: Problems) -> tuple[schema.ConfigFile | None, set[str]]:
    """The schema's view of ``raw``: every error recorded; the rest of the file still checked."""
    try:
        return schema.ConfigFile.model_validate(raw), set()
    except ValidationError as error:
        errors = error.errors(include_url=False)
    for e in errors:
        if problems.full:  # counted, not described: a million mistakes cost no more than fifty
            problems.dropped += 1
        else:
            problems.add_line(describe(e))
    pruned, broken = _prune(raw, errors)
    try:
        return schema.ConfigFile.model_validate(pruned), broken
    except ValidationError:  # a required table itself is wrong: the errors above say why
        return None, broken


def _charts(outputs: Any, model: Any, families: Mapping[str, Any]) -> tuple[str, ...]:
    """``[outputs] charts``, and where the file leaves it to its default and the model axis
    names a family table, the kinds that answer a family's question (``family_charts``)."""
    from sweeps.outputs import family_charts

    charts = list(outputs.charts)
    if "charts" not in outputs.model_fields_set and any(families.get(m) for m in model):
        charts += family_charts()
    return tuple(dict.fromkeys(charts))


def _resolve_names(
    names: list[str],
    key: str,
    custom: Mapping[str, T | tuple[T, ...]],
    catalog: Mapping[str, T],
    lookup: Callable[[str], T],
    problems: Problems,
    skip: set[str],
) -> tuple[T, ...]:
    """Records of ``names`` (``custom`` tables first, then ``catalog`` ids and aliases, whose
    ``lookup`` writes the message of an unknown name); an id and its alias are duplicates."""
    out: list[T] = []
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in skip:  # a broken custom table or name: already reported
            continue
        given = custom.get(name)
        records = given if isinstance(given, tuple) else (given or catalog.get(name),)
        for record in records:  # a family table: its models, by ascending size
            if record is None:
                try:
                    if not problems.full:  # compose the message only while it can be shown
                        lookup(name)
                    problems.add(f"{key}[{index}]", f"unknown {name!r}")
                except CatalogError as error:
                    problems.add(f"{key}[{index}]", str(error))
                continue
            ident = str(getattr(record, "id", None) or getattr(record, "name", name))
            if ident in first:
                same = "" if names[first[ident]] == name else f" (the same as {ident!r})"
                problems.add(
                    f"{key}[{index}]",
                    f"duplicate value {name!r}{same}, first at {key}[{first[ident]}]; "
                    "give each once",
                )
                continue
            first[ident] = index
            out.append(record)
    return tuple(out)


def _axis_values(value: Any, key: str, problems: Problems) -> tuple[Any, ...]:
    values = value.values() if isinstance(value, schema.AxisRange) else list(value)
    counts = Counter(values)
    if len(counts) < len(values):
        duplicates = sorted(v for v, n in counts.items() if n > 1)
        listed = f"{duplicates[:10]}" + (
            f" and {len(duplicates) - 10} more" if duplicates[10:] else ""
        )
        problems.add(key, f"duplicate values {listed}; give each value once")
    return tuple(values)


def _named(ids: list[str]) -> str:
    """``model 'a'``, ``models 'a' and 'b'`` or ``models 'a', 'b' and 3 more``."""
    if len(ids) == 1:
        return f"model {ids[0]!r}"
    head = ", ".join(map(repr, ids[:-1] if len(ids) <= 3 else ids[:2]))
    tail = repr(ids[-1]) if len(ids) <= 3 else f"{len(ids) - 2} more"
    return f"models {head} and {tail}"


def _kv_heads(
    values: list[str | int], models: Sequence[Any], problems: Problems
) -> tuple[str, ...]:
    """The KV-head labels; each count must divide the heads of every model (none is MLA).

    Models are grouped by head count, so the check costs distinct values x distinct counts.
    """
    groups: dict[int | None, list[str]] = {}
    for model in models:
        groups.setdefault(None if model.is_mla else model.heads, []).append(model.id)
    labels: dict[str, None] = {}
    for index, value in enumerate(values):
        key = f"axes.kv_heads[{index}]"
        label = str(value)
        if label in labels:
            problems.add(key, f"duplicate value {value!r}; give each value once")
            continue
        labels[label] = None
        if value == NATIVE:
            continue
        for heads, ids in groups.items():
            if heads is None:
                problems.add(
                    key,
                    f"{value} cannot apply to MLA {_named(ids)}, whose cache "
                    "is one latent per layer; allowed: 'native'",
                )
            elif heads % int(value):
                divisors = [d for d in range(1, heads + 1) if heads % d == 0]
                problems.add(
                    key,
                    f"{value} does not divide the {heads} query heads of "
                    f"{_named(ids)}; allowed: 'native', {divisors}",
                )
    return tuple(labels)


def _check_compute(
    compute: str, hardware: Sequence[Any], problems: Problems, key: str = "options.compute_dtype"
) -> None:
    """An explicit compute dtype (the schema knows it) must have a peak on every device."""
    if compute in (schema.AUTO, "gemm"):
        return
    for device in hardware:
        if compute not in device.peak_flops:
            problems.add(
                key,
                f"{compute!r} has no peak on hardware {device.id!r}; "
                f"allowed there: {sorted(device.peak_flops)} or 'auto'",
            )


def _studies(
    config: schema.ConfigFile,
    axes: Mapping[str, Sequence[Any]],
    sources: Mapping[str, Any],
    problems: Problems,
) -> dict[str, Any]:
    """The ``Sweep`` fields of the studies the config turns on (``sweeps.studies.STUDIES``):
    each one's axes expanded (defaults for those left out), their labels made records, its
    cross-checks against ``axes`` (the resolved axes by field), its settings under
    ``studies``."""
    fields: dict[str, Any] = {}
    studies: dict[str, Any] = {}
    for study in STUDIES:
        table = getattr(config, study.table, None)
        if not study.present(table):
            continue
        for key, message in study.check(table, axes) if study.check else ():
            problems.add(f"{study.table}.{key}", message)
        values = {
            dim: _axis_values(study.given(table, dim), f"{study.table}.{dim}", problems)
            for dim in study.axes
        }
        if study.records is not None:
            records, found = study.records(values, axes, sources)
            values.update(records)
            for key, message in found:  # "/table.key": a key of another table
                problems.add(key[1:] if key[:1] == "/" else f"{study.table}.{key}", message)
        fields.update(values)  # a study's axis is its key: the Sweep's field of that name
        studies[study.name] = study.resolve(table)
    return {"study_axes": fields, "studies": studies}


def _check_figures(
    figures: schema.Figures, tp: tuple[int, ...], weights: tuple[str, ...], problems: Problems
) -> None:
    """``outputs.figures.tp`` / ``.weight_dtype`` must be on their axes."""
    for key, value, axis in (
        ("tp", figures.tp, tp),
        ("weight_dtype", figures.weight_dtype, weights),
    ):
        if value is not None and value not in axis:
            problems.add(
                f"outputs.figures.{key}", f"{value!r} is not on axes.{key}; allowed: {list(axis)}"
            )


def _resolve(
    config: schema.ConfigFile,
    broken: set[str],
    path: str,
    text: str,
    catalog: Catalog,
    problems: Problems,
) -> Sweep:
    # long: one Sweep field after another, each resolved where its inputs are at hand
    base = Path(path).parent
    models, families = custom_models(config.models, catalog, problems, base)
    devices = {n: custom_hardware(n, t) for n, t in config.hardware.items()}
    dtypes = {n: custom_dtype(n, t) for n, t in config.dtypes.items()}
    a = config.axes

    def names(
        axis: str, custom: dict[str, T], table: Mapping[str, T], lookup: Callable[[str], T]
    ) -> tuple[T, ...]:
        values = getattr(a, axis)
        return _resolve_names(values, f"axes.{axis}", custom, table, lookup, problems, broken)

    named: dict[str, Model | tuple[Model, ...]] = {**models, **families}
    skip = broken | {n for n, m in families.items() if not m}  # reported
    model_records = _resolve_names(
        a.model, "axes.model", named, catalog.models, catalog.lookup_model, problems, skip
    )
    hardware = names("hardware", devices, catalog.hardware, catalog.lookup_hardware)
    context = _axis_values(a.context, "axes.context", problems)
    batch = _axis_values(a.batch, "axes.batch", problems)
    _check_compute(config.options.compute_dtype, hardware, problems)
    _check_compute(config.options.attention_dtype, hardware, problems, "options.attention_dtype")
    outputs = config.outputs
    tp = _axis_values(a.tp, "axes.tp", problems)
    weight_dtype = names("weight_dtype", dtypes, catalog.dtypes, catalog.lookup_dtype)
    _check_figures(outputs.figures, tp, tuple(d.name for d in weight_dtype), problems)
    resolved = {"batch": batch, "context": context, "tp": tp, "models": model_records}
    resolved["hardware"] = hardware  # what the studies check their axes against
    return Sweep(
        name=config.sweep.name,
        title=config.sweep.title or config.sweep.name,
        models=model_records,
        hardware=hardware,
        batch=batch,
        context=context,
        prompt=prompt_lengths(
            None if a.prompt is None else _axis_values(a.prompt, "axes.prompt", problems), context
        ),
        kv_heads=_kv_heads(list(a.kv_heads), model_records, problems),
        kv_dtype=names("kv_dtype", dtypes, catalog.dtypes, catalog.lookup_dtype),
        weight_dtype=weight_dtype,
        tp=tp,
        options=config.options,
        charts=_charts(outputs, a.model, families),
        formats=tuple(dict.fromkeys(outputs.formats)),
        grid_format=outputs.grid,
        layout=outputs.layout,
        duckdb=outputs.duckdb,
        path=path,
        text=text,
        figures=outputs.figures,
        charts_named="charts" in outputs.model_fields_set,
        **_studies(
            config,
            {
                "batch": batch,
                "context": context,
                "tp": tp,
                "models": model_records,
                "hardware": hardware,
            },
            {"models": models, "catalog": catalog, "config": config, "path": path},
            problems,
        ),
    )


def parse_config(text: str, path: str = "<config>", catalog: Catalog | None = None) -> Sweep:
    """Validate config ``text`` (TOML) and resolve it.

    Parameters
    ----------
    text
        The config file's text.
    path
        Its name in error messages (and the folder its relative paths are read from).
    catalog
        The catalog its ids resolve against (default: the shipped one).

    Returns
    -------
    Sweep
        The validated sweep.

    Raises
    ------
    ConfigError
        On any mistake of the text, each named with its key, value and what is allowed.
    """
    structure = structure_problem(text)  # before the TOML reader, whose cost it bounds
    if structure is not None:
        msg = f"{path}: {structure}"
        raise ConfigError(msg)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise toml_error(path, text, error) from None
    except RecursionError:
        msg = f"{path}: not valid TOML: arrays or tables nested too deeply"
        raise ConfigError(msg) from None
    problems = Problems()
    config, broken = _validate(raw, problems)
    if config is None:  # a required table is wrong: the schema's problems are all there is
        raise problems.error(path)
    sweep = _resolve(config, broken, path, text, catalog or load_catalog(), problems)
    problems.raise_if_any(path)
    return sweep


def load_config(path: str | Path) -> Sweep:
    """Read, validate and resolve the config file at ``path``.

    Parameters
    ----------
    path
        A TOML config file (``configs/*.toml``); its relative ``config = "..."`` paths are
        read from its folder.

    Returns
    -------
    Sweep
        The validated sweep.

    Raises
    ------
    ConfigError
        On any mistake of the file, each named with its key, value and what is allowed.
    """
    return parse_config(read_text(path, ConfigError, "config"), str(path))
