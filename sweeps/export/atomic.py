"""Write a result folder atomically: build it beside the target, then rename it into place.

A failed or interrupted run leaves the previous result untouched and no partial folder behind.
A run killed outright (SIGKILL, power loss) cannot clean up after itself: its hidden staging
folder carries its process id, and the next run for the same target removes it once that
process is gone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sweeps.errors import OutputExistsError


def _remove(folder: Path, attempts: int = 20, pause: float = 0.1) -> None:
    """Remove ``folder``, again while a writer that was still running (a cancelled dask
    task, say) finishes a file in it; gives up after ``attempts * pause`` seconds."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(pause)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale(target: Path) -> list[Path]:
    """Remove staging folders beside ``target`` left by runs whose process has died.

    Returns the folders removed.
    """
    removed = []
    for kind in ("tmp", "old"):
        for folder in target.parent.glob(f".{target.name}.{kind}-*"):
            pid_text = folder.name.removeprefix(f".{target.name}.{kind}-").split("-", 1)[0]
            if pid_text.isdigit() and not _alive(int(pid_text)):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


def check_target(target: Path, force: bool) -> None:
    """Raise ``OutputExistsError`` before any work if ``target`` exists and ``force`` is off."""
    if target.exists() and not force:
        msg = f"{target}: a result is already there; pass --force to replace it"
        raise OutputExistsError(msg)


@contextmanager
def atomic_folder(target: Path, force: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``target``; on success it becomes ``target``.

    The old result, if any and if ``force``, is moved aside first and removed only after the
    new one is in place. On any exception the temporary folder is removed and ``target`` is as
    it was.
    """
    check_target(target, force)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    pid = os.getpid()
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{pid}-", dir=target.parent))
    try:
        yield staging
        os.chmod(staging, 0o755)
        if target.exists():
            aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-{pid}-", dir=target.parent))
            os.replace(target, aside / "old")
            os.replace(staging, target)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.replace(staging, target)
    except BaseException:
        _remove(staging)
        raise
