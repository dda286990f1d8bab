"""Every writer's failure as one ``WriteError`` naming the file it was writing.

Polars, zarr, h5py and DuckDB each report a failed write in their own way: Polars' Parquet
writer says ``Invalid thrift: transport error`` when the disk fills under it, DuckDB raises
its own ``IOException``, h5py an ``OSError`` without a file name. ``writing(path)`` turns each
into one ``WriteError``: the file, then what happened, and a full disk called a full disk
(found from the message, or from the free space left where the file was going).
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sweeps.errors import SweepsError, WriteError

FULL_MARKERS = ("no space left", "os error 28", "disk full", "disk is full", "quota exceeded")
"""Words of a writer's message that mean the disk is full, whatever its exception type."""

TRANSPORT_MARKERS = ("invalid thrift", "transport error", "broken pipe", "short write")
"""Words of a writer's message that mean the bytes did not reach the file: on a local disk,
all but always a full disk (checked against the free space left, ``FULL_BELOW``)."""

FULL_BELOW = 1 << 20
"""Free space under which a writer's failure is taken for a full disk [byte]."""


def _free(path: Path) -> int | None:
    """Free bytes on the file system of ``path`` (its nearest existing folder), or None."""
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def _full(path: Path, text: str, code: int | None) -> bool:
    lowered = text.lower()
    if code in (errno.ENOSPC, errno.EDQUOT) or any(m in lowered for m in FULL_MARKERS):
        return True
    free = _free(path)
    return free is not None and free < FULL_BELOW


def failure_message(path: Path, error: BaseException) -> str:
    """``<path>: <what happened>``: one line for a writer's failure."""
    code = error.errno if isinstance(error, OSError) else None
    text = (os.strerror(code) if code else "") or str(error) or type(error).__name__
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    if _full(path, text, code):
        return f"{path}: the disk is full; free some space or write elsewhere"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{path}: {first}; write where this process may"
    return f"{path}: cannot be written: {first[:300]}"


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn any failure of the writer inside into a ``WriteError`` naming ``path``.

    The package's own errors and ``BaseException`` (Ctrl-C, the handled signals, a stopped
    stream's own signal) pass unchanged: only a writer's failure is renamed.
    """
    try:
        yield
    except SweepsError:
        raise
    except MemoryError:
        raise
    except Exception as error:
        if _stopped(error):
            raise
        raise WriteError(failure_message(Path(path), error)) from error


def _stopped(error: BaseException) -> bool:
    """Whether ``error`` is, or wraps, a stream's own stop (``sweeps.pipeline.stream``)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ == "_Stopped" or "the stream stopped" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False
