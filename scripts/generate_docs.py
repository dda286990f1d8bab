"""Write the generated tables into the repository's Markdown, between their markers.

Run from the repository root: ``python scripts/generate_docs.py`` rewrites every block;
``python scripts/generate_docs.py --check`` changes nothing and exits 1 naming each page whose
block is behind its source (``tests/test_generated_docs.py`` runs it so). The documentation
site's build (``scripts/mkdocs_hooks.py``) fills the same blocks from the same table, so the
page read on GitHub and the page of the site are one text.

A block is ``<!-- generated: NAME -->`` ... ``<!-- /generated: NAME -->``; a page holding only
the opening marker (a new block) gets its closing one on the first run. ``GENERATED`` names
each block's source, declared once:

- ``config-reference``: the config files' keys, from their schema (``sweeps.config.reference``);
- ``columns``: every output table's columns with unit and meaning, one heading a table
  (``sweeps.export.columns``);
- ``chart-kinds``: the chart kinds, from their registrations (``sweeps.outputs``);
- ``api``: the Python API page's entries, the callables of ``API`` (``api_reference``).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

EXTRA_API = ("sweeps.export.connect", "sweeps.calibrate.calibrate")
"""Entry points of the layers the API page documents beside ``sweeps.__all__``."""


def api_callables() -> dict[str, Any]:
    """The public callables by the name the page gives them: the functions of
    ``sweeps.__all__`` (its classes, ``Sweep`` and the errors, are listed without
    ``Parameters``) and ``EXTRA_API``."""
    import sweeps

    found = {f"sweeps.{name}": getattr(sweeps, name) for name in sweeps.__all__}
    for path in EXTRA_API:
        module, _, name = path.rpartition(".")
        found[path] = getattr(importlib.import_module(module), name)
    return {name: obj for name, obj in found.items() if callable(obj)}


def api_reference() -> str:
    """The API page's entries: a mkdocstrings block per callable, by the name a user
    imports it under (functions first, then classes), so the site renders each docstring."""
    entries = api_callables()
    functions = [name for name, obj in entries.items() if not inspect.isclass(obj)]
    classes = [name for name, obj in entries.items() if inspect.isclass(obj)]
    lines = ["## Functions", "", *[f"::: {name}\n" for name in functions]]
    lines += ["## Classes", "", *[f"::: {name}\n" for name in classes]]
    return "\n".join(lines).rstrip() + "\n"


def _source(module: str, function: str) -> Callable[[], str]:
    return lambda: str(getattr(importlib.import_module(module), function)())


GENERATED: dict[str, tuple[str, Callable[[], str]]] = {
    "config-reference": ("config.md", _source("sweeps.config.reference", "config_reference")),
    "columns": ("outputs.md", _source("sweeps.export.columns", "column_reference")),
    "chart-kinds": ("charts.md", _source("sweeps.outputs", "kind_reference")),
    "api": ("api.md", api_reference),
}
"""Each block's name: the page of ``docs/`` that holds it and what writes it."""


def _block(name: str) -> re.Pattern[str]:
    start, end = re.escape(f"<!-- generated: {name} -->"), re.escape(f"<!-- /generated: {name} -->")
    return re.compile(f"{start}(?:.*?{end})?", re.S)


def fill(text: str, texts: dict[str, str] | None = None) -> str:
    """``text`` with every generated block in it rewritten (``texts``: each block's text,
    by name, where already made)."""
    for name, (_, write) in GENERATED.items():
        pattern = _block(name)
        if pattern.search(text):
            body = (texts or {}).get(name) or write()
            block = f"<!-- generated: {name} -->\n\n{body.rstrip()}\n\n<!-- /generated: {name} -->"
            text = pattern.sub(lambda _, block=block: block, text)
    return text


def strip_markers(text: str) -> str:
    """``text`` without the markers' own lines (the site shows the tables, not the comments)."""
    return re.sub(r"^<!-- /?generated: [a-z-]+ -->\n", "", text, flags=re.M)


def stale_pages(write: bool) -> list[str]:
    """The pages whose blocks differ from their sources (rewritten where ``write``)."""
    texts = {name: make() for name, (_, make) in GENERATED.items()}
    stale = []
    for page in sorted({page for page, _ in GENERATED.values()}):
        path = DOCS / page
        old = path.read_text("utf-8")
        new = fill(old, texts)
        if new != old:
            stale.append(f"docs/{page}")
            if write:
                path.write_text(new, "utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    """Rewrite the blocks (``--check``: only say which are stale); the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = stale_pages(write=not args.check)
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run: python scripts/generate_docs.py", file=sys.stderr)
        return 1
    for page in stale:
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
