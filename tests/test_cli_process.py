"""The command's own process settings (``sweeps.cli``): its environment and its end."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sweeps.cli import PROCESS_ENV


def _python(code: str, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in PROCESS_ENV} | environment
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )


def test_process_env_set_before_numpy_unless_the_user_set_it() -> None:
    code = "import sweeps.cli, os, numpy; print(os.environ['NUMPY_MADVISE_HUGEPAGE'])"
    assert _python(code).stdout.strip() == "0"
    assert _python(code, NUMPY_MADVISE_HUGEPAGE="1").stdout.strip() == "1"


def test_command_ends_with_its_objects_frozen() -> None:
    """The console script's last act freezes the collector's objects (so the interpreter's
    shutdown skips its last full collection); an exit handler, run after it, sees them
    frozen, and the command's exit code is unchanged."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "sys.argv = ['sweeps', '--version']\n"
        "from sweeps.cli.main import main\n"
        "main()\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "frozen True"
    bad = _python(code.replace("'--version'", "'no-such-command'"))
    assert bad.returncode == 2
    assert bad.stdout.strip().splitlines()[-1] == "frozen True"


def test_bench_runs_under_the_command_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its cold runs get ``PROCESS_ENV`` themselves, not through this process's environment
    (which importing ``sweeps.cli`` has set)."""
    from sweeps.bench.run_path import _python as bench_python

    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    _, printed = bench_python(["-c", "import os; print(os.environ['NUMPY_MADVISE_HUGEPAGE'])"])
    assert printed.strip() == os.environ.get("NUMPY_MADVISE_HUGEPAGE", "0")
