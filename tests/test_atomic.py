"""Result folders: names that cannot escape ``out``, staging where no glob finds it, and a
swap of old and new result that cannot lose the old one (issue 15, item 1)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.config import parse_config
from sweeps.errors import ConfigError
from sweeps.export.atomic import STAGING, atomic_folder, remove_stale, result_folder
from sweeps.pipeline import run_to_folder

CONFIG = """
[sweep]
name = "good"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 8]
context = [1024]
[outputs]
charts = []
grid = "none"
"""


@pytest.fixture
def earlier(tmp_path):
    """An earlier result in the out folder, and its bytes file by file."""
    sweep = parse_config(CONFIG, "good.toml")
    run_to_folder(sweep, tmp_path)
    return sweep, _snapshot(tmp_path)


def _snapshot(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and STAGING not in p.parts
    }


@pytest.mark.parametrize(
    "name", [".", "..", "t\n", ".good.tmp-123-xx", "good.tmp-1-x/../..", "a/b", "x" * 101, "", "-a"]
)
def test_names_that_would_escape_are_refused(earlier, tmp_path, name):
    sweep, before = earlier
    bad = dataclasses.replace(sweep, name=name)
    with pytest.raises(
        ConfigError, match=r"^sweep\.name: .* is not a valid name: .*a name starts with a-z"
    ):
        run_to_folder(bad, tmp_path, force=True)
    assert _snapshot(tmp_path) == before


def test_a_name_of_100_characters_is_a_folder_inside_out(tmp_path):
    assert result_folder(tmp_path, "a" * 100) == tmp_path.resolve() / ("a" * 100)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_backup_left_between_the_two_renames_is_moved_back(earlier, tmp_path):
    """A run killed after moving the old result aside and before moving the new one in
    leaves the old result only in its backup: the next run puts it back, not away."""
    sweep, before = earlier
    backup = tmp_path / STAGING / f"good.old-{_dead_pid()}-abc123"
    backup.mkdir(parents=True)
    os.replace(tmp_path / "good", backup / "old")
    half = tmp_path / STAGING / f"good.tmp-{_dead_pid()}-def456"
    (half / "decode").mkdir(parents=True)
    (half / "decode" / "partial.parquet").write_bytes(b"PAR1")
    other = dataclasses.replace(sweep, name="other")
    run_to_folder(other, tmp_path)  # any sweep's run in the folder
    assert {k: v for k, v in _snapshot(tmp_path).items() if k.startswith("good")} == before
    assert not (tmp_path / STAGING).exists()  # emptied, then removed


def test_a_live_runs_staging_folder_is_left_alone(tmp_path):
    mine = tmp_path / STAGING / f"good.tmp-{os.getpid()}-xyz"
    mine.mkdir(parents=True)
    assert remove_stale(tmp_path) == []
    assert mine.is_dir()


def test_staging_is_out_of_reach_of_user_globs(tmp_path):
    with atomic_folder(tmp_path / "good") as staging:
        (staging / "decode.parquet").write_bytes(b"PAR1")
        assert staging.parent == tmp_path / STAGING
        assert list(tmp_path.glob("*/decode.parquet")) == []
    assert list(tmp_path.glob("*/decode.parquet")) == [tmp_path / "good" / "decode.parquet"]


def test_a_stop_before_the_staging_exists_leaves_no_hidden_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal raises wherever the main thread is: once raised while stale stagings were
    cleared (the hidden folder made, the run's own not yet), it left ``.sweeps-staging``
    behind (found by tests/test_signals.py's calibration stop, now and then)."""
    from sweeps.export import atomic

    def stopped(out: Path) -> list[Path]:
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic, "remove_stale", stopped)
    with pytest.raises(KeyboardInterrupt), atomic.atomic_folder(tmp_path / "result"):
        pass
    assert not (tmp_path / atomic.STAGING).exists()
    assert not (tmp_path / "result").exists()


def test_a_stop_right_after_the_staging_is_made_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a signal lands between mkdtemp making this run's staging and the guard around it
    import tempfile

    from sweeps.export import atomic

    made = tempfile.mkdtemp

    def stopped(*args: object, **kwargs: object) -> str:
        made(*args, **kwargs)  # type: ignore[call-overload]
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.tempfile, "mkdtemp", stopped)
    with pytest.raises(KeyboardInterrupt), atomic_folder(tmp_path / "run"):
        pass
    assert not (tmp_path / STAGING).exists()
    assert list(tmp_path.iterdir()) == []
