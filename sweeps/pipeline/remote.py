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
does not give: atomicity for readers during the moves.

The lease: whatever reads or writes the journal (a recovery, a commit, a cluster's run whose
workers write the staging) first takes ``<out>/<name>.tmp-lease.json``, holding its run id,
host, process and times, and removes it when done. It is created exclusively where the
storage refuses a second create (``EXCLUSIVE``); elsewhere written, then read back after
``LEASE_SETTLE_S``: the last writer holds it. Its holder renews it every ``LEASE_RENEW_S``
and checks it is still its own before each journal step. Another run that finds it live
stops (``LeaseHeldError``: the result, the holder's id and the lease's age) before writing
anything; one that finds it stale (not renewed for ``LEASE_STALE_S``, or its holder a process
of this host that has ended) takes it over, said in one line.

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
import socket
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from sweeps.errors import (
    ConfigError,
    LeaseHeldError,
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

LEASE = f"{TMP}lease.json"
"""The lease's name after the result's: ``<name>.tmp-lease.json``."""

LEASE_STALE_S = 120.0
"""A lease not renewed for this long [s] is stale: the next run takes it over."""

LEASE_RENEW_S = 20.0
"""How often [s] a holder renews its lease."""

LEASE_SETTLE_S = 1.0
"""How long [s] a run that wrote a lease waits before reading it back, where the storage does
not refuse a second create (and on every take-over): the last of the runs that wrote one in
that time holds it."""

EXCLUSIVE = frozenset({"file", "local", "memory"})
"""Protocols whose ``open(path, "xb")`` refuses a file already there (checked on fsspec
2026.9). Others may pass it on to the store as a conditional write: a refusal is honoured on
any protocol, and a protocol that does not take the mode writes the lease plainly."""

T = TypeVar("T")

_HELD: set[str] = set()
"""The ids of the leases this process holds now."""


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

    @property
    def scheme(self) -> str:
        """The URL's protocol (``s3``, ``file``, ``memory``)."""
        return self.url.split("://", 1)[0]


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
    """Move every file under ``source`` to the same place under ``target``, then remove
    ``source``. A filesystem that renames (local, memory) moves one file at a time; an object
    store (an async filesystem: s3fs, gcsfs, adlfs), where a move is a copy and a delete,
    copies them all at once and then deletes them in batches, as its client does. Either way
    a move that stopped is taken up where it stopped (a file copied twice is the same file)."""
    paths = fs.find(source)
    destinations = [f"{target}/{path[len(source) :].lstrip('/')}" for path in paths]
    if _batched(fs):
        if paths:
            fs.copy(paths, destinations)
            fs.rm(paths)
    else:
        for path, destination in zip(paths, destinations, strict=True):
            fs.makedirs(destination.rsplit("/", 1)[0], exist_ok=True)
            fs.mv(path, destination)
    if fs.exists(source):
        fs.rm(source, recursive=True)


def _batched(fs: Any) -> bool:
    """Whether ``fs`` is an object store's async filesystem, whose client runs a list of
    copies, deletes or uploads concurrently (one request each, none waiting on the last)."""
    return bool(getattr(fs, "async_impl", False))


def _remove(fs: Any, path: str) -> None:
    if fs.exists(path):
        fs.rm(path, recursive=True)


def upload(folder: Path, remote: Remote, prefix: str) -> None:
    """Every file under the local ``folder`` to the same place under ``prefix`` (an object
    store's all at once, ``_batched``); a symbolic link is refused before anything is
    uploaded, never followed (its target could lie anywhere)."""
    fs = remote.fs
    sources: list[str] = []
    targets: list[str] = []
    for here, folders, files in os.walk(folder):
        for entry in (*folders, *files):
            if Path(here, entry).is_symlink():
                msg = f"{Path(here, entry)}: a symbolic link in a result; never uploaded"
                raise WriteError(msg)
        relative = Path(here).relative_to(folder).as_posix()
        base = prefix if relative == "." else f"{prefix}/{relative}"
        fs.makedirs(base, exist_ok=True)
        sources += [str(Path(here, file)) for file in files]
        targets += [f"{base}/{file}" for file in files]
    if _batched(fs):
        if sources:
            fs.put(sources, targets)
    else:
        for source, target in zip(sources, targets, strict=True):
            fs.put_file(source, target)


def commit(
    folder: Path | None,
    remote: Remote,
    name: str,
    force: bool,
    ident: str | None = None,
) -> list[str]:
    """Upload the local result ``folder`` and put it in place of ``<url>/<name>``, in the
    journal's steps (module docstring), under the result's lease (``LeaseHeldError`` where
    another run holds it): a commit left stopped there is recovered first. A failure rolls
    the commit back or forward at once where the storage still answers, else at the next run
    (``recover``). Returns the lines that say what was recovered or taken over."""
    ident = ident or new_id()
    lines: list[str] = []
    with lease(remote, name, ident, lines):
        found = _recover(remote, name)[0]
        lines += [found] if found else []
        _commit(folder, remote, name, force, ident)
    return lines


def _commit(folder: Path | None, remote: Remote, name: str, force: bool, ident: str) -> None:
    """``commit``, the lease held: ``folder`` ``None`` where the workers wrote the staging
    prefix of ``ident`` already."""
    target, staging, previous = _paths(remote, name, ident)
    fs = remote.fs
    try:
        fs.makedirs(remote.root, exist_ok=True)  # a local folder, say, made where missing
        _step(remote, name, "staging", ident)
        if folder is not None:
            upload(folder, remote, staging)
        if fs.exists(target):
            check_target(remote, name, force)  # a result that came while this one ran
            _step(remote, name, "aside", ident)
            _move_tree(fs, target, previous)
        _step(remote, name, "placing", ident)
        _move_tree(fs, staging, target)
        _step(remote, name, "removing", ident)
        _remove(fs, previous)
        fs.rm_file(_journal(remote, name))
    except LeaseHeldError:
        raise  # the lease lost: the journal is its new holder's to recover, not this run's
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


def _step(remote: Remote, name: str, step: str, ident: str) -> None:
    """The journal at ``step``, once the lease is checked to be still this commit's."""
    _confirm(remote, name, ident, step)
    _write_journal(remote, name, step, ident)


def _lease_path(remote: Remote, name: str) -> str:
    return remote.path(f"{name}{LEASE}")


def _lease_bytes(ident: str, taken: float) -> bytes:
    document = {
        "id": ident,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "taken": taken,
        "renewed": time.time(),
    }
    return json.dumps(document).encode()


def _read_lease(remote: Remote, name: str) -> dict[str, Any] | None:
    """The lease of ``<url>/<name>`` as written (``None``: no lease, or one created but not
    yet written: empty); ``WriteError`` where the file is not one of this package's."""
    path = _lease_path(remote, name)
    try:
        raw = remote.fs.cat_file(path)
    except FileNotFoundError:
        return None
    if not raw:  # created, its bytes not written yet: judged as absent (its create refuses)
        return None
    try:
        document = json.loads(raw)
        fields = {"id": str, "host": str, "pid": int, "taken": float, "renewed": float}
        if not all(isinstance(document[key], kind) for key, kind in fields.items()):
            raise TypeError(path)
    except (ValueError, KeyError, TypeError):
        msg = f"{path}: not a lease of this package; look at it, then remove it"
        raise WriteError(msg) from None
    return dict(document)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (where that cannot be asked: yes)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True


def _stale(found: dict[str, Any]) -> str | None:
    """Why the lease ``found`` is stale (said when it is taken over); ``None``: it is live."""
    quiet = time.time() - found["renewed"]
    if quiet > LEASE_STALE_S:
        return f"not renewed for {quiet:.0f} s (stale after {LEASE_STALE_S:.0f} s)"
    if found["host"] != socket.gethostname():
        return None
    if found["pid"] == os.getpid():
        return None if found["id"] in _HELD else "its holder, this process, no longer holds it"
    return None if _alive(found["pid"]) else f"its holder, process {found['pid']}, has ended"


def _held_line(remote: Remote, name: str, found: dict[str, Any] | None) -> str:
    """``LeaseHeldError``'s message: the result, the holder's run id and the lease's age."""
    where = remote.where(name)
    if found is None:
        holder = "another run took it at the same time"
    else:
        now = time.time()
        holder = (
            f"run {found['id']} holds its lease (taken {now - found['taken']:.0f} s ago, "
            f"renewed {now - found['renewed']:.0f} s ago)"
        )
    return (
        f"{where}: another commit is running: {holder}; nothing was written; allowed: "
        f"running again once it is done (a lease not renewed for {LEASE_STALE_S:.0f} s is "
        "taken over)"
    )


def _take(remote: Remote, name: str, ident: str, taken: float) -> str | None:
    """Take the lease of ``<url>/<name>`` for ``ident`` at the time ``taken`` [s since the
    epoch] (``LeaseHeldError`` where another run holds it); the line that says a stale one
    was taken over, if one was."""
    fs, path = remote.fs, _lease_path(remote, name)
    fs.makedirs(remote.root, exist_ok=True)
    notice, exclusive = None, False
    for _ in range(5):
        found = _read_lease(remote, name)
        if found is None:
            try:
                with fs.open(path, "xb") as file:
                    file.write(_lease_bytes(ident, taken))
            except FileExistsError:  # another run created it first: judged once written
                time.sleep(0.02)
                continue
            except (ValueError, NotImplementedError):  # no "xb" here: written, then read back
                fs.pipe_file(path, _lease_bytes(ident, taken))
            exclusive = remote.scheme in EXCLUSIVE  # no other run wrote it: read back at once
            break
        why = _stale(found)
        if why is None:
            raise LeaseHeldError(_held_line(remote, name, found))
        fs.pipe_file(path, _lease_bytes(ident, taken))  # over the stale one
        notice = f"took over the lease of {remote.where(name)} from run {found['id']}: {why}"
        break
    else:
        raise LeaseHeldError(_held_line(remote, name, None))
    time.sleep(0.0 if exclusive else LEASE_SETTLE_S)  # a run that wrote it too has by now
    now = _read_lease(remote, name)
    if now is None or now["id"] != ident:
        raise LeaseHeldError(_held_line(remote, name, now))
    return notice


def _confirm(remote: Remote, name: str, ident: str, step: str) -> None:
    """``LeaseHeldError`` where the lease is no longer ``ident``'s (taken over while this
    run did not renew it for ``LEASE_STALE_S``): the commit stops before ``step``."""
    found = _read_lease(remote, name)
    if found is None or found["id"] != ident:
        holder = "nobody" if found is None else f"run {found['id']}"
        msg = (
            f"{remote.where(name)}: this commit ({ident}) lost its lease to {holder}, not "
            f"having renewed it for {LEASE_STALE_S:.0f} s; stopped before step {step!r}, "
            "the journal left to the lease's holder"
        )
        raise LeaseHeldError(msg)


def _renew(remote: Remote, name: str, ident: str, taken: float, stop: threading.Event) -> None:
    """Renew the lease every ``LEASE_RENEW_S`` until ``stop``, or until it is not
    ``ident``'s any more (``_confirm`` then stops the commit)."""
    while not stop.wait(LEASE_RENEW_S):
        try:
            found = _read_lease(remote, name)
            if found is None or found["id"] != ident:
                return
            remote.fs.pipe_file(_lease_path(remote, name), _lease_bytes(ident, taken))
        except Exception:  # the storage did not answer: tried again next time
            continue


def _release(remote: Remote, name: str, ident: str) -> None:
    """Remove the lease where it is still ``ident``'s; where the storage does not answer it
    stays, stale once this run has ended."""
    try:
        found = _read_lease(remote, name)
        if found is not None and found["id"] == ident:
            remote.fs.rm_file(_lease_path(remote, name))
    except Exception:  # the next run takes it over
        return


@contextmanager
def lease(remote: Remote, name: str, ident: str, said: list[str]) -> Iterator[None]:
    """Hold the lease of ``<url>/<name>`` for the run ``ident`` inside (module docstring):
    ``LeaseHeldError`` where another run holds it; renewed while held, released after. The
    line that says a stale lease was taken over is appended to ``said``."""
    _HELD.add(ident)  # before it is written: this process's other threads see it held
    taken = time.time()
    try:
        notice = _take(remote, name, ident, taken)
    except BaseException:
        _HELD.discard(ident)
        raise
    said += [notice] if notice else []
    stop = threading.Event()
    renewing = threading.Thread(target=_renew, args=(remote, name, ident, taken, stop), daemon=True)
    renewing.start()
    try:
        yield
    finally:
        stop.set()
        renewing.join()
        _release(remote, name, ident)
        _HELD.discard(ident)


def new_id() -> str:
    """A commit's id: this process and a random part."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def recover(remote: Remote, name: str, said: list[str] | None = None) -> str | None:
    """Finish or undo the commit of ``<url>/<name>`` that the journal says stopped, under
    the result's lease (``LeaseHeldError`` where another run holds it: its commit runs); the
    line that says which, or ``None`` where there is nothing to do. With no journal, a
    staging prefix left behind (a part put by a task that dask cancelled after its run was
    rolled back) is removed, and said. ``said``: where given, receives the line that says a
    stale lease was taken over."""
    with lease(remote, name, new_id(), said if said is not None else []):
        return _recover(remote, name)[0]


def check(remote: Remote, name: str, force: bool) -> list[str]:
    """Before any work towards ``<url>/<name>``: a stopped commit recovered (``recover``),
    then ``check_target``; the lines that say what was recovered or taken over."""
    said: list[str] = []
    line = recover(remote, name, said)
    check_target(remote, name, force)
    return [*said, *([line] if line else [])]


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


def write_to_url(
    remote: Remote,
    name: str,
    force: bool,
    write: Callable[[Path], T],
    folder: Callable[[T], Path],
    client: Any = None,
) -> tuple[T, Path, list[str]]:
    """``write(local)`` into a fresh local temporary folder, then the folder ``folder`` names
    of its value committed to ``<url>/<name>`` (a command's output folder on a URL): checked
    first (``check``); with a ``client`` on shared storage the workers write the staging
    prefix, under the lease from before the first part. Returns ``write``'s value, the local
    temporary folder (the caller removes it) and the lines that say what was recovered or
    taken over."""
    from sweeps.pipeline.distributed import PARTS_AT

    lines = check(remote, name, force)
    check_workers(remote, client)
    ident = new_id()
    local = Path(tempfile.mkdtemp(prefix="sweeps-remote-"))
    try:
        if client is None or not remote.shared:
            value = write(local)
            lines += commit(folder(value), remote, name, force, ident)
            return value, local, lines
        with lease(remote, name, ident, lines):  # the workers write the staging prefix
            found = _recover(remote, name)[0]  # a commit stopped since the check
            lines += [found] if found else []
            check_target(remote, name, force)
            remote.fs.makedirs(remote.root, exist_ok=True)
            _step(remote, name, "staging", ident)  # rolled back if the run stops
            token = PARTS_AT.set(staging_url(remote, name, ident))
            try:
                value = write(local)
            except BaseException:
                _undo(remote, name)
                raise
            finally:
                PARTS_AT.reset(token)
            _commit(folder(value), remote, name, force, ident)
    except BaseException:
        shutil.rmtree(local, ignore_errors=True)
        raise
    return value, local, lines


def run_to_url(
    name: str,
    url: str,
    force: bool,
    client: Any,
    run_local: Callable[[Path], RunResult],
) -> RunResult:
    """``run_local(folder)`` (``run_to_folder`` into a local temporary folder) committed to
    ``<url>/<name>`` (``write_to_url``). The ``RunResult`` names the URL (``url``); its
    ``folder`` is the local copy, removed once the result is no longer referenced."""
    remote = open_url(url)
    result, local, lines = write_to_url(
        remote, name, force, run_local, lambda done: done.folder, client
    )
    result.url = remote.where(name)
    result.notes[:0] = lines
    weakref.finalize(result, shutil.rmtree, local, True)
    return result


def _undo(remote: Remote, name: str) -> None:
    """Roll back a run's staging (the lease held) where the storage answers; else the next
    run does."""
    try:
        _recover(remote, name)
    except Exception:  # the storage is gone: the journal stays for the next run
        return


def place_name(out: Path | str, name: str) -> str:
    """``<out>/<name>`` as a user names it: a local path, or a URL (``out`` one)."""
    return f"{str(out).rstrip('/')}/{name}" if is_url(out) else str(Path(out) / name)


def check_place(out: Path | str, name: str, force: bool) -> list[str]:
    """Before any work towards ``<out>/<name>``, a command's output folder: a result already
    there refused (``OutputExistsError``) unless ``force``; on a URL, a stopped commit
    recovered first (``check``). The lines that say what was recovered or taken over."""
    if not is_url(out):
        from sweeps.export import check_target as check_folder

        check_folder(Path(out) / name, force)
        return []
    return check(open_url(str(out)), name, force)


@contextmanager
def place(out: Path | str, name: str, force: bool, said: list[str]) -> Iterator[Path]:
    """A fresh local folder to write ``<out>/<name>`` into; once the block ends without an
    error it becomes that result: renamed into place (``sweeps.export.atomic_folder``) or, on
    a URL, uploaded and committed (``commit``; the lines that say what was recovered or taken
    over appended to ``said``). On an error nothing is placed."""
    if not is_url(out):
        from sweeps.export import atomic_folder

        with atomic_folder(Path(out) / name, force) as staging:
            yield staging
        return
    remote = open_url(str(out))
    local = Path(tempfile.mkdtemp(prefix="sweeps-remote-"))
    try:
        folder = local / name
        folder.mkdir()
        yield folder
        said += commit(folder, remote, name, force)
    finally:
        shutil.rmtree(local, ignore_errors=True)
