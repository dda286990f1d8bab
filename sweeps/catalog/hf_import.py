"""The Hugging Face importer's former module, kept so that existing imports keep working;
the code lives in ``sweeps.catalog.hf``."""

from sweeps.catalog.hf import (
    FAMILIES,
    NAME_PATTERN,
    Family,
    ParamCount,
    count_parameters,
    default_name,
    load_model,
    model_from_config,
    model_to_toml,
    read_config,
    supported_families,
)

__all__ = [
    "FAMILIES",
    "NAME_PATTERN",
    "Family",
    "ParamCount",
    "count_parameters",
    "default_name",
    "load_model",
    "model_from_config",
    "model_to_toml",
    "read_config",
    "supported_families",
]
