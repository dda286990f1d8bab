"""Where the CLI writes: results on stdout, progress and status on stderr, at the real width.

A terminal gets its own width (never forced wider: a line longer than the terminal wraps and
leaves a stale copy on every refresh of a progress bar), colour unless ``NO_COLOR`` is set, and
transient progress bars. A pipe gets plain text (ASCII rules) at the table's natural width, so
nothing is cut, and no bar, unless ``COLUMNS`` names a width: then tables are laid out to fit
it, as on a terminal of that width (``COLUMNS=80 sweeps run ... | less``). ``--json`` prints
one document on stdout and nothing else there; ``--quiet`` keeps only the results; ``-v`` adds
timings and the plan.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

PIPE_WIDTH = 10_000
"""Width of a console that is not a terminal: a table is laid out at its natural width."""


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters but tab and newline: C0, DEL and C1 (ESC starts ANSI and OSC
sequences, which a terminal would obey: retitle the window, rewrite lines, hide text)."""


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline written out as ``\\xNN``:
    a user's string (a title, a path, a name in a file) never drives the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _safe_console() -> Any:
    """rich's ``Console`` whose text segments are ``printable``: only rich's own styles and
    control segments (the progress bars' cursor moves) reach the stream as escape codes."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def _render_buffer(self, buffer: Any) -> str:
            return str(
                super()._render_buffer(
                    Segment(printable(text), style, control) if not control else segment
                    for segment in buffer
                    for text, style, control in (segment,)
                )
            )

    return SafeConsole


def piped_width() -> int | None:
    """The width ``COLUMNS`` names for output that is not a terminal (None: unset or no
    positive whole number)."""
    text = os.environ.get("COLUMNS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def _console(stream: Any) -> Any:
    Console = _safe_console()

    terminal = _isatty(stream)
    return Console(
        file=stream,
        width=None if terminal else piped_width() or PIPE_WIDTH,
        no_color="NO_COLOR" in os.environ or not terminal,
        highlight=False,
        soft_wrap=False,
        emoji=False,
    )


def _isatty(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (a closed or missing stream is not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _pipe_box() -> Any:
    """``SIMPLE_HEAD`` in ASCII: a pipe's line is as many bytes as characters, so ``awk
    'length > 80'`` and ``cut -c`` read it as a person does."""
    from rich.box import Box

    return Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


PIPE_BOX = _pipe_box()
"""The rule under a table's header where the output is no terminal."""


