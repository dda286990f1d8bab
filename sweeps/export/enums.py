"""The Enum of each name axis and label column, declared once: catalog ids, number formats,
serving modes, or a sweep's own labels; and ISO date labels as Dates."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import polars as pl

from sweeps.axes import AXIS

FORMATS = "formats"
"""The domain of a number format's name (``kv_dtype``, ``weight_dtype``, ``compute_dtype``)."""


@functools.cache
def _domain(domain: str) -> tuple[str, ...]:
    """Every label a name axis of ``domain`` (``_DOMAINS``) can hold: catalog ids, the number
    formats or the serving modes; () for an axis whose labels are the sweep's own."""
    from sweeps.catalog.loader import load_catalog, unique
    from sweeps.schedulers import POOL_MODES, SERVING_MODES

    catalog = load_catalog()
    if domain == "models":
        return tuple(sorted(m.id for m in unique(catalog.models)))
    if domain == "hardware":
        return tuple(sorted(h.id for h in unique(catalog.hardware)))
    if domain == "mode":
        return tuple(SERVING_MODES)
    if domain == "pool_mode":
        return tuple(POOL_MODES)
    if domain == FORMATS:
        return tuple(catalog.dtypes)
    return ()


def _axis_domain(dim: str) -> str:
    """The domain of the name axis ``dim``: its ``Axis.field`` for catalog records and number
    formats, its own dim for the serving modes (both come from ``studies``), else its dim."""
    field = AXIS[dim].field
    if field in ("models", "hardware"):
        return field
    if field in ("kv_dtype", "weight_dtype"):
        return FORMATS
    return dim


@functools.cache
def _shared(domain: str, extra: tuple[str, ...]) -> pl.Enum:
    known = _domain(domain)
    return pl.Enum([*known, *(label for label in extra if label not in known)])


def shared_enum(dim: str, labels: Sequence[str]) -> pl.Enum:
    """The Enum of the name axis ``dim``: every label of its kind (catalog ids sorted, number
    formats, serving modes: ``_domain``), then the sweep's own ``labels`` that are none
    (``[models.NAME]`` tables), in their order. An axis of no such kind (``spec_draft``,
    ``kv_tier``, ``dp_attention``) has the sweep's labels only.

    Every study's tables share it, so two studies' tables concatenate in Polars as they are
    (where both name only catalog ids; a custom table's name makes its study's Enum longer).
    """
    return _shared(_axis_domain(dim), tuple(str(label) for label in labels))


def format_enum(labels: Sequence[str] = ()) -> pl.Enum:
    """The Enum of a number format's name (``compute_dtype``): the catalog's formats, then any
    of ``labels`` that is none."""
    return _shared(FORMATS, tuple(labels))


def dates(labels: pl.Series) -> pl.Series:
    """ISO date labels as a Date column, null where there is none (``''`` or null)."""
    return labels.replace("", None).str.to_date("%Y-%m-%d")
