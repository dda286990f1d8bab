"""``sweeps calibrate`` and ``sweeps workload`` to a URL, and the lease that keeps two commits
to one result apart (``sweeps.pipeline.remote``): ``memory://``, ``file://`` and the
``flaky://`` filesystem of tests/test_remote.py, which goes down where a test says."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pytest
from click.testing import CliRunner, Result
from fsspec.implementations.memory import MemoryFileSystem

from sweeps.cli.main import cli
from sweeps.errors import LeaseHeldError, WriteError
from sweeps.pipeline import remote
from sweeps.traces.data import shipped
from tests.test_calibrate_cli import FAST, HEADER, OK
from tests.test_remote import Flaky


class Plain(MemoryFileSystem):
    """``plain://``: the memory filesystem without ``"xb"`` (as a store with no conditional
    write): a lease is written, then read back after the settle time."""

    protocol = ("plain",)
    meet: ClassVar[threading.Barrier | None] = None
    """Where set, the racing takers wait here for each other once each found no lease."""

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        return super()._strip_protocol(str(path).removeprefix("plain://"))

    def _open(self, path: Any, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        if "x" in mode:
            if Plain.meet is not None:
                Plain.meet.wait()  # both found no lease: both write one
            msg = f"unsupported file mode for Plain: {mode!r}"
            raise ValueError(msg)
        return super()._open(path, mode, *args, **kwargs)


fsspec.register_implementation("plain", Plain, clobber=True)

NAME = "calibration"
FILES = ("calibration.parquet", "calibration.html")


@pytest.fixture(autouse=True)
def settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease read back after 10 ms, not 1 s: one process's writes land at once."""
    monkeypatch.setattr(remote, "LEASE_SETTLE_S", 0.01)


@pytest.fixture
def url() -> Iterator[str]:
    """A fresh ``memory://`` prefix, removed after the test."""
    top = f"/t-{secrets.token_hex(4)}"
    yield f"memory:/{top}/runs"
    memory = fsspec.filesystem("memory")
    if memory.exists(top):
        memory.rm(top, recursive=True)


@pytest.fixture(scope="module")
def measurements(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two small measurements files: one row, and two (their calibrations differ)."""
    folder = tmp_path_factory.mktemp("measurements")
    found = {}
    for key, rows in (("one", [OK]), ("two", [OK, OK.replace(",64,", ",8,")])):
        found[key] = folder / f"{key}.csv"
        found[key].write_text("\n".join([HEADER, *rows]) + "\n", "utf-8")
    return found


@pytest.fixture(scope="module")
def local(measurements: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sweeps calibrate one.csv`` into a local folder: the bytes a URL must receive."""
    out = tmp_path_factory.mktemp("local")
    done = calibrate(measurements["one"], str(out))
    assert done.exit_code == 0, done.output
    return out / NAME


def calibrate(path: Path, out: str, *more: str) -> Result:
    return CliRunner().invoke(cli, ["calibrate", str(path), "--out", out, *more])


def files(fs: Any, prefix: str) -> dict[str, bytes]:
    return {name: fs.cat_file(f"{prefix}/{name}") for name in FILES}


def on_disk(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in FILES}


def leftovers(fs: Any, root: str) -> list[str]:
    """Paths of staging, previous, journal or lease names under ``root``."""
    return [p for p in fs.find(root) if ".tmp-" in p or ".old-" in p]


def lease_at(where: remote.Remote, ident: str, pid: int, renewed: float) -> None:
    """A lease of ``calibration`` held by run ``ident``, process ``pid`` of this host."""
    document = {
        "id": ident,
        "host": socket.gethostname(),
        "pid": pid,
        "taken": renewed - 5.0,
        "renewed": renewed,
    }
    where.fs.pipe_file(where.path(f"{NAME}{remote.LEASE}"), json.dumps(document).encode())


def test_calibrate_to_a_url_equals_calibrate_to_a_folder(
    url: str, tmp_path: Path, measurements: dict[str, Path], local: Path
) -> None:
    """memory:// and file:// receive the local folder's bytes; a result there needs --force,
    as locally (exit 2); the status line and the JSON document name the URL."""
    done = calibrate(measurements["one"], url)
    assert done.exit_code == 0, done.output
    assert f"wrote {url}/{NAME}/ (calibration.parquet, calibration.html" in done.stderr
    fs, root = fsspec.core.url_to_fs(url)
    assert files(fs, f"{root}/{NAME}") == on_disk(local)
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.find(root)) == sorted(
        p.name for p in local.iterdir()
    )
    again = calibrate(measurements["two"], url)
    assert again.exit_code == 2
    assert f"{url}/{NAME}: a result is already there; pass --force to replace it" in again.stderr
    assert files(fs, f"{root}/{NAME}") == on_disk(local)
    forced = calibrate(measurements["two"], url, "--force", "--json")
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.stdout)["folder"] == f"{url}/{NAME}"
    assert files(fs, f"{root}/{NAME}") != on_disk(local)
    assert leftovers(fs, root) == []
    there = (tmp_path / "remote").as_uri()
    through = calibrate(measurements["one"], there)  # file://: the local folder itself
    assert through.exit_code == 0, through.output
    assert on_disk(tmp_path / "remote" / NAME) == on_disk(local)
    assert sorted(p.name for p in (tmp_path / "remote").iterdir()) == [NAME]


