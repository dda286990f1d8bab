"""MkDocs hooks of the documentation site (``mkdocs.yml``): generated pages, and every page in.

- ``<!-- generated: config-reference -->`` becomes the config files' reference, generated
  from their schema (``sweeps.config.reference``);
- ``<!-- generated: columns -->`` becomes every output table's columns with unit and meaning,
  generated from the declarations the export checks its columns against
  (``sweeps.export.columns``), so columns that analyses add appear without an edit here;
- ``<!-- generated: chart-kinds -->`` becomes the table of chart kinds, from their
  registrations (``sweeps.outputs``), so a new kind appears without an edit here;
- a page of ``docs/`` that the nav does not name is added under "More", so the site always
  holds every page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

GENERATED = {
    "<!-- generated: config-reference -->": ("sweeps.config.reference", "config_reference"),
    "<!-- generated: columns -->": ("sweeps.export.columns", "column_reference"),
    "<!-- generated: chart-kinds -->": ("sweeps.outputs", "kind_reference"),
}


def _named(nav: Any) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return {page for item in nav for page in _named(item)}
    if isinstance(nav, dict):
        return {page for value in nav.values() for page in _named(value)}
    return set()


def on_config(config: Any) -> Any:
    docs = Path(config["docs_dir"])
    named = _named(config["nav"])
    missing = sorted(
        p.relative_to(docs).as_posix()
        for p in docs.rglob("*.md")
        if p.relative_to(docs).as_posix() not in named
    )
    if missing:
        config["nav"].append({"More": missing})
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    import importlib

    for marker, (module, function) in GENERATED.items():
        if marker in markdown:
            text = getattr(importlib.import_module(module), function)()
            markdown = markdown.replace(marker, text)
    return markdown