def table(title: str, caption: str | None = None) -> Any:
    """A rich table in the house style: a rule under the header, no vertical borders (three
    columns of a terminal's width saved per column), plain-text title and caption.

    Title and caption are lines of their own above and below the table (``heading`` and
    ``footing``), wrapped at the console's width rather than the table's: a long path never
    breaks them over a narrow table's lines.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    class Titled(Table):
        heading: Text
        footing: Text | None

        def __rich_console__(self, console: Any, options: Any) -> Any:
            self.box = box.SIMPLE_HEAD if console.is_terminal else PIPE_BOX
            yield self.heading
            yield from super().__rich_console__(console, options)
            if self.footing is not None:
                yield self.footing

    grid = Titled(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    grid.heading = Text(title)
    grid.footing = Text(caption) if caption else None
    return grid


def _iso(value: object) -> str:
    """A date (a price's ``price_as_of``) in a JSON document: ISO 8601, as the config writes it."""
    if isinstance(value, datetime.date):
        return value.isoformat()
    msg = f"{type(value).__name__} is not JSON serializable"
    raise TypeError(msg)


class StreamClosed(OSError):
    """stdout is closed (``>&-``): there is nowhere to write the results."""


def stdout() -> Any:
    """``sys.stdout``, or ``StreamClosed`` where the process has none."""
    if sys.stdout is None:
        msg = "closed"
        raise StreamClosed(msg)
    return sys.stdout


@dataclass
class Output:
    """The two streams of one command and how much it says: ``json``, ``quiet``, ``verbose``."""

    json: bool = False
    quiet: bool = False
    verbose: int = 0
    _out: Any = field(default=None, repr=False)
    _err: Any = field(default=None, repr=False)

    @property
    def out(self) -> Any:
        """The rich console on stdout (results)."""
        if self._out is None:
            self._out = _console(stdout())
        return self._out

    @property
    def err(self) -> Any:
        """The rich console on stderr (progress, status)."""
        if self._err is None:
            self._err = _console(sys.stderr)
        return self._err

    @property
    def width(self) -> int | None:
        """The terminal's width for stdout, or ``COLUMNS`` for a pipe, or ``None`` (any
        width: a pipe without ``COLUMNS``)."""
        return self.out.width if self.out.is_terminal else piped_width()

    def result(self, renderable: Any) -> None:
        """A result (a table, a line): stdout; not with ``--json``."""
        if not self.json:
            self.out.print(renderable, crop=False, markup=False)

    def document(self, document: object) -> None:
        """The ``--json`` document: stdout, one JSON value."""
        stream = stdout()
        stream.write(json.dumps(document, indent=2, default=_iso) + "\n")
        stream.flush()

    def status(self, text: str, level: int = 0) -> None:
        """A status line on stderr: not with ``--quiet``; ``level`` 1 only with ``-v``."""
        if not self.quiet and self.verbose >= level:
            self.err.print(text, markup=False, highlight=False)

    @contextmanager
    def phases(self, name: str) -> Iterator[Phases]:
        """Progress bars on stderr for the phases of a run of ``name`` (none when piped)."""
        if self.quiet or not self.err.is_terminal:
            yield Phases(None, name)
            return
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column

        columns = (
            SpinnerColumn(),
            TextColumn("{task.description}", table_column=Column(no_wrap=True, ratio=1)),
            BarColumn(bar_width=20),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=self.err, transient=True) as bar:
            yield Phases(bar, name)


class Phases:
    """One bar per phase, each saying what it does; ``None`` as ``bar`` draws nothing.

    The long phases (the tables, the grid file, the figures: ``track``) each have a bar of
    their own, beside the others, moved as that phase works and removed when it is done; the
    short steps between them (computing the grid, the summary: ``start``) share one bar, each
    step replacing the one before. The run writes its tables and its figures on two threads:
    each call holds a lock.
    """

    STEP = "step"
    """The key of the short steps' bar."""

    def __init__(self, bar: Any, name: str) -> None:
        self._bar = bar
        self._name = name
        self._tasks: dict[str, Any] = {}
        self._lock = threading.RLock()

    def track(self, phase: str, done: float, total: float | None, what: str) -> None:
        """The phase ``phase`` at ``done`` of ``total`` units (``None``: not known), doing
        ``what``; its bar is opened on its first call and removed once ``done`` reaches
        ``total``."""
        with self._lock:
            if self._bar is None:
                return
            description = f"{self._name}: {what}"
            task = self._tasks.get(phase)
            if task is None:
                task = self._bar.add_task(description, total=total, completed=done)
                self._tasks[phase] = task
            else:
                self._bar.update(task, description=description, completed=done, total=total)
            if total is not None and done >= total:
                self.end(phase)

    def start(self, what: str, total: float | None = None) -> None:
        """Open the step ``what`` (``total`` units of work, ``None``: not known), closing
        the step before."""
        with self._lock:
            self.end(self.STEP)
            self.track(self.STEP, 0, total, what)

    def update(self, done: float, total: float) -> None:
        """``done`` of ``total`` units of the open step."""
        with self._lock:
            task = self._tasks.get(self.STEP)
            if self._bar is not None and task is not None:
                self._bar.update(task, completed=done, total=total)

    def end(self, phase: str) -> None:
        """Close the bar of ``phase``, if open (it is removed: the bars are transient)."""
        with self._lock:
            task = self._tasks.pop(phase, None)
            if self._bar is not None and task is not None:
                self._bar.remove_task(task)

    def done(self) -> None:
        """Close every open bar."""
        with self._lock:
            for phase in list(self._tasks):
                self.end(phase)

    @property
    def drawn(self) -> bool:
        """Whether the phases are drawn (a terminal, not ``--quiet``)."""
        return self._bar is not None
