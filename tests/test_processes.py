"""The command's own process settings (``sweeps.processes``): its environment, its start and
its end, as the command (``sweeps.cli``) and the bench apply them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.processes import PROCESS_ENV


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


def _libc() -> str:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        return ""


def _mallinfo2() -> bool:
    import ctypes

    return hasattr(ctypes.CDLL(None), "mallinfo2")  # glibc 2.33 and later


_GLIBC = _libc().startswith("glibc") and _mallinfo2()
_ALLOCATION = """
import ctypes, sys, threading

class Info(ctypes.Structure):  # glibc's struct mallinfo2: ten size_t fields
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "start":
    from sweeps.processes import start_process

    start_process()
before = libc.mallinfo2()
block = libc.malloc(20 << 20)  # a model's array: 20 MiB
mapped = libc.mallinfo2().hblkhd - before.hblkhd
libc.free(block)
kept = libc.mallinfo2().fordblks - before.fordblks
held = []
thread = threading.Thread(target=lambda: held.append(libc.malloc(1 << 20)))
thread.start()
thread.join()
libc.malloc_stats()  # one "Arena N:" line per arena, to standard error
print(mapped >> 20, kept >> 20)
"""


def _allocation(*arguments: str, **environment: str) -> tuple[int, int, int]:
    """A 20 MiB block allocated and freed, then 1 MiB on a second thread, in a fresh process:
    the MiB mapped for the block alone, the MiB free in the heap after it, the arenas."""
    done = subprocess.run(
        [sys.executable, "-c", _ALLOCATION, *arguments],
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | environment,
    )
    assert done.returncode == 0, done.stderr
    mapped, kept = map(int, done.stdout.split())
    return mapped, kept, done.stderr.count("Arena ")


@pytest.mark.skipif(
    not _GLIBC, reason="the allocator settings are glibc's (read back by mallinfo2, glibc 2.33+)"
)
def test_start_process_keeps_a_models_memory_in_one_arena() -> None:
    """Without the settings, glibc maps a 20 MiB block apart and unmaps it when freed, and a
    second thread gets an arena of its own; with them, the block comes from the heap and
    stays there when freed (for the next model's arrays), in the one arena of every thread.
    A setting the user gives at start-up is kept."""
    assert _allocation("bare") == (20, 0, 2)
    mapped, kept, arenas = _allocation("start")
    assert (mapped, arenas) == (0, 1)
    assert kept >= 20
    user = _allocation("start", MALLOC_MMAP_THRESHOLD_="131072", MALLOC_ARENA_MAX="2")
    assert (user[0], user[2]) == (20, 2)
    tunables = _allocation("start", GLIBC_TUNABLES="glibc.malloc.arena_max=2")
    assert (tunables[0], tunables[2]) == (20, 2)


def test_the_command_and_the_bench_start_their_processes() -> None:
    """The console script, the bench's cold run and its libraries' writes each call
    ``start_process`` before any work (so the reference runs under the same settings)."""
    from sweeps.bench.run_path import POLARS_WRITE, RUN

    code = (
        "import sys, sweeps.processes\n"
        "sweeps.processes.start_process = lambda: print('started')\n"
        "sys.argv = ['sweeps', '--version']\n"
        "from sweeps.cli.main import main\n"
        "main()\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "started"
    for script in (RUN, POLARS_WRITE):
        head = script[: script.index("\nstart_process()")]
        assert "from sweeps.processes import" in head
        assert "set_environment()" in head
        assert "load_config" not in head  # before any work


def test_a_stdout_that_cannot_encode_the_title_escapes_it(tmp_path: Path) -> None:
    """A title in UTF-8 on an ASCII stdout (``PYTHONIOENCODING=ascii``) ended in a traceback
    after the result was written (exit 0 beside it); the command escapes what its streams
    cannot encode and ends cleanly."""
    config = tmp_path / "uni.toml"
    config.write_text(
        '[sweep]\nname = "uni"\ntitle = "D\u00e9codage \u2014 8B"\n'
        '[axes]\nmodel = ["llama-3-8b"]\nhardware = ["h100-sxm"]\nbatch = [1, 8]\n'
        "context = [512]\n[outputs]\ncharts = []\n",
        encoding="utf-8",
    )
    code = (
        "import sys\n"
        f"sys.argv = ['sweeps', 'run', {str(config)!r}, '--out', {str(tmp_path / 'out')!r}]\n"
        "from sweeps.cli.main import main\n"
        "main()\n"
    )
    done = _python(code, PYTHONIOENCODING="ascii")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "UnicodeEncodeError" not in done.stderr
    assert "D\\xe9codage \\u2014 8B" in done.stdout
    assert (tmp_path / "out" / "uni" / "manifest.json").is_file()
