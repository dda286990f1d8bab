"""A config given as a dict (the tables of a config file, as ``tomllib`` reads one).

It is written back as TOML and read by ``sweeps.config.parse_config``, so a dict is validated
exactly as a file is: the same checks, the same messages with the same key paths.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

from sweeps.config import Sweep, parse_config
from sweeps.errors import ConfigError

SOURCE = "<dict>"
"""How messages name a config given as a dict."""

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: object, where: str) -> str:
    if not isinstance(key, str):
        msg = f"{SOURCE}: {where}: a key is {key!r}; keys are strings"
        raise ConfigError(msg)
    return key if _BARE.fullmatch(key) else json.dumps(key)


def _value(value: object, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return "nan"
        return repr(number) if math.isfinite(number) else ("inf" if number > 0 else "-inf")
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, Mapping):
        items = (f"{_key(k, where)} = {_value(v, f'{where}.{k}')}" for k, v in value.items())
        return "{ " + ", ".join(items) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    msg = (
        f"{SOURCE}: {where}: {value!r} is a {type(value).__name__}; allowed: strings, numbers, "
        "booleans, lists and dicts (what a TOML file can hold)"
    )
    raise ConfigError(msg)


def to_toml(data: Mapping[str, Any]) -> str:
    """``data`` (tables of a config file) as TOML text: one ``[table]`` per top-level key."""
    lines = []
    for name, table in data.items():
        if not isinstance(table, Mapping):
            msg = f"{SOURCE}: {name}: {table!r} is not a table; the top level holds tables"
            raise ConfigError(msg)
        lines.append(f"[{_key(name, name)}]")
        lines += [f"{_key(k, name)} = {_value(v, f'{name}.{k}')}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def sweep_from_mapping(data: Mapping[str, Any]) -> Sweep:
    """The ``Sweep`` of a config given as a dict, validated as a file is."""
    return parse_config(to_toml(data), SOURCE)
