"""Config files: the TOML schema, validation at the boundary, names resolved to records.

``check_name`` (with ``SWEEP_NAME_PATTERN``) is the one rule of a sweep name, for every layer
that turns a name into a folder.
"""

from sweeps.config.messages import key_path
from sweeps.config.resolve import load_config, parse_config
from sweeps.config.sweep import NATIVE, Options, Serving, Sweep, prompt_lengths
from sweeps.limits import SWEEP_NAME_PATTERN, check_name

__all__ = [
    "NATIVE",
    "SWEEP_NAME_PATTERN",
    "Options",
    "Serving",
    "Sweep",
    "check_name",
    "key_path",
    "load_config",
    "parse_config",
    "prompt_lengths",
]
