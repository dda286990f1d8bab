"""A command that stops when asked: SIGINT, SIGTERM or SIGHUP end any phase within ``GRACE``.

The first signal sets ``STOPPING`` (threads that draw, write or wait look at it and give up
instead of going on or falling back), asks every process the command started (drawing
processes, a local dask cluster's, ``bench``'s cold runs, and theirs) to end with SIGTERM, and
lets the main thread unwind as Ctrl-C does: every ``finally`` runs and the staging folder is
removed (``sweeps.export.atomic``). Whatever is still running ``GRACE`` seconds later (a thread
in a long C call, a pool waiting for its last task) is not waited for: a timer kills what is
left of the processes, removes the staging folders registered here (``staging``), says the
command's one line and ends the process. A second signal ends it at once and quietly (the
processes killed, no traceback); a staging folder it leaves carries the process id, and the
next run in that output folder removes it.

The signals are seen by a thread of their own (``handled``): a signal reaches any thread of
the process, and a main thread blocked on a lock (a pool's join, a future) would not run
Python's handler until that lock is free. Ground floor: imports nothing of ``sweeps``. The
command installs the handlers (``sweeps.cli.errors``); a library call in someone else's
process never does.
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

GRACE = 1.0
"""Seconds the first signal leaves the command to unwind by itself before it is ended [s]
(the command's promise is two seconds: the rest is for the timer's own work on a busy
machine)."""

STOPPING = threading.Event()
"""Set by the first signal: whatever loops or waits should stop rather than go on."""

REARM = 0.005
"""Seconds after a swallowed stop before it is raised again (``_rearmed``) [s]."""

_STAGING: set[Path] = set()
_SAID = threading.Event()
_RETRIPPED: list[int] = []
"""Signals this process tripped again itself (``_rearmed``): the watcher skips their bytes."""


class Stopping(Exception):
    """Raised in a worker thread that finds ``STOPPING`` set (its result is not wanted)."""


def check() -> None:
    """Raise ``Stopping`` once a signal asked the command to stop."""
    if STOPPING.is_set():
        msg = "the command was asked to stop"
        raise Stopping(msg)


@contextmanager
def staging(folder: Path) -> Iterator[Path]:
    """Register ``folder`` (a run's staging folder) for removal if the command is ended."""
    _STAGING.add(folder)
    try:
        yield folder
    finally:
        _STAGING.discard(folder)


def descendants(pid: int | None = None) -> list[int]:
    """The processes below ``pid`` (default: this one), children first; from ``/proc``
    (Linux), none elsewhere."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [os.getpid() if pid is None else pid]
    while todo:
        children = parents.get(todo.pop(0), [])
        found += children
        todo += children
    return found


def signal_descendants(number: int) -> None:
    """Send ``number`` to every process below this one (those gone already are skipped)."""
    for pid in descendants():
        with contextlib.suppress(OSError):
            os.kill(pid, number)


def first(number: int, say: Callable[[], None]) -> None:
    """The first signal: set ``STOPPING``, SIGTERM the processes below, and end the command
    ``GRACE`` seconds from now if it has not ended by then (``say`` prints its line)."""
    STOPPING.set()
    signal_descendants(signal.SIGTERM)
    timer = threading.Timer(GRACE, _end, args=(number, say))
    timer.daemon = True
    timer.start()


@contextmanager
def handled(
    numbers: list[int], unwind: Callable[[int], None], say: Callable[[int], None]
) -> Iterator[None]:
    """Inside, each of ``numbers`` stops the command: ``unwind(number)`` raises in the main
    thread (once, when it next runs Python), and a thread of its own, woken by the signal
    whatever the main thread is waiting on (``signal.set_wakeup_fd``), starts the stop
    (``first``) and ends the command at once on a second signal (``again``). Only in the
    main thread; the previous handlers and wakeup file after."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    raised = threading.Event()
    _RETRIPPED.clear()  # an earlier command's, in the same process: not this one's

    def handler(number: int, frame: object) -> None:
        if not raised.is_set():
            raised.set()
            unwind(number)

    before = {number: signal.signal(number, handler) for number in numbers}
    wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    hook = sys.unraisablehook
    sys.unraisablehook = _rearmed(raised, hook)
    watcher = threading.Thread(target=_watch, args=(read, say), name="sweeps-signals")
    watcher.daemon = True
    watcher.start()
    try:
        yield
    finally:
        if not (raised.is_set() or STOPPING.is_set()):  # ending: a second signal stays quiet
            sys.unraisablehook = hook
            signal.set_wakeup_fd(wakeup)
            for number, previous in before.items():
                signal.signal(number, previous)
            os.close(write)  # the watcher reads the end of its pipe and returns


def _rearmed(raised: threading.Event, hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """An unraisable hook that raises the stop again where Python swallowed it: a signal
    handled inside a weakref callback or a ``__del__`` (an import's module lock, say) has its
    exception printed and dropped, and the main thread would go on until ``GRACE`` ends it.
    The signal is tripped once more (``_thread.interrupt_main``), quietly, and so again until
    it lands where it can unwind; anything else goes to ``hook``."""

    def rearm(unraisable: Any) -> object:
        error = unraisable.exc_value
        if not (isinstance(error, KeyboardInterrupt) and raised.is_set()):
            return hook(unraisable)
        number = getattr(error, "number", signal.SIGINT)
        _RETRIPPED.append(number)
        raised.clear()  # tripped a moment later from a thread: here, the hook would swallow it
        timer = threading.Timer(REARM, _thread.interrupt_main, args=(number,))
        timer.daemon = True
        timer.start()
        return None

    return rearm


def _watch(read: int, say: Callable[[int], None]) -> None:
    """The signals' own thread: the first starts the stop, a second ends the command (a
    signal this process tripped again itself is not a second)."""
    seen = 0
    with os.fdopen(read, "rb", buffering=0) as pipe:
        while byte := pipe.read(1):
            number = byte[0]
            if number in _RETRIPPED:
                _RETRIPPED.remove(number)
                continue
            seen += 1
            if seen == 1:
                first(number, functools.partial(say, number))
            else:
                again(number)


def say_once(say: Callable[[], None]) -> None:
    """Call ``say`` unless the command's stop line was said already."""
    if not _SAID.is_set():
        _SAID.set()
        say()


def _end(number: int, say: Callable[[], None]) -> None:
    """The grace is over: kill what is left below, remove the staging, say it, exit."""
    signal_descendants(signal.SIGKILL)
    for folder in list(_STAGING):
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):  # the hidden folder of stagings, once empty
            folder.parent.rmdir()
    with contextlib.suppress(Exception):
        say_once(say)
        sys.stderr.flush()
    os._exit(128 + number)


def again(number: int) -> None:
    """A second signal: kill the processes below and exit now, quietly."""
    signal_descendants(signal.SIGKILL)
    os._exit(128 + number)
