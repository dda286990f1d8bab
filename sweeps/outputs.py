"""The chart kinds of a result, declared once each: a ``Kind`` that its figure module registers.

A figure module declares its kind beside its builder, at module level::

    CEILING = register(Kind(name="ceiling", title="How close decode gets to its ceiling",
                            order=10, default=True, doc="...", builder=ceiling_chart))

and nothing else names it: the config's allowed ``[outputs] charts`` and their default, the
JSON Schema, the docs' list of kinds, the report's order and headings, the drawing and the
tests all read the registry.

Ground floor: this module imports nothing of the package and never imports the figure modules
by name. Two readings of the one declaration:

- ``declared()``, light: the literal fields (``LIGHT``) of every ``register(Kind(...))``
  statement of the package's source (at module level, column 0), each statement parsed
  alone (``ast``) without importing its module, so
  that ``sweeps validate`` and ``sweeps --help`` check names without Altair or xarray;
- ``registered()``, whole: imports the modules ``declared()`` found (each registers its kind,
  builder included, as it is imported) and returns ``KINDS``. A test holds the two equal.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any, Final

PACKAGE: Final = Path(__file__).resolve().parent
"""The package whose source ``declared()`` reads (every module, a study's included)."""


@dataclass(frozen=True)
class Kind:
    """A chart kind: what ``[outputs] charts`` names, the report's section of its figures, and
    how its figures are drawn.

    ``builder``: for a kind drawn per model and device, ``builder(ds, model, device,
    **options)`` (``sweeps.charts.output.Settings.options``) returns its chart; ``None`` where
    the kind's figures are drawn from what a run keeps of every slice (the serving, technique,
    model-size and cross-device figures) or made elsewhere (the simulated plans' CDFs).
    ``applies(ds)``: whether a grid has what the kind's figures need (``None``: every grid).
    """

    name: str
    """The name ``[outputs] charts`` gives, the stem of its files (``charts/<name>-...``)."""
    title: str
    """The report's heading of its section."""
    order: int
    """Its section's place in the report (ascending)."""
    doc: str
    """One line for the docs and the JSON Schema: what it shows and when it is drawn."""
    default: bool = False
    """In ``[outputs] charts``' default list."""
    family: bool = False
    """Added to that default where the model axis names a family table (``[models.*]`` with
    ``base``: one model at many sizes), whose question it answers (the model-size figure)."""
    chosen: bool = True
    """A name ``[outputs] charts`` accepts; ``False``: drawn along another (the cross-device
    roofline with ``roofline``, the simulated CDFs with ``[serving] simulate``)."""
    builder: Callable[..., Any] | None = None
    applies: Callable[[Any], bool] | None = None


PAIRS_DRAWN: Final = 24
"""Model-device pairs up to which a run draws every kind ``[outputs] charts`` defaults to [1].
Past it, unless the config names its charts, the kinds drawn per model and device are left
out (named in the manifest, the report and the run's status lines) and the figures across
them drawn: their count grows with the question (models, devices), not with the grid (a
1e7-point run of 945 pairs drew about 3,800 files over minutes)."""

LIGHT: Final = ("name", "title", "order", "doc", "default", "chosen", "family")
"""The fields ``declared()`` reads from the source: literals in every declaration."""
KINDS: dict[str, Kind] = {}
"""Every kind registered so far, by name (``registered()`` fills it)."""
_MARK: Final = "register(Kind("


def register(kind: Kind) -> Kind:
    """Register ``kind`` (at its figure module's import) and return it; a name registered
    twice by two declarations is a mistake, raised as such."""
    held = KINDS.get(kind.name)
    if held is not None and held != kind:
        msg = f"chart kind {kind.name!r} is registered twice"
        raise ValueError(msg)
    KINDS[kind.name] = kind
    return kind


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declaration(node: ast.stmt) -> ast.Call | None:
    """The ``Kind(...)`` call of a module-level ``[x =] register(Kind(...))`` statement."""
    value = node.value if isinstance(node, ast.Assign | ast.Expr) else None
    if not (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "register"):
        return None
    (call,) = value.args
    return call if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Kind" else None


def _light(call: ast.Call, where: str) -> Kind:
    """The ``LIGHT`` fields of one declaration, from their literal values."""
    found: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg in LIGHT:
            try:
                found[keyword.arg] = ast.literal_eval(keyword.value)
            except ValueError:
                msg = f"{where}: Kind's {keyword.arg} must be a literal (read without import)"
                raise ValueError(msg) from None
    if call.args or not {f.name for f in fields(Kind) if f.name in LIGHT} <= {*found, *_OPTIONAL}:
        msg = f"{where}: Kind(...) takes keywords, at least {', '.join(LIGHT[:4])}"
        raise ValueError(msg)
    return Kind(**found)


_OPTIONAL: Final = ("default", "chosen", "family")


_START: Final = re.compile(r"^(?:\w+ = )?register\(Kind\(", re.MULTILINE)
"""A declaration's first line, at module level (column 0)."""


def _statement(text: str, start: int) -> ast.stmt:
    """The statement that begins at ``start`` of ``text``: its lines parsed alone, as few as
    make it whole (parsing the declarations only, not their modules, is 10-20x faster)."""
    lines = text[start:].splitlines()
    for end in range(1, len(lines) + 1):
        try:
            return ast.parse("\n".join(lines[:end])).body[0]
        except SyntaxError:
            continue
    msg = f"a declaration at offset {start} never closes"
    raise ValueError(msg)


@cache
def _declarations() -> tuple[tuple[str, Kind], ...]:
    """(module, light kind) of every ``register(Kind(...))`` in the package's source."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text("utf-8")
        if _MARK not in text:
            continue
        for match in _START.finditer(text):
            call = _declaration(_statement(text, match.start()))
            if call is not None:
                line = text.count("\n", 0, match.start()) + 1
                out.append((_module(path), _light(call, f"{path.name}:{line}")))
    return tuple(sorted(out, key=lambda pair: pair[1].order))


def declared() -> dict[str, Kind]:
    """Every kind's ``LIGHT`` fields by name, in report order, without importing a figure
    module (their builders are ``None`` here)."""
    return {kind.name: kind for _, kind in _declarations()}


def registered() -> dict[str, Kind]:
    """Every kind, builder included, in report order: imports the modules that declare one."""
    for module in dict.fromkeys(module for module, _ in _declarations()):
        importlib.import_module(module)
    return {name: KINDS[name] for name in declared()}


def chart_names() -> tuple[str, ...]:
    """The names ``[outputs] charts`` accepts, in report order."""
    return tuple(k.name for k in declared().values() if k.chosen)


def default_charts() -> tuple[str, ...]:
    """``[outputs] charts``' default: the kinds drawn per model and device."""
    return tuple(k.name for k in declared().values() if k.default)


def family_charts() -> tuple[str, ...]:
    """The kinds added to ``[outputs] charts``' default where the model axis names a family."""
    return tuple(k.name for k in declared().values() if k.family and not k.default)


def kind_reference() -> str:
    """The docs' table of chart kinds (``docs/charts.md``), from the declarations."""
    rows = ["| kind | report section | default | what it shows, when |", "|---|---|---|---|"]
    for k in declared().values():
        name = f"`{k.name}`" if k.chosen else f"`{k.name}` (drawn along another)"
        default = "yes" if k.default else "with a family on the model axis" if k.family else "no"
        rows.append(f"| {name} | {k.title} | {default} | {k.doc} |")
    return "\n".join(rows) + "\n"
