"""The README and the documentation site stay true: the site builds with ``mkdocs build
--strict`` and holds every page of ``docs/``, its generated pages are the schema's and the
export's own, and every code block of the README and of ``docs/`` runs.

How a block runs, by its info string: ``python`` is executed; ``bash`` runs each of its
``sweeps ...`` lines through the CLI (exit 0; the lines that install or test, which
``tests/test_readme.py`` checks against ``.ci/run``, and ``sweeps bench`` are the ones not
run); ``toml`` is parsed, and a config (or a custom table, inside a small sweep that uses it)
validated; ``toml bad`` must be rejected; ``json`` parses; ``sql`` runs on the seed study's
``sweep.duckdb``; ``text`` is output or a formula, not code. A block without an info string
fails the test, so each says what it is.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from .conftest import ROOT
from .test_calibrate_docs import RESULT

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = ("python3 -m venv", ".venv/bin/", "eval ", "_SWEEPS_COMPLETE=", "sweeps bench")
"""Shell lines a block shows and this test does not run: installs and the test suite (see
``tests/test_readme.py``), shell set-up, the two-minute benchmark."""
LANGUAGES = ("python", "bash", "toml", "toml bad", "json", "sql", "text")


def blocks() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        for number, match in enumerate(FENCE.finditer(page.read_text("utf-8"))):
            name = f"{page.relative_to(ROOT).as_posix()}#{number}"
            found.append((name, match.group(1).strip(), match.group(2)))
    return found


BLOCKS = blocks()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as a reader has it: the repository's configs, the seed study's results (with
    its database), a config.json at ``path/to/``, a vLLM result file."""
    from sweeps.config import load_config
    from sweeps.pipeline import run_to_folder

    folder = tmp_path_factory.mktemp("reader")
    (folder / "configs").symlink_to(ROOT / "configs")
    seed = load_config(ROOT / "configs" / "seed-llama3-8b-h100.toml")
    run_to_folder(seed, folder / "outputs", duckdb=True, hooks=())
    (folder / "path" / "to").mkdir(parents=True)
    source = ROOT / "tests" / "data" / "hf" / "llama-3-8b" / "config.json"
    (folder / "path" / "to" / "config.json").write_text(source.read_text("utf-8"), "utf-8")
    (folder / "vllm-result.json").write_text(json.dumps(RESULT), "utf-8")
    return folder


def test_every_block_says_what_it_is() -> None:
    unknown = [(name, info) for name, info, _ in BLOCKS if info not in LANGUAGES]
    assert not unknown, f"give each block one of {LANGUAGES}: {unknown}"


def _sweep_using(text: str) -> str:
    """A config around a fragment: a small sweep whose axes use the custom tables ``text``
    defines, with the fragment's own tables and keys merged over it."""
    from sweeps.pipeline.mapping import to_toml

    tables = tomllib.loads(text)
    models = list(tables.get("models", {})) or ["llama-3-8b"]
    hardware = list(tables.get("hardware", {})) or ["h100-sxm"]
    dtypes = list(tables.get("dtypes", {})) or ["bf16"]
    axes = {"model": models, "hardware": hardware, "kv_dtype": dtypes, "batch": [1]}
    figures = tables.get("outputs", {}).get("figures", {})
    axes |= {k: [figures[k]] for k in ("tp", "weight_dtype") if k in figures}
    config: dict[str, dict[str, object]] = {"sweep": {"name": "docs"}, "axes": axes}
    for name, table in tables.items():
        config[name] = {**config.get(name, {}), **table}
    return to_toml(config)


def _fresh(work: Path, folder: Path, outputs: bool) -> Path:
    """A folder of its own for one block: ``work``'s files linked (its results only where
    ``outputs``: a shell block writes its own)."""
    for entry in work.iterdir():
        if outputs or entry.name != "outputs":
            (folder / entry.name).symlink_to(entry)
    return folder


def _bash(body: str, work: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    from sweeps.cli.main import cli

    monkeypatch.chdir(work)
    ran = 0
    for line in body.splitlines():
        words = shlex.split(line, comments=True)
        if not words or any(line.lstrip().startswith(skip) for skip in NOT_RUN):
            continue
        assert words[0] == "sweeps", f"a shell line this test cannot run: {line!r}"
        result = CliRunner().invoke(cli, words[1:])
        assert result.exit_code == 0, f"{line}\n{result.output}"
        ran += 1
    return ran


@pytest.mark.parametrize(("name", "info", "body"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_every_code_block_runs(
    name: str, info: str, body: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweeps.config import parse_config
    from sweeps.errors import ConfigError

    here = _fresh(work, tmp_path, outputs=info == "python")
    if info == "python":
        monkeypatch.chdir(here)
        exec(compile(body, name, "exec"), {"__name__": "__docs__", "sweeps": __import__("sweeps")})
    elif info == "bash":
        _bash(body, here, monkeypatch)
    elif info == "toml":
        text = body if "[sweep]" in body else _sweep_using(body)
        monkeypatch.chdir(work)
        if "[axes]" in text or "[sweep]" not in body:
            parse_config(text, str(work / "docs.toml"))
        else:
            tomllib.loads(text)
    elif info == "toml bad":
        with pytest.raises(ConfigError):
            parse_config(body, "bad.toml")
    elif info == "json":
        json.loads(body)
    elif info == "sql":
        import duckdb

        folder = work / "outputs" / "seed-llama3-8b-h100"
        config = {"file_search_path": f"{folder},{work}"}
        with duckdb.connect(str(folder / "sweep.duckdb"), read_only=True, config=config) as db:
            assert db.execute(body).fetchall() is not None


def test_the_site_builds_strictly_with_every_page(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra (in the test extra) builds the site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    site = tmp_path / "site"
    for page in (ROOT / "docs").glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), page.name
    outputs = (site / "outputs" / "index.html").read_text("utf-8")
    config = (site / "config" / "index.html").read_text("utf-8")
    assert "generated:" not in outputs + config  # the markers were filled
    _every_generated_row_is_there(outputs, config)


def _every_generated_row_is_there(outputs: str, config: str) -> None:
    from sweeps.config.reference import config_reference
    from sweeps.export.columns import column_reference

    columns = re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", column_reference(), flags=re.M)
    assert len(columns) > 100
    for column, _unit in columns:
        assert f"<code>{column}</code>" in outputs, column
    keys = re.findall(r"^\| `([^`]+)` \|", config_reference(), flags=re.M)
    assert "axes.batch" in keys
    assert "serving.arrival_rate" in keys
    for key in keys:
        assert f"<code>{key.replace('<', '&lt;').replace('>', '&gt;')}</code>" in config, key
