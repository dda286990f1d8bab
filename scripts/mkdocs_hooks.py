"""MkDocs hooks of the documentation site (``mkdocs.yml``): generated pages, and every page in.

- every generated block of a page (``<!-- generated: NAME -->``: the config reference, the
  column tables, the chart kinds, the API entries) is filled from its source by
  ``scripts/generate_docs.py``, the one table of blocks and sources, which also writes them
  into the repository's Markdown (a test keeps those in step); the markers themselves are
  left out of the site;
- a page of ``docs/`` that the nav does not name is added under "More", so the site always
  holds every page.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_docs import fill, strip_markers


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
    return strip_markers(fill(markdown))
