"""The Python API page documents every public function whole: each docstring has a
``Parameters`` section naming exactly the function's parameters (none missing, none that
the signature lacks) and a ``Returns`` section; the page lists every public callable.

The public callables are those ``scripts/generate_docs.py`` writes the page from
(``sweeps.__all__`` and the layers' entry points beside it); its classes (``Sweep``, the
errors) are documented as classes, with no ``Parameters`` asked of them.
"""

from __future__ import annotations

import inspect
import re
import sys
from typing import Any

import pytest

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from generate_docs import api_callables

FUNCTIONS = {n: o for n, o in api_callables().items() if not inspect.isclass(o)}
SECTION = re.compile(r"^(\w[\w ]*)\n-+\n(.*?)(?=^\w[\w ]*\n-+\n|\Z)", re.S | re.M)


def sections(doc: str) -> dict[str, str]:
    """A numpydoc docstring's sections by heading (``Parameters``, ``Returns``, ...)."""
    return {m.group(1): m.group(2) for m in SECTION.finditer(doc)}


def documented(parameters: str) -> list[str]:
    """The parameter names of a ``Parameters`` section: its unindented lines' first word
    (``name`` or ``name : type``; ``**options``)."""
    return [m.group(1) for m in re.finditer(r"^(\*{0,2}\w+)(?: :.*)?$", parameters, re.M)]


def signature_names(function: Any) -> list[str]:
    names = []
    for p in inspect.signature(function).parameters.values():
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        names.append(prefix + p.name)
    return names


def test_there_are_public_functions_to_check() -> None:
    assert {"sweeps.run", "sweeps.run_to_folder", "sweeps.summarize"} <= set(FUNCTIONS)
    assert len(FUNCTIONS) >= 15


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_public_function_documents_its_parameters_and_return(name: str) -> None:
    doc = inspect.getdoc(FUNCTIONS[name]) or ""
    found = sections(doc)
    assert "Returns" in found, f"{name}: no Returns section"
    assert found["Returns"].strip(), f"{name}: an empty Returns section"
    assert "Parameters" in found, f"{name}: no Parameters section"
    assert documented(found["Parameters"]) == signature_names(FUNCTIONS[name]), name


def test_the_parser_catches_a_missing_or_extra_parameter() -> None:
    """The check above can fail: a section missing a parameter, or naming one the function
    does not have, is told apart from the signature."""

    def f(a: int, b: int = 1, **options: Any) -> int:
        """Add.

        Parameters
        ----------
        a
            First [1]
        c : int
            Not a parameter [1]

        Returns
        -------
        int
            The sum [1]
        """
        return a + b

    found = sections(inspect.getdoc(f) or "")
    assert documented(found["Parameters"]) == ["a", "c"]
    assert documented(found["Parameters"]) != signature_names(f)
    assert signature_names(f) == ["a", "b", "**options"]
    assert sections("Add.\n") == {}


def test_the_api_page_lists_every_public_callable() -> None:
    page = (ROOT / "docs" / "api.md").read_text("utf-8")
    listed = re.findall(r"^::: ([\w.]+)$", page, re.M)
    assert sorted(listed) == sorted(api_callables())
