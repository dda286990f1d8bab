"""The README stays true: its two commands are the ones that install and run the seed study
and that CI runs, its Python example runs, its links reach files of the repository. (Its
other code blocks run in ``tests/test_docs.py``, with the site's.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command() -> None:
    commands = README.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(commands) == 2
    assert commands[0].endswith("sweeps run configs/seed-llama3-8b-h100.toml --force")
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = README.split("## From Python\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace('"configs/', f'"{ROOT.as_posix()}/configs/')
    monkeypatch.chdir(tmp_path)  # it writes outputs/mine
    exec(compile(code, "README.md (Python)", "exec"), {})
    assert (tmp_path / "outputs" / "mine" / "decode.parquet").is_file()


def test_links_reach_files_and_the_length_is_a_readme_s() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README)
    local = [link for link in links if "://" not in link]
    assert local
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing
    assert len(README.splitlines()) <= 300  # the rest lives in docs/


def test_the_worked_example_is_the_seed_study_s_summary(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sweeps.cli.main import cli

    shown = README.split("```text\n", 1)[1].split("```", 1)[0]
    config = ROOT / "configs" / "seed-llama3-8b-h100.toml"
    result = CliRunner().invoke(cli, ["run", str(config), "--out", str(tmp_path), "--quiet"])
    assert result.exit_code == 0, result.output
    printed = [line.rstrip() for line in result.stdout.splitlines() if line.strip()]
    for line in shown.splitlines():
        assert line.rstrip() in printed, line
