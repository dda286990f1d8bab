"""Hardware, model and dtype specs as data files with sources, loaded into frozen records."""

from sweeps.catalog.loader import Catalog, load_catalog, suggest, unique
from sweeps.catalog.records import (
    ATTENTION_KINDS,
    COMPUTE_DTYPES,
    HARDWARE_SPECS,
    MODEL_SPECS,
    TABLE_FIELDS,
    DType,
    Hardware,
    Model,
    Spec,
)

__all__ = [
    "ATTENTION_KINDS",
    "COMPUTE_DTYPES",
    "HARDWARE_SPECS",
    "MODEL_SPECS",
    "TABLE_FIELDS",
    "Catalog",
    "DType",
    "Hardware",
    "Model",
    "Spec",
    "load_catalog",
    "suggest",
    "unique",
]
