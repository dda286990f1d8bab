"""The one place that turns a failure into ``Error: ...`` on stderr and an exit code.

Exit codes: 0 success; 1 a run that failed (the disk is full, a folder cannot be written, a
dask scheduler does not answer) or a measurement that beats its bound (``sweeps calibrate``);
2 bad input, reported before any work (a config, a catalog id, a ``config.json``, a
measurements file, an argument, an output folder that exists without ``--force``); 130
interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP): each signal ends a run
the same way, its staging folder removed and a line saying so. None of these prints a
traceback: the line names the thing and what to do.
"""

from __future__ import annotations

import errno
import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from sweeps.errors import SweepsError

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
"""128 + SIGINT; a signal ``n`` handled below ends the command with ``128 + n``."""

HANDLED_SIGNALS = {"SIGTERM": "Terminated", "SIGHUP": "Hung up"}
"""Signals that end a command like Ctrl-C (what each one's line says); SIGINT is Python's own."""

F = TypeVar("F", bound=Callable[..., Any])


class BadArguments(SweepsError):
    """Arguments that cannot go together, or that name something unusable (exit 2)."""


class RunFailed(SweepsError):
    """A run that started and could not finish for a reason outside the input (exit 1)."""


_OS_HINTS = {
    errno.ENOSPC: "the disk is full; free some space or choose {elsewhere}",
    errno.EDQUOT: "the disk quota is used up; free some space or choose {elsewhere}",
    errno.EACCES: "permission denied; choose {elsewhere} that you can write",
    errno.EPERM: "permission denied; choose {elsewhere} that you can write",
    errno.EROFS: "the file system is read-only; choose {elsewhere} that you can write",
    errno.ENOTDIR: "a file stands where a folder is needed; choose {elsewhere}",
}
"""What to say, and to do, for the ``OSError`` numbers a run meets on its output folder."""


def _elsewhere() -> str:
    """``another --out`` in a command that has one, else ``another folder``."""
    ctx = click.get_current_context(silent=True)
    return "another --out" if ctx is not None and "out" in ctx.params else "another folder"


def _exit_code(error: SweepsError) -> int:
    from sweeps.errors import (
        CatalogError,
        ConfigError,
        ImportModelError,
        MeasurementsError,
        OutputExistsError,
    )

    bad_input = (
        BadArguments,
        ConfigError,
        CatalogError,
        ImportModelError,
        MeasurementsError,
        OutputExistsError,
    )
    return EXIT_BAD_INPUT if isinstance(error, bad_input) else EXIT_FAILED


def _message(error: SweepsError) -> str:
    from sweeps.errors import OutputExistsError

    text = str(error)
    if isinstance(error, OutputExistsError):  # the library says "when asked to": how, here
        text = text.replace(
            "allowed: replacing it when asked to (force)", "pass --force to replace it"
        )
    return text


def os_message(error: OSError) -> str:
    """``<file>: <what happened>; <what to do>`` for an ``OSError`` of a run."""
    where = error.filename or ""
    known = _OS_HINTS.get(error.errno or 0)
    hint = known.format(elsewhere=_elsewhere()) if known else error.strerror or str(error)
    return f"{where}: {hint}" if where else hint


def error_line(text: str) -> None:
    """Print ``Error: text`` on stderr (the one spelling of a failure)."""
    click.echo(f"Error: {text}", err=True)


def fail(text: str, code: int) -> None:
    """Print ``Error: text`` on stderr and exit with ``code``."""
    error_line(text)
    sys.exit(code)


class Stopped(KeyboardInterrupt):
    """A handled signal (SIGTERM, SIGHUP), raised where the main thread is, as Ctrl-C is:
    every ``finally`` and ``except BaseException`` on the way out runs (staging removed)."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def _stop(number: int, frame: Any) -> None:
    raise Stopped(number)


@contextmanager
def _signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Stopped`` inside; the previous handlers after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    numbers = [getattr(signal, name) for name in HANDLED_SIGNALS if hasattr(signal, name)]
    before = {number: signal.signal(number, _stop) for number in numbers}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


@contextmanager
def errors() -> Iterator[None]:
    """Map every expected failure inside to its ``Error:`` line and exit code."""
    try:
        with _signals():
            yield
    except SweepsError as error:
        fail(_message(error), _exit_code(error))
    except OSError as error:  # the disk, the folder, the network: the run failed, not the input
        fail(os_message(error), EXIT_FAILED)
    except Stopped as stopped:
        name = signal.Signals(stopped.number).name
        click.echo(f"\n{HANDLED_SIGNALS.get(name, name)} ({name}): stopped.", err=True)
        sys.exit(128 + stopped.number)
    except KeyboardInterrupt:
        click.echo("\nInterrupted.", err=True)
        sys.exit(EXIT_INTERRUPTED)


def handled(function: F) -> F:
    """A command whose failures go through ``errors`` (the one mapping of every command)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with errors():
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
