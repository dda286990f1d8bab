"""The README stays true: its column tables are those the export writes, its commands exist, its Python example runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweeps.readme import END, START, column_reference

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_column_tables_match_the_registry() -> None:
    block = README.split(START, 1)[1].split(END, 1)[0]
    assert block.strip() == column_reference().strip(), "run: python scripts/update_readme.py"


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
