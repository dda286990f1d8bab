"""A result written to a URL (``s3://bucket/runs``, any installed fsspec protocol).

The run writes its folder as it does locally, into a local temporary folder (the workers of
a cluster write their Parquet parts straight to the remote staging prefix instead, where the
URL is storage they share); the folder is then uploaded beside the result, to
``<out>/<name>.tmp-<id>/`` (staging), and committed in three moves recorded in a journal,
``<out>/<name>.tmp-journal.json``, written before each one:

1. ``staging``: the staging prefix is being uploaded;
2. ``aside``: the result already there (``--force``) is moved to ``<out>/<name>.old-<id>/``
   (previous);
3. ``placing``: the staging prefix is moved to ``<out>/<name>``;
4. ``removing``: the previous result is removed; then the journal.

Object stores have no rename, of a prefix or even of one object: a move is a copy of every
object then a delete, so a reader may see a result half moved while a commit runs, and a
crash can stop a move half way. The journal makes that recoverable: the next run against the
URL (or ``recover``) reads it and rolls the commit back where it stopped in step 1 or 2 (the
earlier result moved back, byte for byte; the staging removed) and forward where it stopped
in 3 or 4 (the rest of the staging moved in; the previous result removed), and says so in
one line. Each recovery step can itself be interrupted and recovered again. What the journal
does not give: atomicity for readers during the moves, and safety against two runs committing
to the same result at once (the second one would take the first one's journal for an
interrupted commit).

Names: the staging, previous and journal names carry the package's reserved markers
(``sweeps.limits.RESERVED_MARKERS``), which no sweep name may hold, so none can be taken for a
result; every path written is checked to lie inside ``<out>/<name>`` or one of them, and the
journal's paths are recomputed, never followed as read.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sweeps.errors import (
    ConfigError,
    MissingExtraError,
    OutputExistsError,
    WriteError,
    install_hint,
)
from sweeps.limits import RESERVED_MARKERS, check_name, name_problem

if TYPE_CHECKING:
    from sweeps.pipeline.execute import RunResult

TMP, OLD = RESERVED_MARKERS
"""The markers of staging (``.tmp-``) and previous (``.old-``) names: never in a sweep name."""

JOURNAL = f"{TMP}journal.json"
"""The journal's name after the result's: ``<name>.tmp-journal.json``."""

NOT_SHARED = frozenset({"memory"})
"""Protocols whose files live in one process: workers in other processes never see them."""

STEPS = ("staging", "aside", "placing", "removing")
"""The journal's steps, in order: a commit stopped in the first two is rolled back, in the
last two forward."""

EXTRA = "remote"
"""The extra that brings fsspec."""


def is_url(out: object) -> bool:
    """Whether ``out`` (``run_to_folder``'s, or the command's) is a URL: a ``str`` with
    ``scheme://`` (a ``Path`` never is one)."""
    return isinstance(out, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", out) is not None


def installed_protocols() -> list[str]:
    """The fsspec protocols that open here: each implementation imported, with what it needs
    (0.3 s for the 40 fsspec knows; asked only to say what is allowed after a refusal)."""
    import fsspec
    from fsspec.registry import known_implementations, registry

    found = set(registry)
    for name in known_implementations:
        try:
            fsspec.get_filesystem_class(name)
        except (ImportError, ValueError):
            continue
        found.add(name)
    return sorted(found)


@dataclass(frozen=True)
class Remote:
    """An output prefix on an fsspec filesystem: ``url`` as given (no trailing ``/``), the
    filesystem ``fs`` and its path ``root`` there; ``shared``: whether processes other than
    this one see its files."""

    url: str
    fs: Any
    root: str
    shared: bool

    def path(self, name: str) -> str:
        """``<root>/<name>``: ``name`` a checked result name, or one of its own staging,
        previous and journal names (``<name>.tmp-...``, ``<name>.old-...``)."""
        if name_problem(name) is None:
            return f"{self.root}/{name}"
        for marker in (TMP, OLD):
            base, found, rest = name.partition(marker)
            if found and name_problem(base) is None and re.fullmatch(r"[a-z0-9-]+(\.json)?", rest):
                return f"{self.root}/{name}"
        check_name(name)  # the name's own problem, where it has one
        msg = f"{name!r}: not a result's name nor one of its staging names"
        raise ConfigError(msg)

    def where(self, name: str) -> str:
        """``<url>/<name>``: the result as a user names it."""
        return f"{self.url}/{name}"


def open_url(text: str, key: str = "out") -> Remote:
    """``text``, a URL, as a ``Remote``; ``MissingExtraError`` without fsspec,
    ``ConfigError`` (naming ``key``, the value and the installed protocols) for a protocol
    fsspec cannot open or a path that climbs (``..``)."""
    parts = urlsplit(text)
    try:
        import fsspec
    except ImportError:
        msg = (
            f"{key} {text}: a {parts.scheme}:// URL needs fsspec, which is not installed; "
            f"install the {EXTRA} extra: {install_hint(EXTRA)}"
        )
        raise MissingExtraError(msg) from None
    try:
        fsspec.get_filesystem_class(parts.scheme)
    except (ImportError, ValueError) as error:
        msg = (
            f"{key} {text}: fsspec cannot open {parts.scheme}:// ({error}); allowed: a local "
            f"folder or a URL of an installed protocol: {', '.join(installed_protocols())}"
        )
        raise ConfigError(msg) from None
    if any(part in (".", "..") for part in parts.path.split("/")):
        msg = f"{key} {text}: '.' and '..' are not allowed in a URL's path; name the prefix itself"
        raise ConfigError(msg)
    fs, root = fsspec.core.url_to_fs(text.rstrip("/"))
    return Remote(text.rstrip("/"), fs, root.rstrip("/"), parts.scheme not in NOT_SHARED)


def check_target(remote: Remote, name: str, force: bool) -> None:
    """``OutputExistsError`` where ``<url>/<name>`` holds a result and ``force`` is off."""
    if remote.fs.exists(remote.path(name)) and not force:
        msg = (
            f"{remote.where(name)}: a result is already there; allowed: replacing it when "
            "asked to (force)"
        )
        raise OutputExistsError(msg)


def check_workers(
    remote: Remote, client: Any = None, asked: str | None = None, key: str = "out"
) -> None:
    """``ConfigError`` where a cluster's workers run in other processes (``asked``: the
    option that asks for one, ``--workers 2``; or ``client``'s workers, unless all are
    threads of this process) and ``remote`` is not shared storage (``memory://``): the
    parts they wrote would be lost to this process."""
    if remote.shared or (client is None and asked is None):
        return
    if client is not None:
        workers = client.scheduler_info()["workers"]
        if workers and all(str(address).startswith("inproc://") for address in workers):
            return  # threads of this process: they share its memory
    scheme = remote.url.split("://", 1)[0]
    msg = (
        f"{key} {remote.url}: {scheme}:// lives in this process's memory, and the dask "
        f"workers ({asked or 'the client given'}) run in processes of their own, which never "
        "see it; allowed: storage the workers share (s3://, gs://, a shared folder), or no "
        "cluster"
    )
    raise ConfigError(msg)


def _journal(remote: Remote, name: str) -> str:
    return remote.path(f"{name}{JOURNAL}")


def _write_journal(remote: Remote, name: str, step: str, ident: str) -> None:
    document = {"step": step, "id": ident}
    remote.fs.pipe_file(_journal(remote, name), json.dumps(document).encode())


def _paths(remote: Remote, name: str, ident: str) -> tuple[str, str, str]:
    """(result, staging, previous) of the commit ``ident``: recomputed from the name, never
    read from the journal."""
    if not re.fullmatch(r"[0-9a-f-]{1,40}", ident):
        msg = f"{_journal(remote, name)}: id {ident!r} is not a commit's; remove the journal"
        raise WriteError(msg)
    return (
        remote.path(name),
        remote.path(f"{name}{TMP}{ident}"),
        remote.path(f"{name}{OLD}{ident}"),
    )


def _move_tree(fs: Any, source: str, target: str) -> None:
    """Move every file under ``source`` to the same place under ``target``, one at a time (a
    move that stopped is taken up where it stopped), then remove ``source``."""
    for path in fs.find(source):
        relative = path[len(source) :].lstrip("/")
        destination = f"{target}/{relative}"
        fs.makedirs(destination.rsplit("/", 1)[0], exist_ok=True)
        fs.mv(path, destination)
    if fs.exists(source):
        fs.rm(source, recursive=True)


def _remove(fs: Any, path: str) -> None:
    if fs.exists(path):
        fs.rm(path, recursive=True)


def upload(folder: Path, remote: Remote, prefix: str) -> None:
    """Every file under the local ``folder`` to the same place under ``prefix``; a symbolic
    link is refused, never followed (its target could lie anywhere)."""
    fs = remote.fs
    for here, folders, files in os.walk(folder):
        for entry in (*folders, *files):
            if Path(here, entry).is_symlink():
                msg = f"{Path(here, entry)}: a symbolic link in a result; never uploaded"
                raise WriteError(msg)
        relative = Path(here).relative_to(folder).as_posix()
        base = prefix if relative == "." else f"{prefix}/{relative}"
        fs.makedirs(base, exist_ok=True)
        for file in files:
            fs.put_file(str(Path(here, file)), f"{base}/{file}")


def commit(
    folder: Path | None,
    remote: Remote,
    name: str,
    force: bool,
    ident: str | None = None,
) -> None:
    """Upload the local result ``folder`` (or nothing more where ``None``: the workers wrote
    the staging prefix of ``ident`` already) and put it in place of ``<url>/<name>``, in the
    journal's steps (module docstring). A failure rolls the commit back or forward at once
    where the storage still answers, else at the next run (``recover``)."""
    ident = ident or new_id()
    target, staging, previous = _paths(remote, name, ident)
    fs = remote.fs
    try:
        fs.makedirs(remote.root, exist_ok=True)  # a local folder, say, made where missing
        _write_journal(remote, name, "staging", ident)
        if folder is not None:
            upload(folder, remote, staging)
        if fs.exists(target):
            check_target(remote, name, force)  # a result that came while this one ran
            _write_journal(remote, name, "aside", ident)
            _move_tree(fs, target, previous)
        _write_journal(remote, name, "placing", ident)
        _move_tree(fs, staging, target)
        _write_journal(remote, name, "removing", ident)
        _remove(fs, previous)
        fs.rm_file(_journal(remote, name))
    except BaseException as error:
        try:
            forward = _recover(remote, name)[1]
        except Exception:  # the storage is gone: the next run against the URL recovers
            error.add_note(
                f"{remote.where(name)}: the commit stopped; the next run against "
                f"{remote.url} recovers it ({_journal(remote, name)})"
            )
            raise error from None
        if forward and isinstance(error, Exception):
            return  # the new result is whole in place: the failure was a move taken up again
        raise


def new_id() -> str:
    """A commit's id: this process and a random part."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def recover(remote: Remote, name: str) -> str | None:
    """Finish or undo the commit of ``<url>/<name>`` that the journal says stopped; the
    line that says which, or ``None`` where there is nothing to do. With no journal, a
    staging prefix left behind (a part put by a task that dask cancelled after its run was
    rolled back) is removed, and said: no commit of the result is running then, as one runs
    at a time."""
    return _recover(remote, name)[0]


def _recover(remote: Remote, name: str) -> tuple[str | None, bool]:
    """``recover``: its line, and whether it rolled a commit forward (its result in place)."""
    fs = remote.fs
    journal = _journal(remote, name)
    if not fs.exists(journal):
        return _orphans(remote, name), False
    try:
        document = json.loads(fs.cat_file(journal))
        step, ident = document["step"], str(document["id"])
        back = STEPS.index(step) < STEPS.index("placing")
    except (ValueError, KeyError, TypeError):
        msg = f"{journal}: not a journal of this package; look at it, then remove it"
        raise WriteError(msg) from None
    target, staging, previous = _paths(remote, name, ident)
    if back:
        if fs.exists(previous):
            _move_tree(fs, previous, target)
        _remove(fs, staging)
        done = (
            "rolled back: the earlier result is in place"
            if fs.exists(target)
            else "rolled back: there was no earlier result"
        )
    else:
        if fs.exists(staging):
            _move_tree(fs, staging, target)
        _remove(fs, previous)
        done = "rolled forward: its result is in place"
    fs.rm_file(journal)
    return f"recovered {remote.where(name)}: a commit stopped at step {step!r}, {done}", not back


def _orphans(remote: Remote, name: str) -> str | None:
    """Remove the staging prefixes of ``name`` that no journal names; the line that says so."""
    fs = remote.fs
    pattern = re.compile(re.escape(f"{name}{TMP}") + r"[0-9]+-[0-9a-f]+")
    found = (
        [
            path
            for path in fs.ls(remote.root, detail=False)
            if pattern.fullmatch(path.rstrip("/").rsplit("/", 1)[-1])
        ]
        if fs.exists(remote.root)
        else []
    )
    for path in found:
        fs.rm(path, recursive=True)
    if not found:
        return None
    where = remote.where(name)
    return f"recovered {where}: removed {len(found)} staging prefix(es) no commit names"


def staging_url(remote: Remote, name: str, ident: str) -> str:
    """The URL of commit ``ident``'s staging prefix, where a cluster's workers write."""
    return f"{remote.url}/{name}{TMP}{ident}"


def run_to_url(
    name: str,
    url: str,
    force: bool,
    client: Any,
    run_local: Callable[[Path], RunResult],
) -> RunResult:
    """``run_local(folder)`` (``run_to_folder`` into a local temporary folder) committed to
    ``<url>/<name>``: recovered first where a commit stopped, checked, run, uploaded and
    committed. The ``RunResult`` names the URL (``url``); its ``folder`` is the local copy,
    removed once the result is no longer referenced."""
    from sweeps.pipeline.distributed import PARTS_AT

    remote = open_url(url)
    line = recover(remote, name)
    check_target(remote, name, force)
    check_workers(remote, client)
    ident = new_id()
    local = Path(tempfile.mkdtemp(prefix="sweeps-remote-"))
    token = None
    try:
        if client is not None and remote.shared:  # the workers write the staging prefix
            remote.fs.makedirs(remote.root, exist_ok=True)
            _write_journal(remote, name, "staging", ident)  # rolled back if the run stops
            token = PARTS_AT.set(staging_url(remote, name, ident))
        try:
            result = run_local(local)
        except BaseException:
            if token is not None:
                _undo(remote, name)
            raise
        finally:
            if token is not None:
                PARTS_AT.reset(token)
        commit(result.folder, remote, name, force, ident)
    except BaseException:
        shutil.rmtree(local, ignore_errors=True)
        raise
    result.url = remote.where(name)
    result.notes[:0] = [line] if line else []
    weakref.finalize(result, shutil.rmtree, local, True)
    return result


def _undo(remote: Remote, name: str) -> None:
    """Roll back a run's staging where the storage answers; else the next run does."""
    try:
        recover(remote, name)
    except Exception:  # the storage is gone: the journal stays for the next run
        return
