"""The config files' reference, generated from their schema (``sweeps.config.schema``).

Every key of every table with its default, its allowed values and its meaning, as Markdown
tables: ``scripts/generate_docs.py`` writes them into ``docs/config.md`` (a test keeps the
page in step) and the documentation site's build fills them the same way, so the reference
is the schema's own and never falls behind it.
"""

from __future__ import annotations

import json
from typing import Any

TABLES = ("sweep", "axes", "options", "serving", "outputs", "models", "hardware", "dtypes")
"""The tables the reference shows first, in this order; every other table of ``ConfigFile``
(``[workload]``, ``[kv_tiers.*]``, a new study's) follows, in the file model's order."""


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    for option in node.get("anyOf", ()):  # ``X | None``: the table itself
        if option.get("type") != "null":
            return _resolve(option, defs)
    return node


def _kind(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """What a value may be: its allowed names, else its type (a list, a range, a number)."""
    if "enum" in node:
        return " ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    options = node.get("oneOf") or node.get("anyOf")
    if options:
        kinds = [_kind(_resolve(o, defs) if "$ref" in o else o, defs) for o in options]
        return " or ".join(dict.fromkeys(k for k in kinds if k != "null"))
    kind = node.get("type", "")
    if kind == "array":
        item = node.get("items", {})
        inner = _kind(_resolve(item, defs) if "$ref" in item else item, defs)
        return f"list of {inner}" if inner else "list"
    if "title" in node and "properties" in node and kind == "object":
        return "range table" if "start" in node["properties"] else "table"
    return {"number": "number", "integer": "integer", "string": "string", "boolean": "boolean"}.get(
        kind, kind
    )


def _default(node: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in node:
        return "-"
    value = node["default"]
    if value is None:
        return "unset"
    text = json.dumps(value)
    return f"`{text}`" if len(text) <= 40 else f"`{text[:37]}...`"


def _rows(prefix: str, table: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    rows = []
    required = set(table.get("required", ()))
    for key, raw in table.get("properties", {}).items():
        node = _resolve(raw, defs) if "$ref" in raw and "default" not in raw else raw
        target = _resolve(raw, defs)
        if (
            target.get("type") == "object"
            and "properties" in target
            and "start" not in target.get("properties", {})
        ):
            rows += _rows(f"{prefix}.{key}", target, defs)
            continue
        meaning = (raw.get("description") or node.get("description") or "").replace("|", "\\|")
        kind = _kind(node, defs).replace("|", "\\|")
        rows.append(f"| `{prefix}.{key}` | {_default(raw, key in required)} | {kind} | {meaning} |")
    return rows


def config_reference() -> str:
    """Markdown: one table per config table, every key with default, kind and meaning."""
    from sweeps.config.schema import ConfigFile

    schema = ConfigFile.model_json_schema()
    defs = schema.get("$defs", {})
    parts = []
    for name in (*TABLES, *(n for n in schema["properties"] if n not in TABLES)):
        raw = schema["properties"][name]
        pattern = raw.get("patternProperties")
        value = next(iter(pattern.values())) if pattern else raw
        variants = [_resolve(o, defs) for o in value.get("oneOf", ())] or [_resolve(value, defs)]
        prefix = f"{name}.<name>" if pattern else name
        for index, table in enumerate(variants):  # a union of tables: each one's keys
            about = raw.get("description", "") if index == 0 else table.get("description", "")
            parts.append(f"### `[{prefix}]`{' (' + table['title'] + ')' if index else ''}\n")
            parts.append(f"{about.rstrip('.')}.\n")
            parts.append("| key | default | value | meaning |\n|---|---|---|---|")
            parts += _rows(prefix, table, defs)
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"
