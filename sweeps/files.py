"""Reading a user's input file: bounded in size, never blocking on a FIFO or a device.

A config, a ``config = "..."`` path or an ``import-model`` argument can name anything: a
multi-gigabyte file, ``/dev/zero`` or a named pipe. Each is read only if it is a regular file,
and at most ``limit`` bytes of it; anything else is an error naming the path and what is
allowed, raised as the caller's domain exception.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sweeps.errors import SweepsError

TEXT_LIMIT = 4 * 2**20
"""Largest input text file read [byte]: configs and ``config.json`` files are kilobytes."""


def read_text(
    path: str | Path,
    error: type[SweepsError],
    what: str = "file",
    limit: int = TEXT_LIMIT,
) -> str:
    """The UTF-8 text of ``path``, a regular file of at most ``limit`` bytes [byte].

    Raises ``error`` (a ``SweepsError`` subclass) naming the path when it is missing, not a
    regular file (a folder, a FIFO, a device such as ``/dev/zero``), unreadable, larger than
    ``limit`` or not UTF-8. ``what`` names the file's role in the message (``config``, ...).
    """
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not hang; fstat then says what it is
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        msg = f"{path}: no such {what}"
        raise error(msg) from None
    except OSError as exc:
        msg = f"{path}: cannot read the {what}: {exc.strerror or exc}"
        raise error(msg) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        msg = f"{path}: {kind}; the {what} must be a regular file"
        raise error(msg)
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            msg = f"{path}: cannot read the {what}: {exc.strerror or exc}"
            raise error(msg) from None
    if len(data) > limit:
        msg = f"{path}: larger than {limit // 2**20} MiB; a {what} is a small text file"
        raise error(msg)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{path}: not UTF-8 text (byte {exc.start}); the {what} must be UTF-8"
        raise error(msg) from None
