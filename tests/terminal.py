"""A pseudo-terminal of a given size and a small screen model, for the CLI's terminal tests.

The model keeps every line ever written (an endless scrollback) and moves the cursor as a VT100
does for what rich writes: printable characters with the deferred wrap at the last column,
``\\r``, ``\\n``, backspace, cursor up/down/forward/back/column (``CSI n A/B/C/D/G``), erase in
line and in display (``CSI n K/J``); colours and modes are dropped. ``wraps`` counts characters
written past the last column: a line longer than the terminal.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"\x1b\[([?0-9;]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b.|.", re.S
)


@dataclass
class Screen:
    """What a terminal ``width`` columns wide shows after the output fed to it."""

    width: int
    lines: list[list[str]] = field(default_factory=lambda: [[]])
    row: int = 0
    col: int = 0
    wraps: int = 0

    def _line(self) -> list[str]:
        while len(self.lines) <= self.row:
            self.lines.append([])
        return self.lines[self.row]

    def _put(self, char: str) -> None:
        if self.col >= self.width:  # the deferred wrap: only a further character wraps
            self.wraps += 1
            self.row, self.col = self.row + 1, 0
        line = self._line()
        line.extend(" " * (self.col + 1 - len(line)))
        line[self.col] = char
        self.col += 1

    def _csi(self, params: str, final: str) -> None:
        n = int(params) if params.isdigit() else (0 if final in "JK" else 1)
        if final == "A":
            self.row = max(0, self.row - n)
        elif final == "B":
            self.row += n
        elif final == "C":
            self.col = min(self.width, self.col + n)
        elif final == "D":
            self.col = max(0, self.col - n)
        elif final == "G":
            self.col = n - 1
        elif final == "K":
            line = self._line()
            if n == 0:
                del line[self.col :]
            elif n == 1:
                line[: self.col + 1] = [" "] * min(len(line), self.col + 1)
            else:
                line.clear()
        elif final == "J" and n == 0:
            del self._line()[self.col :]
            del self.lines[self.row + 1 :]

    def feed(self, text: str) -> None:
        for match in _TOKEN.finditer(text):
            token = match.group(0)
            if match.group(2) is not None:
                self._csi(match.group(1), match.group(2))
            elif token == "\r":
                self.col = 0
            elif token == "\n":
                self.row += 1
                self._line()
            elif token == "\b":
                self.col = max(0, self.col - 1)
            elif token.startswith("\x1b") or token in "\x07\x00":
                continue
            elif token >= " ":
                self._put(token)

    def text(self) -> list[str]:
        """The lines shown, trailing blanks dropped."""
        shown = ["".join(line).rstrip() for line in self.lines]
        while shown and not shown[-1]:
            shown.pop()
        return shown


@dataclass
class Session:
    """A finished command in a pseudo-terminal: its exit code, raw output and screen."""

    code: int
    raw: str
    screen: Screen


def run_in_terminal(
    argv: Sequence[str],
    width: int,
    env: dict[str, str],
    cwd: str,
    interrupt_when: Callable[[str], bool] | None = None,
    timeout: float = 120.0,
) -> Session:
    """Run ``argv`` with stdin, stdout and stderr on a ``width`` x 50 pseudo-terminal.

    With ``interrupt_when``, Ctrl-C (SIGINT to the process group, as a terminal sends it) is
    sent once the raw output so far satisfies it.
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    environment = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    process = subprocess.Popen(
        list(argv),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environment,
        cwd=cwd,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    interrupted = interrupt_when is None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        if (
            not interrupted
            and interrupt_when is not None
            and interrupt_when(b"".join(chunks).decode("utf-8", "replace"))
        ):
            os.killpg(process.pid, signal.SIGINT)
            interrupted = True
        if process.poll() is not None and not ready:
            break
    os.close(master)
    if process.poll() is None:  # past the timeout: no hanging test
        os.killpg(process.pid, signal.SIGKILL)
    code = process.wait(timeout=10)
    raw = b"".join(chunks).decode("utf-8", "replace")
    screen = Screen(width)
    screen.feed(raw)
    return Session(code, raw, screen)
