"""The generated tables in the repository's Markdown are those of today's schema, columns,
chart kinds and API: ``scripts/generate_docs.py --check`` finds nothing stale, and finds a
page whose block was edited by hand or fell behind its source."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import generate_docs


def _check() -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_docs.py"), "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_pages_hold_the_generated_tables_of_today() -> None:
    done = _check()
    assert done.returncode == 0, done.stderr


def test_each_block_is_in_its_page_once_between_markers() -> None:
    for name, (page, _) in generate_docs.GENERATED.items():
        text = (ROOT / "docs" / page).read_text("utf-8")
        assert text.count(f"<!-- generated: {name} -->") == 1, (page, name)
        assert text.count(f"<!-- /generated: {name} -->") == 1, (page, name)


def test_every_table_has_its_own_heading() -> None:
    """The data dictionary is linkable: a heading per table, and every column is under one."""
    from sweeps.export.parquet import TABLES

    page = (ROOT / "docs" / "outputs.md").read_text("utf-8")
    headings = re.findall(r"^### `(\w+)\.parquet`$", page, re.M)
    assert set(TABLES) <= set(headings)
    assert len(headings) == len(set(headings))


@pytest.fixture
def docs_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", copy)
    monkeypatch.setattr(generate_docs, "DOCS", copy)
    return copy


def test_a_stale_or_hand_edited_block_is_found_and_rewritten(docs_copy: Path) -> None:
    assert generate_docs.stale_pages(write=False) == []
    outputs = docs_copy / "outputs.md"
    fresh = outputs.read_text("utf-8")
    outputs.write_text(fresh.replace("| `batch` | sequence |", "| `batch` | token |", 1), "utf-8")
    config = docs_copy / "config.md"
    config.write_text(
        re.sub(r"^\| `axes\.batch` .*\n", "", config.read_text("utf-8"), count=1, flags=re.M)
    )
    assert generate_docs.stale_pages(write=False) == ["docs/config.md", "docs/outputs.md"]
    assert generate_docs.main(["--check"]) == 1
    assert generate_docs.main([]) == 0
    assert outputs.read_text("utf-8") == fresh
    assert generate_docs.stale_pages(write=False) == []


def test_a_new_block_gets_its_closing_marker(docs_copy: Path) -> None:
    page = docs_copy / "charts.md"
    text = page.read_text("utf-8")
    start = text.index("<!-- generated: chart-kinds -->")
    end = text.index("<!-- /generated: chart-kinds -->") + len("<!-- /generated: chart-kinds -->")
    page.write_text(text[:start] + "<!-- generated: chart-kinds -->" + text[end:], "utf-8")
    assert generate_docs.stale_pages(write=True) == ["docs/charts.md"]
    assert page.read_text("utf-8") == text


def test_the_site_shows_the_tables_without_the_markers() -> None:
    text = "a\n\n<!-- generated: chart-kinds -->\n"
    filled = generate_docs.strip_markers(generate_docs.fill(text))
    assert "generated:" not in filled
    assert "| kind | report section |" in filled
