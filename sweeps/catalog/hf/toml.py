"""``Model`` -> a ``[models.<id>]`` TOML table that pastes into a sweep config and validates."""

from __future__ import annotations

import os
import re
from pathlib import Path

from sweeps.catalog.records import TABLE_FIELDS, Model

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ALWAYS = ("layers", "heads", "kv_heads", "head_dim")
PASTED_FIELDS = tuple(dict.fromkeys((*TABLE_FIELDS, "vocab_size", "tie_word_embeddings")))
"""What the printed table holds: every field a ``[models.*]`` table takes (``vocab_size`` and
``tie_word_embeddings`` too: the embedding's bytes and FLOPs depend on them), so the pasted
table decodes as ``config = "<path>"`` of the same file does."""
"""Shape keys a table without ``config`` must hold, printed whatever their value."""
_DEFAULTS = {"experts": 1, "experts_per_token": 1}
"""Schema defaults other than 0 / false / empty, left out when the model has them."""


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    """A TOML key: bare where TOML allows (``A-Za-z0-9_-``), else quoted, so that an id with
    a dot (``llama-3.1-8b``) stays one key instead of a nested table."""
    return key if _BARE_KEY.match(key) else toml_string(key)


def relative_path(path: str | Path, base: str | Path | None = None) -> str:
    """``path`` as the sweep config will resolve it: relative to ``base`` (the folder the
    TOML will be saved in; default the current directory), with ``/`` separators; absolute
    where no relative path exists (another drive)."""
    target = os.path.abspath(path)
    try:
        return Path(os.path.relpath(target, os.path.abspath(base or os.curdir))).as_posix()
    except ValueError:
        return Path(target).as_posix()


def _value(key: str, value: object) -> str | None:
    """The TOML text of one field, or None where the schema default makes it redundant."""
    if isinstance(value, bool):
        return "true" if value else None
    if isinstance(value, str):
        return toml_string(value) if value else None
    if key in ("params", "active_params") and isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() else repr(value)
    if value == _DEFAULTS.get(key, 0) and key not in _ALWAYS:
        return None
    return str(value)


def model_to_toml(
    model: Model, config_path: str | Path | None = None, base: str | Path | None = None
) -> str:
    """A ``[models.<id>]`` TOML table that a sweep config accepts, fields from ``model``.

    Fields at their schema default (0, false, empty, or 1 for experts) are left out, and
    ``active_params`` where it equals ``params``. The id is quoted where TOML needs it. With
    ``config_path`` a comment shows the short form, ``config = "<path>"``, with the path
    written relative to ``base``: the folder the user will save the TOML in (a sweep config
    resolves ``config`` from its own folder); ``base`` defaults to the current directory.
    """
    lines = [f"[models.{toml_key(model.id)}]"]
    if config_path is not None:
        short = toml_string(relative_path(config_path, base))
        lines.append(f"# or, instead of the fields below: config = {short}")
    for key in PASTED_FIELDS:
        value = getattr(model, key)
        if key == "active_params" and value == model.params:
            continue
        text = toml_string(value) if key == "source" else _value(key, value)
        if text is not None:
            lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"
