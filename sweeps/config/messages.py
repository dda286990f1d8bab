"""Problems of a config as ``file: key: message`` lines: pydantic's errors, TOML syntax errors
with the offending line and a caret, and the cross-checks' own findings, collected and raised
together as one ``ConfigError``."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel

from sweeps.catalog import suggest
from sweeps.config import schema
from sweeps.errors import ConfigError
from sweeps.limits import MAX_PROBLEMS, name_problem
from sweeps.studies import STUDIES

_TABLES: dict[tuple[str, ...], type[BaseModel]] = {
    (): schema.ConfigFile,
    ("sweep",): schema.SweepTable,
    ("axes",): schema.Axes,
    ("options",): schema.Options,
    ("outputs",): schema.Outputs,
    ("outputs", "figures"): schema.Figures,
    ("models", "*"): schema.ModelTable,
    ("hardware", "*"): schema.HardwareTable,
    ("hardware", "*", "peak_flops"): schema.PeakFlops,
    ("dtypes", "*"): schema.DTypeTable,
    ("axes", "*"): schema.AxisRange,
}
"""The table at each key path, for the allowed keys of an ``unknown key`` message."""


def _study_table(name: str) -> type[BaseModel]:
    """The schema model of the config table ``name`` (a study's: ``ServingTable | None``)."""
    annotation = schema.ConfigFile.model_fields[name].annotation
    candidates = (annotation, *get_args(annotation))
    (model,) = (a for a in candidates if isinstance(a, type) and issubclass(a, BaseModel))
    return model


for _study in STUDIES:  # each study's table, and its axes' ranges
    if _study.table not in ("axes", *(path[0] for path in _TABLES if path)):
        _TABLES[(_study.table,)] = _study_table(_study.table)
        _TABLES[(_study.table, "*")] = schema.AxisRange


def _table_for(path: tuple[str, ...]) -> type[BaseModel] | None:
    for pattern, table in _TABLES.items():
        if len(pattern) != len(path):
            continue
        if all(p in ("*", q) for p, q in zip(pattern, path, strict=True)):
            return table
    return None


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def key_path(loc: Sequence[str | int]) -> str:
    """``("axes", "batch", 2)`` as ``axes.batch[2]``; a key that is not bare is quoted, as
    TOML writes it (``models."my model"``)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part != "[key]":  # pydantic's marker for an error in a table's key itself
            key = part if _BARE_KEY.match(part) else json.dumps(part)
            out += f".{key}" if out else key
    return out


def shown(value: object, width: int = 60) -> str:
    """``repr(value)``, cut to ``width`` characters: a message quotes what was written."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def error_loc(error: Any) -> tuple[str | int, ...]:
    """The key path of a pydantic error, without the ``@...`` tags of union branches."""
    return tuple(p for p in error["loc"] if not (isinstance(p, str) and p[:1] == "@"))


_TYPE_NAMES = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def describe(error: Any) -> str:
    """One pydantic error as ``key: message`` (with the value and what is allowed)."""
    loc = error_loc(error)
    key = key_path(loc) or "(top level)"
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        family = "@family" in error["loc"]  # a [models.*] table with base: FamilyTable's keys
        table = schema.FamilyTable if family else _table_for(tuple(str(p) for p in loc[:-1]))
        allowed = sorted(table.model_fields) if table else []
        hint = suggest(str(loc[-1]), allowed) if allowed else ""
        return f"{key}: unknown key; {hint}".rstrip("; ")
    if kind == "missing":
        return f"{key}: required key is missing"
    if kind == "string_pattern_mismatch":
        return f"{key}: {shown(value)} is not a valid name; use only a-z, 0-9, '.', '_', '-'"
    if kind == "string_too_short":
        return f"{key}: must not be empty (got {shown(value)})"
    if kind == "too_short":
        return f"{key}: the axis is empty; give at least one value"
    if kind in _TYPE_NAMES:
        got = type(value).__name__
        return f"{key}: must be {_TYPE_NAMES[kind]}, not {got} (got {shown(value)})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        expected = re.findall(r"'([^']*)'", str(error["ctx"]["expected"]))
        hint = suggest(value, expected) if isinstance(value, str) else ""
        hint = f"; {hint}" if hint.startswith("did you mean") else ""
        return f"{key}: must be one of {error['ctx']['expected']} (got {shown(value)}){hint}"
    if kind == "value_error" and isinstance(value, str) and message == name_problem(value):
        return f"{key}: {shown(value)} is not a valid name: {message}"
    if kind == "value_error":
        return f"{key}: {message}"
    return f"{key}: {message} (got {shown(value)})"


_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


def toml_error(path: str, text: str, error: tomllib.TOMLDecodeError) -> ConfigError:
    """A TOML syntax error as ``file:line:column: not valid TOML: ...``, the line and a caret."""
    message = str(error)
    where = _TOML_AT.search(message)
    if where is None:  # "at end of document": the last line
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    else:
        line, column = int(where.group(1)), int(where.group(2))
        message = message[: where.start()].rstrip()
    source = text.splitlines()[line - 1] if 0 < line <= len(text.splitlines()) else ""
    if len(source) > 100:  # keep the caret under the offending column, on a short line
        start = max(0, column - 50)
        source, column = source[start : start + 100], column - start
    caret = " " * (column - 1) + "^"
    msg = f"{path}:{line}:{column}: not valid TOML: {message}\n    {source}\n    {caret}"
    return ConfigError(msg)


class Problems:
    """Every problem found in one config, each a ``key: message`` line.

    Past ``MAX_PROBLEMS`` lines the rest are only counted, so a file with a million mistakes
    costs no more than one with fifty (``full`` lets a check skip composing its message).
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.dropped = 0

    @property
    def full(self) -> bool:
        """True once ``MAX_PROBLEMS`` lines are held: further problems are only counted."""
        return len(self.lines) >= MAX_PROBLEMS

    def add(self, key: str, message: str = "") -> None:
        """Record that ``key`` has a problem ``message``."""
        self.add_line(f"{key}: {message}")

    def add_line(self, line: str) -> None:
        """Record a problem already written as ``key: message``."""
        if self.full:
            self.dropped += 1
        elif line not in self.lines[-1:]:
            self.lines.append(line)

    def error(self, path: str) -> ConfigError:
        """One ``ConfigError`` listing every problem, each line prefixed by ``path``."""
        lines = list(dict.fromkeys(self.lines))
        if self.dropped:
            lines.append(f"... and {self.dropped} more problems")
        return ConfigError("\n".join(f"{path}: {line}" for line in lines))

    def raise_if_any(self, path: str) -> None:
        """Raise ``error(path)`` if any problem was found."""
        if self.lines:
            raise self.error(path)
