"""Hugging Face ``config.json`` -> ``Model``: parsing of a dict or a file on disk, nothing
fetched from the network.

- ``read``: ``read_config``, ``load_model``, ``model_from_config``, ``count_parameters``,
  ``default_name``;
- ``fields``: typed field access, every message naming the file and the field;
- ``families``: ``FAMILIES``, one ``Family`` per ``model_type`` holding every rule of that
  architecture (``supported_families()`` lists them);
- ``shape``: a config read once into a ``Shape`` through its family's rules;
- ``count``: exact parameter counts from a ``Shape``;
- ``toml``: ``model_to_toml``, a ``[models.<id>]`` table that pastes into a sweep config.

A field the formulas need and the file lacks raises ``ImportModelError`` naming the file and the
field. Defaults are used only where the architecture's own Hugging Face config class has one
that its checkpoints rely on (``Family.defaults``).
"""

from sweeps.catalog.hf.count import ParamCount
from sweeps.catalog.hf.families import FAMILIES, Family, supported_families
from sweeps.catalog.hf.read import (
    NAME_PATTERN,
    count_parameters,
    default_name,
    load_model,
    model_from_config,
    read_config,
)
from sweeps.catalog.hf.toml import model_to_toml

__doc__ = f"{__doc__}\nSupported ``model_type``s: {', '.join(supported_families())}.\n"

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
