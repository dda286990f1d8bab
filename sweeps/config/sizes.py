"""A config's family tables (``[models.*]`` with ``base``) expanded into their models.

Each size becomes one model, ``<table>-<size>`` (``llama-sizes-70b``), shaped by the family's
rule (``sweeps.catalog.family``); the table's name on the model axis stands for all of them,
in ascending size. Problems are added to the caller's ``Problems``, each naming the key, the
value and what is allowed; a table with one is left out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from sweeps.catalog import Catalog, Model
from sweeps.catalog.family import (
    FAMILIES,
    Family,
    family_of,
    members_of,
    scaled_model,
    size_label,
    size_range,
)
from sweeps.config.custom import custom_model
from sweeps.config.family_schema import FamilyTable, ParamsRange
from sweeps.config.messages import Problems
from sweeps.errors import CatalogError
from sweeps.limits import name_problem


def _bases(catalog: Catalog) -> list[str]:
    """The catalog ids a family table may name as ``base``."""
    return sorted(i for i, m in catalog.models.items() if i == m.id and family_of(m))


def _base(
    name: str,
    table: FamilyTable,
    catalog: Catalog,
    problems: Problems,
    tables: Collection[str] = (),
) -> tuple[Model, Family] | None:
    """The catalog model ``base`` names and its family, or None (reported); ``tables``: the
    config's ``[models.*]`` names, so a base naming one of them is told what it is."""
    key = f"models.{name}.base"
    if table.base in tables and table.base not in catalog.models:
        problems.add(
            key,
            f"{table.base!r} is this config's own [models.{table.base}] table; a family "
            "scales a catalog model of a family with a scaling rule, allowed bases: "
            f"{_bases(catalog)}",
        )
        return None
    try:
        model = catalog.lookup_model(table.base)
    except CatalogError as error:
        problems.add(key, str(error))
        return None
    family = family_of(model)
    if family is None:
        families = ", ".join(f.name for f in FAMILIES.values())
        problems.add(
            key,
            f"{table.base!r} is of no family with a scaling rule ({model.family or 'none'}); "
            f"the families are {families}, allowed bases: {_bases(catalog)}",
        )
        return None
    return model, family


def _size_key(name: str, table: FamilyTable, index: int) -> str:
    if isinstance(table.params, ParamsRange):
        return f"models.{name}.params.{'start' if index == 0 else 'stop'}"
    return f"models.{name}.params[{index}]"


def family_models(
    name: str,
    table: FamilyTable,
    catalog: Catalog,
    problems: Problems,
    tables: Collection[str] = (),
) -> tuple[Model, ...]:
    """The models of the family table ``[models.<name>]``, by ascending size; () where it has
    a problem (reported); ``tables``: the config's ``[models.*]`` names."""
    found = _base(name, table, catalog, problems, tables)
    if found is None:
        return ()
    base, family = found
    problem = name_problem(f"{name}-{size_label(max(table.sizes()))}")
    if problem is not None:
        problems.add(f"models.{name}", f"its models' ids ({name}-<size>): {problem}")
        return ()
    members = members_of(family, catalog.models)
    low, high = size_range(family, members)
    sizes = table.sizes()
    bad = False
    for index, size in enumerate(sizes):
        if not low <= size <= high:
            ranged = isinstance(table.params, ParamsRange)
            problems.add(
                _size_key(name, table, index),
                f"{'gives ' if ranged else ''}{size:.4g}, outside the {family.name} "
                f"family's range: allowed {low:.4g} to {high:.4g} (its members, "
                f"{members[0].params:.4g} to {members[-1].params:.4g} parameters, "
                f"widened {family.reach:g} times)",
            )
            bad = True
            if isinstance(table.params, ParamsRange):
                break
    labels: dict[str, int] = {}
    for index, size in enumerate(sizes):
        label = size_label(size)
        if label in labels:
            problems.add(
                _size_key(name, table, index),
                f"{size:.7g} gives the same id {name}-{label} as "
                f"{sizes[labels[label]]:.7g}; give sizes that differ in three digits",
            )
            bad = True
        labels[label] = index
    if bad:
        return ()
    models = (scaled_model(family, members, s, f"{name}-{size_label(s)}", base) for s in sizes)
    return tuple(sorted(models, key=lambda m: m.params))


def family_ids(
    families: Mapping[str, tuple[Any, ...]], tables: Mapping[str, Any], problems: Problems
) -> dict[str, Any]:
    """The models of the family tables by id; an id that another table also names is a
    problem."""
    out: dict[str, Any] = {}
    for name, members in families.items():
        for model in members:
            if model.id in tables or model.id in families:
                problems.add(
                    f"models.{name}",
                    f"its model {model.id!r} has the name of another [models.*] table; "
                    "rename one of them",
                )
            out[model.id] = model
    return out


def custom_models(
    tables: Mapping[str, Any], catalog: Catalog, problems: Problems, base: Path
) -> tuple[dict[str, Model], dict[str, tuple[Model, ...]]]:
    """The records of a config's ``[models.*]`` tables by id (a family table's models too),
    and each family table's models by its name (``base``: the folder ``config`` paths start
    from)."""
    families = {
        n: family_models(n, t, catalog, problems, tables.keys())
        for n, t in tables.items()
        if isinstance(t, FamilyTable)
    }
    models = {
        n: custom_model(n, t, problems, base)
        for n, t in tables.items()
        if not isinstance(t, FamilyTable)
    }
    models.update(family_ids(families, models, problems))
    return models, families
