"""Write a result folder atomically: build it beside the target, then rename it into place.

A failed or interrupted run leaves the previous result untouched and no partial folder behind.
A run killed outright (SIGKILL, power loss) cannot clean up after itself: its staging folder,
in the hidden ``<out>/.sweeps-staging/``, carries its process id, and the next run of any sweep
in the same output folder removes it once that process is gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sweeps import signals
from sweeps.errors import ConfigError, OutputExistsError


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


STAGING = ".sweeps-staging"
"""The hidden folder inside the output folder where runs build their results: no glob of
``<out>/*/...`` reaches it, and any run in the same output folder clears what dead runs left
there."""


def result_folder(out: str | Path, name: str) -> Path:
    """``<out>/<name>``, checked: ``name`` follows the one rule of names that become files
    (``sweeps.limits.name_problem``), and ``<out>/<name>`` is a real folder or nothing:
    a symbolic link there is refused, never followed (``--force`` would otherwise replace,
    and remove, whatever it points to). ``out`` itself may be a link: its real path is used.
    """
    from sweeps.limits import check_name

    base = Path(out).resolve()
    check_name(name)
    target = base / name
    if target.is_symlink():
        msg = (
            f"{target}: a symbolic link (to {os.readlink(target)}); a result is written "
            "through real paths only, never into a link's target; allowed: a folder, or "
            "nothing, there (remove the link, or write elsewhere)"
        )
        raise ConfigError(msg)
    return target


def _dead(folder: Path) -> bool:
    """True when ``folder`` (``<name>.<kind>-<pid>-<random>``) was left by a dead process."""
    pid_text = folder.name.rsplit(".", 1)[-1].split("-")[1:2]
    return bool(pid_text) and pid_text[0].isdigit() and not _alive(int(pid_text[0]))


def remove_stale(out: Path) -> list[Path]:
    """Clear what dead runs left in ``out``'s staging folder; returns the folders removed.

    A backup (``<name>.old-*``) whose result is not in place (the run died between moving the
    old result aside and moving the new one in) is moved back first, so it is never lost.
    """
    removed = []
    staging = out / STAGING
    for folder in sorted(staging.glob("*.*-*")) if staging.is_dir() else []:
        if not _dead(folder):
            continue
        name, _, _ = folder.name.rpartition(".")
        if folder.name.startswith(f"{name}.old-") and not (out / name).exists():
            with contextlib.suppress(OSError):
                os.replace(folder / "old", out / name)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def check_target(target: Path, force: bool) -> None:
    """Raise ``OutputExistsError`` before any work if ``target`` exists and ``force`` is off."""
    if target.exists() and not force:
        msg = f"{target}: a result is already there; allowed: replacing it when asked to (force)"
        raise OutputExistsError(msg)


@contextmanager
def atomic_folder(
    target: Path, force: bool = False, finish: Callable[[Path], None] | None = None
) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``target``; on success it becomes ``target``.

    The old result, if any and if ``force``, is moved aside first and removed only after the
    new one is in place and ``finish`` (if given) has completed it there: ``finish(target)``
    writes what can only be written where the result finally lies (``sweep.duckdb``, whose
    views name the files' final paths). If ``finish`` fails, the new result is taken out
    again and the old one put back, byte for byte. On any exception the temporary folder is
    removed and ``target`` is as it was.
    """
    check_target(target, force)
    hidden = target.parent / STAGING
    if hidden.is_symlink():  # a planted link would take the staging, and its removal, away
        msg = f"{hidden}: a symbolic link; the staging folder must be a real folder"
        raise ConfigError(msg)
    hidden.mkdir(parents=True, exist_ok=True)
    try:  # from here on, a stop (a signal raises where the main thread is) tidies ``hidden``
        remove_stale(target.parent)
        yield from _staged(target, hidden, finish)
    except BaseException:
        # a stop between making this run's staging and guarding it (``_staged``) leaves it
        for leftover in hidden.glob(f"{target.name}.tmp-{os.getpid()}-*"):
            _remove(leftover)
        raise
    finally:
        _tidy(hidden)


def _staged(target: Path, hidden: Path, finish: Callable[[Path], None] | None) -> Iterator[Path]:
    """``atomic_folder``'s staging inside ``hidden``: yielded, then renamed into place."""
    pid = os.getpid()
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.tmp-{pid}-", dir=hidden))
    try:
        with signals.staging(staging):  # removed too where a signal ends the process
            yield staging
        os.chmod(staging, 0o755)
        # a kill between the two renames leaves the old result in ``aside``, which the
        # next run in this folder moves back (``remove_stale``): never lost
        aside = Path(tempfile.mkdtemp(prefix=f"{target.name}.old-{pid}-", dir=hidden))
        if target.exists():
            os.replace(target, aside / "old")
        os.replace(staging, target)
        try:
            if finish is not None:
                finish(target)
        except BaseException:
            os.replace(target, staging)  # removed below, with the staging of a failed run
            if (aside / "old").exists():
                os.replace(aside / "old", target)
            shutil.rmtree(aside, ignore_errors=True)  # empty once the old result is back
            raise
        shutil.rmtree(aside, ignore_errors=True)  # the old result, no longer needed
    except BaseException:
        _remove(staging)
        raise


def _tidy(hidden: Path) -> None:
    """Remove the staging folder once nothing is left in it (another run may still use it)."""
    with contextlib.suppress(OSError):
        hidden.rmdir()
