"""The house rules that a reviewer would otherwise check by hand: sizes, and who names flags."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sweeps"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
"""Lines of a function's body and signature, its docstring not counted."""
WHY = re.compile(r"#\s*long:")
"""A function may run longer where a comment ``# long: <why>`` in it says why."""


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", MODULES, ids=_relative)
def test_no_module_is_over_400_lines(path: Path) -> None:
    assert len(path.read_text("utf-8").splitlines()) <= MAX_MODULE_LINES


def _long_functions(path: Path) -> list[str]:
    text = path.read_text("utf-8")
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                length -= (first.end_lineno or first.lineno) - first.lineno + 1  # the docstring
            head = "\n".join(lines[node.lineno - 1 : (node.end_lineno or node.lineno)])
            if length > MAX_FUNCTION_LINES and not WHY.search(head):
                found.append(f"{node.name} ({length} lines)")
    return found


@pytest.mark.parametrize("path", MODULES, ids=_relative)
def test_no_function_is_over_60_lines_without_a_reason(path: Path) -> None:
    assert _long_functions(path) == []


def _flags() -> set[str]:
    from sweeps.cli.main import cli

    flags: set[str] = set()
    commands = [cli, *getattr(cli, "commands", {}).values()]
    for command in commands:
        for param in command.params:
            flags.update(o for o in getattr(param, "opts", []) if o.startswith("--"))
    flags.discard("--help")
    return flags


def _messages(path: Path) -> list[str]:
    """String constants of ``path`` that are not docstrings (messages, labels, formats)."""
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_the_library_names_no_cli_flag() -> None:
    flags = _flags()
    assert "--memory-budget" in flags  # the probe sees the CLI's options
    offenders = []
    for path in MODULES:
        if path.is_relative_to(PACKAGE / "cli"):
            continue
        for text in _messages(path):
            named = sorted(f for f in flags if re.search(re.escape(f) + r"\b", text))
            if named:
                offenders.append(f"{_relative(path)}: {named}: {text[:60]!r}")
    assert offenders == []