def test_calibrate_refuses_a_url_as_run_does(
    measurements: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same refusals, before any work (exit 2): a protocol that does not open, a path
    that climbs, fsspec missing (never taken as a local folder ``memory:/x``); a row that
    beats its bound still exits 1 once the result is on the URL."""
    monkeypatch.chdir(tmp_path)
    unknown = calibrate(measurements["one"], "nosuch://bucket/runs")
    assert unknown.exit_code == 2
    assert "--out nosuch://bucket/runs: fsspec cannot open nosuch://" in unknown.stderr
    climbs = calibrate(measurements["one"], "memory://a/../b")
    assert climbs.exit_code == 2
    assert "'.' and '..' are not allowed in a URL's path" in climbs.stderr
    other_host = calibrate(measurements["one"], "file://elsewhere/x")
    assert other_host.exit_code == 2
    assert "a file:// URL of another host (elsewhere)" in other_host.stderr
    beating = tmp_path / "fast.csv"
    beating.write_text(f"{HEADER}\n{FAST}\n", "utf-8")
    url = f"memory://t-{secrets.token_hex(4)}/runs"
    flagged = calibrate(beating, url)
    assert flagged.exit_code == 1
    assert "1 measurement(s) beat their bound (line 2)" in flagged.stderr
    assert fsspec.filesystem("memory").exists(url.removeprefix("memory:/") + f"/{NAME}")
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if not installed
    missing = calibrate(measurements["one"], "memory://x")
    assert missing.exit_code == 2
    assert "a memory:// URL needs fsspec, which is not installed; install the remote extra" in (
        missing.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fast.csv"]  # no memory: folder


def test_workload_figures_to_a_url_equal_those_in_a_folder(url: str, tmp_path: Path) -> None:
    trace = str(shipped("azure-conv-2023.csv"))
    here = CliRunner().invoke(cli, ["workload", trace, "--out", str(tmp_path)])
    assert here.exit_code == 0, here.output
    there = CliRunner().invoke(cli, ["workload", trace, "--out", url, "--json"])
    assert there.exit_code == 0, there.output
    assert json.loads(there.stdout)["folder"] == f"{url}/workload"
    fs, root = fsspec.core.url_to_fs(url)
    got = {p.removeprefix(f"{root}/workload/"): fs.cat_file(p) for p in fs.find(root)}
    folder = tmp_path / "workload"
    files_here = (p for p in folder.rglob("*") if p.is_file())
    assert got == {p.relative_to(folder).as_posix(): p.read_bytes() for p in files_here}
    assert leftovers(fs, root) == []


@pytest.mark.parametrize("step", ["aside", "placing"])
def test_an_interrupted_calibrate_commit_is_recovered_by_the_next(
    step: str,
    measurements: dict[str, Path],
    local: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The storage goes down as the journal reaches ``step`` (exit 1, the lease left
    behind); the next calibrate takes the lease over (its holder no longer holds it),
    recovers the commit in one line, and commits its own result."""
    url = f"flaky://t-{secrets.token_hex(4)}/runs"
    fs, root = fsspec.core.url_to_fs(url)
    assert calibrate(measurements["one"], url).exit_code == 0
    real = remote._write_journal

    def failing(where: Any, result: str, at: str, ident: str) -> None:
        real(where, result, at, ident)
        if at == step:
            Flaky.down = True
            where.fs._check()

    try:
        with pytest.MonkeyPatch.context() as patched:  # undone alone: the test's own stay
            patched.setattr(remote, "_write_journal", failing)
            stopped = calibrate(measurements["two"], url, "--force")
    finally:
        Flaky.down = False
    assert stopped.exit_code == 1
    assert "connection lost" in stopped.stderr
    assert fs.exists(f"{root}/{NAME}{remote.JOURNAL}")
    if step == "aside":  # rolled back: the earlier result, byte for byte
        assert remote.recover(remote.open_url(url), NAME) is not None
        assert files(fs, f"{root}/{NAME}") == on_disk(local)
        assert leftovers(fs, root) == []
        return
    newer = calibrate(measurements["one"], url, "--force")
    assert newer.exit_code == 0, newer.output
    assert f"recovered {url}/{NAME}: a commit stopped at step 'placing', rolled forward" in (
        newer.stderr
    )
    assert files(fs, f"{root}/{NAME}") == on_disk(local)
    assert leftovers(fs, root) == []


def test_a_live_lease_stops_the_second_run_with_one_line(
    url: str, measurements: dict[str, Path], local: Path
) -> None:
    """A lease renewed a moment ago by a running process of this host: the run exits 1 in
    one line naming the result, the holder's id and the lease's age, and writes nothing."""
    assert calibrate(measurements["one"], url).exit_code == 0
    where = remote.open_url(url)
    lease_at(where, "4242-beef", os.getppid(), time.time() - 3.0)  # our parent: it runs
    blocked = calibrate(measurements["two"], url, "--force")
    assert blocked.exit_code == 1
    (line,) = blocked.stderr.splitlines()
    assert line.startswith(f"Error: {url}/{NAME}: another commit is running: run 4242-beef ")
    ages = re.search(r"\(taken (\d+) s ago, renewed (\d+) s ago\); nothing was written;", line)
    assert ages is not None, line
    assert 8 <= int(ages[1]) <= 10
    assert 3 <= int(ages[2]) <= 5
    assert files(where.fs, f"{where.root}/{NAME}") == on_disk(local)
    assert leftovers(where.fs, where.root) == [where.path(f"{NAME}{remote.LEASE}")]
    with pytest.raises(LeaseHeldError, match="run 4242-beef holds its lease"):
        remote.recover(where, NAME)  # a recovery waits for the lease too: the commit runs


def race(target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> remote.Remote:
    """Two threads commit different results (``calibration.parquet`` of ``a``s and of ``b``s)
    to ``target`` at once, each upload held 0.2 s so that they overlap: asserts that one
    commits and the other stops with LeaseHeldError before writing, the result the winner's,
    whole; gives the URL's ``Remote``."""
    where = remote.open_url(target)
    folders = []
    for key in ("a", "b"):
        folder = tmp_path / key
        folder.mkdir()
        (folder / "calibration.parquet").write_bytes(key.encode() * 100)
        folders.append(folder)
    real = remote.upload

    def slow(folder: Path, into: remote.Remote, prefix: str) -> None:
        time.sleep(0.2)
        real(folder, into, prefix)

    monkeypatch.setattr(remote, "upload", slow)
    start = threading.Barrier(2)
    outcome: dict[str, BaseException | None] = {}

    def commit(folder: Path) -> None:
        start.wait()
        try:
            remote.commit(folder, where, NAME, force=True)
            outcome[folder.name] = None
        except BaseException as error:  # recorded, asserted below
            outcome[folder.name] = error

    threads = [threading.Thread(target=commit, args=(f,)) for f in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    won = [key for key, error in outcome.items() if error is None]
    lost = [error for error in outcome.values() if error is not None]
    assert len(won) == 1, outcome
    assert len(lost) == 1, outcome
    assert isinstance(lost[0], LeaseHeldError), outcome
    assert f"{target}/{NAME}: another commit is running: run " in str(lost[0])
    got = where.fs.cat_file(f"{where.root}/{NAME}/calibration.parquet")
    assert got == won[0].encode() * 100
    return where


@pytest.mark.parametrize("scheme", ["memory", "file", "plain"])
def test_two_commits_racing_one_wins_the_other_stops(
    scheme: str, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads commit different results to one URL at once (each upload held 0.2 s, so
    they overlap): one commits, the other stops with LeaseHeldError before writing; the
    result is the winner's, whole, and nothing else is left. ``plain://`` has no create
    exclusive: both write the lease, and the last writer holds it once read back."""
    target = {
        "memory": url,
        "file": (tmp_path / "remote").as_uri(),
        "plain": url.replace("memory://", "plain://"),
    }[scheme]
    monkeypatch.setattr(Plain, "meet", threading.Barrier(2, timeout=10))
    where = race(target, tmp_path, monkeypatch)
    assert leftovers(where.fs, where.root) == []


def test_a_stale_lease_is_taken_over_in_one_line(
    url: str, measurements: dict[str, Path], local: Path
) -> None:
    """Not renewed for longer than the limit, or its holder a process that has ended: the
    next run takes the lease over, says so once, and commits."""
    where = remote.open_url(url)
    lease_at(where, "1-aa", os.getpid(), time.time() - remote.LEASE_STALE_S - 60)
    done = calibrate(measurements["one"], url)
    assert done.exit_code == 0, done.output
    notice = f"took over the lease of {url}/{NAME} from run 1-aa: not renewed for "
    assert notice in done.stderr
    assert f"s (stale after {remote.LEASE_STALE_S:.0f} s)" in done.stderr
    assert files(where.fs, f"{where.root}/{NAME}") == on_disk(local)
    assert leftovers(where.fs, where.root) == []
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid now names no process
    lease_at(where, f"{gone.pid}-bb", gone.pid, time.time())  # fresh, but its holder ended
    forced = calibrate(measurements["two"], url, "--force")
    assert forced.exit_code == 0, forced.output
    assert f"from run {gone.pid}-bb: its holder, process {gone.pid}, has ended" in forced.stderr
    assert leftovers(where.fs, where.root) == []


def test_a_commit_that_lost_its_lease_stops_and_leaves_the_journal(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taken over while it uploaded (as if it had not renewed it in time): the commit stops
    before its next step and neither moves nor recovers anything; the journal and the
    staging are the new holder's to recover."""
    where = remote.open_url(url)
    folder = tmp_path / "result"
    folder.mkdir()
    (folder / "calibration.parquet").write_bytes(b"mine")
    real = remote.upload

    def taken_over(source: Path, into: remote.Remote, prefix: str) -> None:
        real(source, into, prefix)
        lease_at(where, "7-cc", os.getppid(), time.time())

    monkeypatch.setattr(remote, "upload", taken_over)
    with pytest.raises(LeaseHeldError, match="lost its lease to run 7-cc") as raised:
        remote.commit(folder, where, NAME, force=True)
    assert "stopped before step 'placing'" in str(raised.value)
    assert not where.fs.exists(where.path(NAME))
    assert where.fs.exists(where.path(f"{NAME}{remote.JOURNAL}"))
    assert where.fs.exists(where.path(f"{NAME}{remote.LEASE}"))  # the new holder's, kept


def test_a_held_lease_is_renewed_and_released(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "LEASE_RENEW_S", 0.02)
    where = remote.open_url(url)
    path = where.path(f"{NAME}{remote.LEASE}")
    said: list[str] = []
    with remote.lease(where, NAME, "9-dd", said):
        first = json.loads(where.fs.cat_file(path))
        time.sleep(0.2)
        later = json.loads(where.fs.cat_file(path))
        assert later["id"] == "9-dd"
        assert later["taken"] == first["taken"]
        assert later["renewed"] > first["renewed"]
    assert not where.fs.exists(path)
    assert said == []


def test_a_file_that_is_no_lease_is_never_taken_over(url: str) -> None:
    where = remote.open_url(url)
    where.fs.pipe_file(where.path(f"{NAME}{remote.LEASE}"), b'{"id": "../x"}')
    with pytest.raises(WriteError, match="not a lease of this package; look at it"):
        remote.commit(None, where, NAME, force=True)
    assert where.fs.cat_file(where.path(f"{NAME}{remote.LEASE}")) == b'{"id": "../x"}'
