"""``sweeps.signals``: SIGINT, SIGTERM and SIGHUP stop ``run`` (drawing figures),
``calibrate`` and ``bench`` within two seconds, no process of theirs left behind, no staging
folder, the earlier result as it was; a second signal ends the command at once, quietly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sweeps import signals

from .conftest import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

DRAWN = """
[sweep]
name = "drawn"
[axes]
model = ["llama-3-8b", "llama-3-70b", "mixtral-8x7b", "gemma-2-9b", "qwen2.5-7b", "qwen2.5-32b"]
hardware = ["h100-sxm", "mi300x", "a100-80gb"]
batch = { start = 1, stop = 64 }
[outputs]
formats = ["html", "png", "svg"]
grid = "none"
"""


def session(pid: int) -> list[int]:
    """The processes of session ``pid`` still alive (the command started with a session of
    its own: whatever it started, and theirs, is in it unless it left on purpose)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == pid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def stop(args: list[str], cwd: Path, ready: Callable[[], bool], sig: int) -> tuple[float, str, int]:
    """Start ``sweeps ARGS`` in a session of its own (stderr into ``cwd/stderr.txt``), wait
    until ``ready()``, send ``sig``: (seconds from the signal to its exit, its stderr, its
    exit code); asserts that nothing of its session is left."""
    with (cwd / "stderr.txt").open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "sweeps", *args],
            cwd=cwd,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120
    while not ready():
        assert process.poll() is None, (cwd / "stderr.txt").read_text()
        assert time.monotonic() < deadline, "never reached the phase to stop in"
        time.sleep(0.02)
    sent = time.monotonic()
    process.send_signal(sig)
    process.wait(timeout=30)
    took = time.monotonic() - sent
    err = (cwd / "stderr.txt").read_text()
    time.sleep(0.3)  # a process killed by the command is reaped by init, not at once
    assert session(process.pid) == [], err
    return took, err, process.returncode


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_drawing_figures_stops_within_two_seconds(tmp_path: Path, sig: int) -> None:
    (tmp_path / "drawn.toml").write_text(DRAWN, "utf-8")
    earlier = tmp_path / "out" / "drawn"
    earlier.mkdir(parents=True)
    (earlier / "manifest.json").write_text("{}\n", "utf-8")
    before = snapshot(earlier)
    staging = tmp_path / "out" / ".sweeps-staging"

    def drawing() -> bool:
        return any(staging.rglob("*.png")) if staging.exists() else False

    took, err, code = stop(["run", "drawn.toml", "--out", "out", "--force"], tmp_path, drawing, sig)
    assert took < 2.0, err
    assert code == 128 + sig
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] in ("Interrupted.", "Terminated (SIGTERM): stopped.")
    assert snapshot(earlier) == before
    assert not staging.exists(), list(staging.rglob("*"))[:5]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_calibration_stops_within_two_seconds(tmp_path: Path, sig: int) -> None:
    staging = tmp_path / "out" / ".sweeps-staging"
    took, err, code = stop(["calibrate", "--out", "out"], tmp_path, staging.exists, sig)
    assert took < 2.0, err
    assert code == 128 + sig
    assert "Traceback" not in err
    assert not staging.exists()
    assert not (tmp_path / "out" / "calibration").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_bench_stops_within_two_seconds(tmp_path: Path, sig: int) -> None:
    def measuring() -> bool:  # its first measurement begun
        return "measuring:" in (tmp_path / "stderr.txt").read_text()

    took, err, code = stop(["bench", "--quick"], tmp_path, measuring, sig)
    assert took < 2.0, err
    assert code == 128 + sig
    assert "Traceback" not in err


def test_a_second_signal_ends_at_once_and_quietly(tmp_path: Path) -> None:
    (tmp_path / "drawn.toml").write_text(DRAWN, "utf-8")
    staging = tmp_path / "out" / ".sweeps-staging"
    process = subprocess.Popen(
        [sys.executable, "-m", "sweeps", "run", "drawn.toml", "--out", "out"],
        cwd=tmp_path,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    while not (staging.exists() and any(staging.rglob("*.png"))):
        assert process.poll() is None
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGINT
    assert "Traceback" not in err
    time.sleep(0.3)
    assert session(process.pid) == []


def test_check_raises_once_stopping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signals, "STOPPING", __import__("threading").Event())
    signals.check()
    signals.STOPPING.set()
    with pytest.raises(signals.Stopping):
        signals.check()


def test_descendants_lists_the_processes_below() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys; subprocess.run(['sleep', '30'])"]
    )
    try:
        # the test process may hold other children (a worker of an earlier test's drawing):
        # the child's own subtree is checked, and that it is among this process's below
        deadline = time.monotonic() + 10
        while not signals.descendants(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        below, grandchildren = signals.descendants(), signals.descendants(child.pid)
        assert len(grandchildren) == 1
        assert below.index(child.pid) < below.index(grandchildren[0])  # children first
        assert signals.descendants(grandchildren[0]) == []
    finally:
        child.kill()
        child.wait()


SWALLOWED = """
import os, signal, sys, time, weakref
from sweeps import signals

def unwind(number):
    raise KeyboardInterrupt

class Held:
    pass

with signals.handled([signal.SIGINT], unwind, lambda n: print("ended", file=sys.stderr)):
    try:
        held = Held()
        # the signal's Python handler runs inside the weakref callback, where Python prints
        # and drops any exception: an import's module lock is one such place
        ref = weakref.ref(held, lambda _: os.kill(os.getpid(), signal.SIGINT))
        started = time.monotonic()
        del held
        while time.monotonic() - started < 5:
            time.sleep(0.01)
        print("went on")
    except KeyboardInterrupt:
        print(f"unwound {time.monotonic() - started:.3f}")
"""


def test_a_stop_swallowed_in_a_callback_is_raised_again() -> None:
    """A signal handled where Python drops exceptions (a weakref callback) still unwinds the
    main thread at once, not only when ``GRACE`` ends the process, and quietly."""
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    word, seconds = done.stdout.split()
    assert word == "unwound"
    assert float(seconds) < signals.GRACE
    assert "Exception ignored" not in done.stderr
    assert "ended" not in done.stderr  # the grace timer never ended it
