"""Hardware, model and dtype specs as data files with sources, loaded into frozen records."""

from sweeps.catalog.loader import COMPUTE_DTYPES, Catalog, load_catalog, suggest, unique
from sweeps.catalog.records import ATTENTION_KINDS, TABLE_FIELDS, DType, Hardware, Model

__all__ = [
    "ATTENTION_KINDS",
    "COMPUTE_DTYPES",
    "TABLE_FIELDS",
    "Catalog",
    "DType",
    "Hardware",
    "Model",
    "load_catalog",
    "suggest",
    "unique",
]
