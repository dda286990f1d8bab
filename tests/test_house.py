"""The house rules that a reviewer would otherwise check by hand: short functions, who names
flags, an analysis declared beside its compute, and imports that run down the layers, never in
circles. (No module size rule: a long module that is one concept is fine.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sweeps"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_FUNCTION_LINES = 60
"""Lines of a function's body and signature, its docstring not counted."""
WHY = re.compile(r"#\s*long:")
"""A function may run longer where a comment ``# long: <why>`` in it says why."""


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


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


def _imported_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing them (``from x import A as B``: ``B``)."""
    return {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }


def _analysis_declarations() -> list[tuple[str, str, list[str]]]:
    """(module, analysis, names its ``variables`` or ``compute`` take from another module) of
    every ``Analysis(...)`` of the package."""
    found = []
    for path in MODULES:
        tree = ast.parse(path.read_text("utf-8"))
        imported = _imported_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Analysis":
                given = {k.arg: k.value for k in node.keywords}
                parts = [given.get(key, ast.Constant(None)) for key in ("variables", "compute")]
                called = {id(n.func) for p in parts for n in ast.walk(p) if isinstance(n, ast.Call)}
                names = [  # a value taken from elsewhere; a constructor called here is not
                    n.id
                    for p in parts
                    for n in ast.walk(p)
                    if isinstance(n, ast.Name) and n.id in imported and id(n) not in called
                ]
                found.append((_relative(path), ast.unparse(given["name"]), names))
    return found


def test_each_analysis_declares_its_variables_beside_its_compute() -> None:
    """An ``Analysis``'s output variables and its compute live in the module that declares it
    (one concept, one module): neither is imported from elsewhere."""
    from sweeps.grid.analyses import ANALYSES

    declared = _analysis_declarations()
    assert len(declared) == len(ANALYSES)  # the scan sees every registered analysis
    apart = [f"{path}: Analysis({name}) imports {names}" for path, name, names in declared if names]
    assert apart == KNOWN_APART, "\n".join(apart)


KNOWN_APART: list[str] = []


# The import drawing. A room is a top-level module or folder of ``sweeps`` (``sweeps/charts/``,
# ``sweeps/limits.py``); floors are declared once, here, lowest first. A room imports rooms of
# its floor or below, never above (a back arrow), and rooms never import each other in a
# circle. Module-level and function-level imports count; imports under ``if TYPE_CHECKING:``
# do not (types only, never run), nor ``importlib.import_module`` of a string (the lazy
# faces of ``sweeps``, ``sweeps.charts``, ... and ``sweeps.outputs.registered``).
FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "files",
        "limits",
        "outputs",
        "processes",
        "signals",
        "distribution",
        "schedulers",
        "fields",
        "physics",
    ),  # ground
    ("catalog", "measured", "traces"),  # the records and their data; measured kernels; traces
    ("engine",),  # what an analysis and an axis are, the core analyses, the grid's own axes
    ("studies",),  # one folder a study, each declaring its STUDY, its keys and their axes once
    ("axes",),  # the axis table: the grid's axes and every study's, gathered
    ("config",),  # the TOML schema and its resolution into a Sweep
    ("grid",),  # what a sweep asks of the registry: build_grid, memory, chunks
    ("pipeline", "export", "views", "calibrate"),  # run, write, read back, calibrate
    ("charts",),  # figures and the report
    ("bench",),  # sweeps bench
    ("cli", "__main__"),  # the command
    ("sweeps",),  # the package's face (sweeps/__init__.py)
)
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
KNOWN_BACK_ARROWS: dict[tuple[str, str], str] = {}
"""Back arrows allowed for now, each with what cuts it."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


NAMES = {_module_name(p): p for p in MODULES}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "sweeps"


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == (
        "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: str, package: bool) -> list[str]:
    """The package modules an import statement of ``module`` loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".")[: len(module.split(".")) - node.level + (1 if package else 0)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in NAMES else base for a in node.names]


def _imports(path: Path) -> list[tuple[str, int]]:
    """(module imported, line) of every package import of ``path`` but the types-only ones."""
    module = _module_name(path)
    tree = ast.parse(path.read_text("utf-8"))
    hidden = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _type_checking(node)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in hidden:
            for target in _targets(node, module, path.name == "__init__.py"):
                if target.split(".")[0] == "sweeps":
                    found.append((target, node.lineno))
    return found


def _arrows() -> dict[tuple[str, str], list[str]]:
    """Each arrow between two rooms, with every import that draws it (``file:line -> module``)."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for path in MODULES:
        source = _room(_module_name(path))
        for target, line in _imports(path):
            if _room(target) != source:
                where = f"{_relative(path)}:{line} imports {target}"
                arrows.setdefault((source, _room(target)), []).append(where)
    return arrows


def _circles(arrows: set[tuple[str, str]]) -> list[list[str]]:
    """The circles of the drawing: its strongly connected rooms (Tarjan), two or more a group."""
    after: dict[str, list[str]] = {}
    for a, b in sorted(arrows):
        after.setdefault(a, []).append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(room: str) -> None:
        index[room] = low[room] = len(index)
        stack.append(room)
        for nxt in after.get(room, []):
            if nxt not in index:
                visit(nxt)
                low[room] = min(low[room], low[nxt])
            elif nxt in stack:
                low[room] = min(low[room], index[nxt])
        if low[room] == index[room]:
            group = []
            while not group or group[-1] != room:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for room in sorted(after):
        if room not in index:
            visit(room)
    return circles


def test_every_room_has_a_floor() -> None:
    rooms = {_room(m) for m in NAMES}
    assert rooms - set(FLOOR) == set(), "declare the new room's floor in FLOORS"


def test_imports_run_down_the_floors() -> None:
    back = {arrow: lines for arrow, lines in _arrows().items() if FLOOR[arrow[0]] < FLOOR[arrow[1]]}
    new = [
        f"{a} -> {b}: {lines}"
        for (a, b), lines in sorted(back.items())
        if (a, b) not in KNOWN_BACK_ARROWS
    ]
    assert new == [], "imports running back up the floors:\n" + "\n".join(new)
    gone = sorted(set(KNOWN_BACK_ARROWS) - set(back))
    assert gone == [], f"cut, so remove them from KNOWN_BACK_ARROWS: {gone}"


def test_no_circle_of_imports_between_rooms() -> None:
    arrows = _arrows()
    circles = _circles(set(arrows) - set(KNOWN_BACK_ARROWS))
    lines = [
        f"{a} -> {b}: {arrows[(a, b)][0]}"
        for group in circles
        for a, b in sorted(arrows)
        if a in group and b in group
    ]
    assert circles == [], "circles of imports:\n" + "\n".join(lines)


def test_the_drawing_sees_back_arrows_and_circles() -> None:
    """The scan finds what it must (so the two tests above can fail): the allowed arrows, a
    known import with its line, and a circle drawn by hand."""
    arrows = _arrows()
    assert set(KNOWN_BACK_ARROWS) <= set(arrows)
    assert any("sweeps/cli/main.py" in line for line in arrows[("cli", "config")])
    assert _circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert ("pipeline", "hook") not in arrows  # a module of a room is not a room
