"""Config files: the TOML schema, validation at the boundary, names resolved to records."""

from sweeps.config.resolve import NATIVE, Options, Sweep, key_path, load_config, parse_config

__all__ = ["NATIVE", "Options", "Sweep", "key_path", "load_config", "parse_config"]
