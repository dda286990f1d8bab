"""The README stays true: its column tables are those the export writes, its commands exist, its Python example runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from sweeps.export.columns import column_reference

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _script() -> ModuleType:
    """``scripts/update_readme.py`` as a module (``scripts`` is no package)."""
    spec = importlib.util.spec_from_file_location(
        "update_readme", ROOT / "scripts" / "update_readme.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_column_tables_match_the_registry() -> None:
    script = _script()
    block = README.split(script.START, 1)[1].split(script.END, 1)[0]
    assert block.strip() == column_reference().strip(), "run: python scripts/update_readme.py"


def test_update_readme_replaces_only_the_block_and_is_idempotent() -> None:
    script = _script()
    stale = f"# Title\n\nbefore\n{script.START}\n| `old` | - | gone |\n{script.END}\nafter\n"
    patched = script.update_readme(stale)
    assert (
        patched == f"# Title\n\nbefore\n{script.START}\n{column_reference()}{script.END}\nafter\n"
    )
    assert "`old`" not in patched
    assert script.update_readme(patched) == patched
    assert script.update_readme(README) == README


def test_column_reference_lists_every_table_with_units() -> None:
    reference = column_reference()
    for table in ("decode", "prefill", "serving", "pools", "models", "hardware"):
        assert f"**`{table}.parquet`**" in reference
    assert "| `step_time_s` | s |" in reference
    assert "| `ttft_s` | s |" in reference


def test_ci_runs_the_readme_test_command() -> None:
    commands = README.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert commands[0].endswith("sweeps run configs/seed-llama3-8b-h100.toml --force")
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = README.split("## Python\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace('"configs/', f'"{ROOT.as_posix()}/configs/')
    monkeypatch.chdir(tmp_path)  # it writes outputs/mine
    exec(compile(code, "README.md (Python)", "exec"), {})
    assert (tmp_path / "outputs" / "mine" / "decode.parquet").is_file()
