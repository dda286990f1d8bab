"""The CLI in a real (pseudo-)terminal at 80 and 200 columns, and piped (issue 16).

In a terminal: no line longer than the terminal, the progress bars drawn and then gone (no
stale line), the summary fitted to the width. Piped: stdout is the table or the JSON document
alone, plain text; stderr carries the rest.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.grid.memory import BASE_BYTES

from .conftest import ROOT
from .terminal import Screen, run_in_terminal

WIDE = """
[sweep]
name = "wide"
title = "Two models on three devices"
[axes]
model = ["llama-3-8b", "llama-3-70b"]
hardware = ["h100-sxm", "h200", "a100-80gb"]
batch = [1, 8, 64, 512]
context = [512, 4096, 32768]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = ["ceiling"]
formats = ["html"]
grid = "none"
"""
PROGRESS = ("computing", "writing figures", "summarizing", "━", "⠋", "⠙", "⠹")
"""What only a progress bar shows: none of it may stay on the screen."""


def env() -> dict[str, str]:
    environment = dict(os.environ, TERM="xterm-256color", PYTHONPATH=str(ROOT))
    environment.pop("NO_COLOR", None)
    environment.pop("COLUMNS", None)
    return environment


def sweeps(*args: str) -> list[str]:
    return [sys.executable, "-m", "sweeps", *args]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "wide.toml"
    path.write_text(WIDE, encoding="utf-8")
    return path


COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-9]|9[0-7]|38;)[0-9;]*m")
"""An SGR sequence that sets a foreground colour."""


@pytest.mark.parametrize(("width", "no_color"), [(80, False), (200, True)])
def test_a_run_fits_the_terminal_and_leaves_no_progress_line(
    config: Path, tmp_path: Path, width: int, no_color: bool
) -> None:
    environment = {**env(), "NO_COLOR": "1"} if no_color else env()
    session = run_in_terminal(
        sweeps("run", str(config), "--out", "out"), width, environment, str(tmp_path)
    )
    lines = session.screen.text()
    assert session.code == 0, "\n".join(lines)
    assert session.screen.wraps == 0  # no line longer than the terminal
    assert max(len(line) for line in lines) <= width
    assert "writing figures" in session.raw  # a bar per phase was drawn ...
    assert "computing the grid" in session.raw
    assert "writing decode.parquet" in session.raw  # ... one per table file
    stale = [line for line in lines if any(mark in line for mark in PROGRESS)]
    assert not stale, stale  # ... and removed
    assert lines[0] == "Two models on three devices: decode summary"
    assert sum(line.startswith("llama-3-") for line in lines) == 36  # 2 x 3 x 3 x 2
    assert any(line.startswith("wrote ") and "out/wide/ (decode 144 rows" in line for line in lines)
    assert bool(COLOUR.search(session.raw)) is not no_color  # colour in a terminal, unless NO_COLOR
    caption = " ".join(lines)
    if width == 80:  # too narrow for every column: the stated order, said in the caption
        assert "left out to fit the terminal: knee_batch, ridge_batch" in caption  # in order
        assert "(see --json)" in caption
    else:
        assert "left out" not in caption
        assert any("knee" in line and "ridge" in line for line in lines[:4])


def test_a_streamed_run_shows_its_chunks_and_ctrl_c_exits_130(tmp_path: Path) -> None:
    many = WIDE.replace(
        "batch = [1, 8, 64, 512]", "batch = { start = 1, stop = 4096, geometric = true }"
    )
    many = many.replace(
        '["llama-3-8b", "llama-3-70b"]', '["llama-3-8b", "llama-3-70b", "mistral-7b", "qwen2.5-7b"]'
    )
    path = tmp_path / "many.toml"
    path.write_text(many, encoding="utf-8")
    args = sweeps("run", str(path), "--out", "out", "--memory-budget", str(BASE_BYTES + 10_000))
    session = run_in_terminal(
        args, 80, env(), str(tmp_path), interrupt_when=lambda raw: "chunks" in raw
    )
    lines = session.screen.text()
    assert session.code == 130, "\n".join(lines)
    assert "computing and writing" in session.raw
    assert "chunks" in session.raw
    assert lines[-1] == "Interrupted."
    assert "Traceback" not in session.raw
    assert session.screen.wraps == 0
    assert not (tmp_path / "out" / "wide").exists()  # nothing half-written


def piped(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        sweeps(*args), capture_output=True, text=True, env=env(), cwd=cwd, check=False
    )


def test_piped_stdout_is_the_table_alone_and_stderr_the_rest(config: Path, tmp_path: Path) -> None:
    done = piped("run", str(config), "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr  # plain text, no bar
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    title, top, first, second, rule, *rows = [line for line in lines if line]
    assert title == "Two models on three devices: decode summary"
    assert top.split() == ["tokens/s", "tokens/s"]
    assert first.split() == [
        *("ceiling", "knee", "max", "ridge", "ms/token", "per", "device", "ms/token"),
        *("per", "device", "TTFT", "reaches", "90%"),
    ]
    assert second.split()[:4] == ["model", "hardware", "context", "kv"]
    assert set(rule) == {"-"}  # ASCII in a pipe: a line's bytes are its characters
    caption = rows.pop()
    assert caption.startswith("tp 1, kv heads 8, weights bf16, batches in whole sequences")
    assert len(rows) == 36
    assert all(row.startswith("llama-3-") for row in rows)
    assert "…" not in done.stdout  # piped, nothing is cut to a terminal's width
    assert "left out" not in done.stdout
    assert done.stderr.startswith("wrote ")
    assert "out/wide/ (decode 144 rows" in done.stderr.splitlines()[0]


def test_piped_json_is_the_document_alone(tmp_path: Path) -> None:
    config = tmp_path / "nofigures.toml"  # what is checked here needs no figures
    config.write_text(WIDE.replace('charts = ["ceiling"]', "charts = []"), encoding="utf-8")
    done = piped("run", str(config), "--out", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert len(document["runs"][0]["summary"]) == 36
    assert "wrote out/wide/" in done.stderr
    quiet = piped("run", str(config), "--out", "out", "--force", "--quiet", cwd=tmp_path)
    assert quiet.returncode == 0
    assert quiet.stderr == ""
    assert quiet.stdout.startswith("Two models on three devices: decode summary")
    verbose = piped("validate", str(config), "-v", cwd=tmp_path)
    assert verbose.stdout.startswith(f"{config}: ok: wide:")


def test_the_screen_model_wraps_erases_and_moves_as_a_terminal() -> None:
    screen = Screen(3)
    screen.feed("abc\r\ndef")  # exactly the width: no wrap
    assert (screen.text(), screen.wraps) == (["abc", "def"], 0)
    screen.feed("g")  # one past the last column: a wrap
    assert (screen.text(), screen.wraps) == (["abc", "def", "g"], 1)
    bar = Screen(20)
    bar.feed("line\r\nbar 1\rbar 2\r\x1b[2K\x1b[1A\r\x1b[2Kdone\x1b[1;32m!\x1b[0m")
    assert bar.text() == ["done!"]


def test_piped_with_columns_fits_them_and_cuts_nothing(config: Path, tmp_path: Path) -> None:
    """``COLUMNS=80 sweeps run ... | awk 'length > 80'`` prints nothing (issue 46, item 4)."""
    done = subprocess.run(
        sweeps("run", str(config), "--out", "out"),
        capture_output=True,
        env={**env(), "COLUMNS": "80"},
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []  # bytes, as awk counts them
    text = done.stdout.decode("utf-8")
    assert "…" not in text
    rows = [line.split() for line in text.splitlines() if line.startswith("llama-3-")]
    assert len(rows) == 36
    assert {row[1] for row in rows} == {"a100-80gb", "h100-sxm", "h200"}  # ids whole
    assert "left out to fit the terminal: knee_batch" in " ".join(text.split())


@pytest.mark.parametrize("what", ["hardware", "models", "dtypes"])
def test_the_catalog_at_80_columns_cuts_no_id(tmp_path: Path, what: str) -> None:
    from sweeps.cli.render_catalog import catalog_rows

    session = run_in_terminal(sweeps("list", what), 80, env(), str(tmp_path))
    assert session.code == 0
    screen = "\n".join(session.screen.text())
    assert "…" not in screen
    key = "name" if what == "dtypes" else "id"
    words = set(screen.split())
    assert all(row[key] in words for row in catalog_rows(what))


@pytest.mark.parametrize("what", ["hardware", "models"])
def test_the_catalog_fits_80_columns(tmp_path: Path, what: str) -> None:
    session = run_in_terminal(sweeps("list", what), 80, env(), str(tmp_path))
    assert session.code == 0
    assert session.screen.wraps == 0
    lines = session.screen.text()
    assert lines[0] == f"catalog: {what}"
    assert "sources:" in lines
