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
from contextlib import contextmanager, suppress
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
        MissingExtraError,
        OutputExistsError,
    )

    bad_input = (
        BadArguments,
        ConfigError,
        CatalogError,
        ImportModelError,
        MeasurementsError,
        MissingExtraError,
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


class StdoutFailed(OSError):
    """A write to stdout failed (closed, a broken pipe, a full device): not a file's."""


class _Watched:
    """stdout, every write and flush of which turns an ``OSError`` into ``StdoutFailed``:
    the error path then knows the stream, not a result file, failed."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as error:
            raise StdoutFailed(error.errno, error.strerror) from error

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise StdoutFailed(error.errno, error.strerror) from error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _stdout_failed(error: OSError) -> bool:
    """Whether ``error`` is stdout's (closed, a broken pipe, a full device), not a file's."""
    from sweeps.cli.console import StreamClosed

    return isinstance(error, StreamClosed | StdoutFailed)


@contextmanager
def _watched_stdout() -> Iterator[None]:
    """``sys.stdout`` watched (``_Watched``) inside, as it was after."""
    before = sys.stdout
    if before is not None and not isinstance(before, _Watched):
        sys.stdout = _Watched(before)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _Watched):
            sys.stdout = before


def _stream_problem(error: OSError) -> str:
    """What went wrong with stdout, in words (never "the disk is full; choose --out")."""
    known = {
        errno.EPIPE: "the reader went away (a broken pipe)",
        errno.ENOSPC: "the device it writes to is full",
        errno.EBADF: "it is closed",
    }
    return known.get(error.errno or 0) or str(error.strerror or error)


def _quiet_stdout() -> None:
    """Point stdout at the null device: the interpreter's last flush at exit then has
    nothing to fail on (else an "Exception ignored" traceback after the message)."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        stream = sys.stdout
        if stream is not None:
            with suppress(OSError, ValueError):
                os.dup2(null, stream.fileno())
        sys.stdout = open(null, "w", encoding="utf-8")  # noqa: SIM115 - lives to the exit
    except OSError:
        pass


def error_line(text: str) -> None:
    """Print ``Error: text`` on stderr (the one spelling of a failure)."""
    from sweeps.cli.console import printable

    click.echo(f"Error: {printable(text)}", err=True)


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


def _line(number: int) -> str:
    """What the command says as a signal ends it."""
    name = signal.Signals(number).name
    if number == signal.SIGINT:
        return "\nInterrupted."
    return f"\n{HANDLED_SIGNALS.get(name, name)} ({name}): stopped."


def _unwind(number: int) -> None:
    """Raised in the main thread by the first signal: Ctrl-C's ``KeyboardInterrupt``, or
    ``Stopped`` for SIGTERM and SIGHUP (the rest is ``sweeps.signals``)."""
    if number == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(number)


@contextmanager
def _signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP stop the command (``sweeps.signals.handled``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from sweeps import signals

    names = ("SIGINT", *HANDLED_SIGNALS)
    numbers = [getattr(signal, name) for name in names if hasattr(signal, name)]
    with signals.handled(numbers, _unwind, lambda n: click.echo(_line(n), err=True)):
        yield


@contextmanager
def errors() -> Iterator[None]:
    """Map every expected failure inside to its ``Error:`` line and exit code."""
    try:
        with _signals(), _watched_stdout():
            yield
            if sys.stdout is not None:  # a reader gone (`| head`) shows here, not at exit
                sys.stdout.flush()
    except SweepsError as error:
        fail(_message(error), _exit_code(error))
    except BrokenPipeError:  # `sweeps run CONFIG | head -1`: the reader has what it wanted
        quiet_broken_pipe()
    except OSError as error:  # the disk, the folder, the network: the run failed, not the input
        if _stdout_failed(error):
            if error.errno == errno.EPIPE:  # the reader has what it wanted (`| head`)
                quiet_broken_pipe()
            _quiet_stdout()
            fail(f"stdout: {_stream_problem(error)}; the results were not all written", EXIT_FAILED)
        fail(os_message(error), EXIT_FAILED)
    except KeyboardInterrupt as stopped:
        from sweeps import signals

        number = stopped.number if isinstance(stopped, Stopped) else signal.SIGINT
        signals.say_once(lambda: click.echo(_line(number), err=True))
        sys.exit(128 + number)


def quiet_broken_pipe() -> None:
    """Exit 0 without a word once stdout's reader has gone (``| head``): what is left to
    print has no reader, and Python's own flush at exit must not complain either."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file descriptor (a test's capture)
        pass
    sys.exit(0)


def handled(function: F) -> F:
    """A command whose failures go through ``errors`` (the one mapping of every command)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with errors():
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
