"""Write a result folder atomically: build it beside the target, then rename it into place.

A failed or interrupted run leaves the previous result untouched and no partial folder behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sweeps.errors import OutputExistsError


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
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield staging
        os.chmod(staging, 0o755)
        if target.exists():
            aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, aside / "old")
            os.replace(staging, target)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
