"""Speculative drafts: the records of the ``spec_draft`` axis.

A draft is ``ngram`` (prompt lookup: free), ``mtp`` (the target's own multi-token-prediction
heads, one mean layer per draft token) or a draft model (a catalog id or a ``[models.*]``
table, smaller than every target). Imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweeps.catalog import Model
from sweeps.errors import CatalogError

NGRAM, MTP = "ngram", "mtp"
BUILTIN_DRAFTS = (NGRAM, MTP)


@dataclass(frozen=True, slots=True)
class Draft:
    """One value of the ``spec_draft`` axis.

    id : Its label (``ngram``, ``mtp`` or the model's id)
    kind : ``ngram``, ``mtp`` or ``model``
    model : The draft model (``kind == "model"``), else None
    """

    id: str
    kind: str
    model: Model | None = None


Problem = tuple[str, str]
"""A key relative to ``[axes]`` and its message."""


def resolve_drafts(
    names: Sequence[str],
    targets: Sequence[Model],
    custom: Mapping[str, Model],
    catalog: Any,
) -> tuple[tuple[Draft, ...], list[Problem]]:
    """The draft records of ``spec_draft`` (``[models.*]`` tables first, then catalog ids and
    aliases); a draft model must be smaller than every target (fewer parameters)."""
    out: list[Draft] = []
    problems: list[Problem] = []
    for index, name in enumerate(names):
        key = f"spec_draft[{index}]"
        if name in BUILTIN_DRAFTS:
            out.append(Draft(name, name))
            continue
        model = custom.get(name) or catalog.models.get(name)
        if model is None:
            try:
                model = catalog.lookup_model(name)
            except CatalogError as error:
                problems.append((key, f"{error}; or one of {list(BUILTIN_DRAFTS)}"))
                continue
        for target in targets:
            if model.params >= target.params:
                problems.append(
                    (
                        key,
                        f"draft model {name!r} ({model.params:.4g} parameters) is not smaller "
                        f"than the target {target.id!r} ({target.params:.4g}); allowed: a "
                        f"model smaller than every target, or {list(BUILTIN_DRAFTS)}",
                    )
                )
        out.append(Draft(model.id, "model", model))
    return tuple(out), problems


def draft_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[Problem]]:
    """``Study.records`` of the speculative study: the drafts resolved."""
    drafts, problems = resolve_drafts(
        values["spec_draft"], axes["models"], sources["models"], sources["catalog"]
    )
    return {"spec_draft": drafts}, problems
