"""A result on a URL (``sweeps.pipeline.remote``): fsspec's ``memory://`` and ``file://``
filesystems, and ``flaky://``, a memory filesystem that goes down where a test says, for a
commit interrupted between (and inside) its journal's steps."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pytest
from click.testing import CliRunner
from fsspec.implementations.memory import MemoryFileSystem

from sweeps.cli.main import cli
from sweeps.config import load_config
from sweeps.errors import ConfigError, WriteError
from sweeps.pipeline import remote, run_to_folder

CONFIG = """
[sweep]
name = "remote-run"
title = "Remote test"
[axes]
model = ["llama-3-8b", "llama-3-70b"]
hardware = ["h100-sxm"]
batch = [{batches}]
context = [512, 32768]
[outputs]
charts = []
grid = "none"
"""

TABLES = ("decode.parquet", "prefill.parquet", "hardware.parquet", "models.parquet")


class Flaky(MemoryFileSystem):
    """``flaky://``: the memory filesystem, gone (every call an ``OSError``) once ``down``."""

    protocol = ("flaky",)
    down: ClassVar[bool] = False
    moves: ClassVar[int | None] = None
    """Moves left before it goes down (``None``: no limit)."""

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        return super()._strip_protocol(str(path).removeprefix("flaky://"))

    def _check(self) -> None:
        if Flaky.down:
            msg = "flaky://: connection lost"
            raise ConnectionError(msg)

    def exists(self, path: Any, **kwargs: Any) -> bool:
        self._check()
        return bool(super().exists(path, **kwargs))

    def pipe_file(self, path: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return super().pipe_file(path, value, *args, **kwargs)

    def mv(self, path1: Any, path2: Any, *args: Any, **kwargs: Any) -> Any:
        self._check()
        if Flaky.moves is not None:
            if Flaky.moves == 0:
                Flaky.down = True
                self._check()
            Flaky.moves -= 1
        return super().mv(path1, path2, *args, **kwargs)

    def rm(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return super().rm(path, *args, **kwargs)


fsspec.register_implementation("flaky", Flaky, clobber=True)


@pytest.fixture(autouse=True)
def settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease read back after 10 ms, not 1 s: one process's writes land at once."""
    monkeypatch.setattr(remote, "LEASE_SETTLE_S", 0.01)


@pytest.fixture
def url() -> Iterator[str]:
    """A fresh ``memory://`` prefix, removed after the test."""
    prefix = f"/t-{secrets.token_hex(4)}/runs"
    yield f"memory:/{prefix}"
    memory = fsspec.filesystem("memory")
    if memory.exists(prefix.rsplit("/", 1)[0]):
        memory.rm(prefix.rsplit("/", 1)[0], recursive=True)


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str], Path]:
    def write_config(batches: str) -> Path:
        path = tmp_path / f"sweep-{batches.replace(', ', '-')}.toml"
        path.write_text(CONFIG.format(batches=batches), encoding="utf-8")
        return path

    return write_config


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The tables of the config (batches 1, 64, 512) run into a local folder."""
    folder = tmp_path_factory.mktemp("local")
    path = folder / "sweep.toml"
    path.write_text(CONFIG.format(batches="1, 64, 512"), encoding="utf-8")
    run_to_folder(load_config(path), folder / "out")
    return {name: (folder / "out" / "remote-run" / name).read_bytes() for name in TABLES}


def tables(fs: Any, prefix: str) -> dict[str, bytes]:
    return {name: fs.cat_file(f"{prefix}/{name}") for name in TABLES}


def leftovers(fs: Any, root: str) -> list[str]:
    """Paths of staging, previous or journal names under ``root``."""
    return [p for p in fs.find(root) if ".tmp-" in p or ".old-" in p]


def test_a_cli_run_on_memory_equals_a_local_run(
    url: str, write: Callable[[str], Path], local: dict[str, bytes]
) -> None:
    runner = CliRunner()
    path = write("1, 64, 512")
    done = runner.invoke(cli, ["run", str(path), "--out", url])
    assert done.exit_code == 0, done.output
    assert f"wrote {url}/remote-run/ (decode 12 rows" in done.stderr
    fs, root = fsspec.core.url_to_fs(url)
    assert tables(fs, f"{root}/remote-run") == local
    assert fs.exists(f"{root}/remote-run/manifest.json")
    assert leftovers(fs, root) == []
    again = runner.invoke(cli, ["run", str(path), "--out", url])
    assert again.exit_code == 2
    assert f"{url}/remote-run: a result is already there; pass --force" in again.stderr
    forced = runner.invoke(cli, ["run", str(path), "--out", url, "--force", "--json"])
    assert forced.exit_code == 0, forced.output
    assert f'"folder": "{url}/remote-run"' in forced.stdout
    assert tables(fs, f"{root}/remote-run") == local
    assert leftovers(fs, root) == []


def test_a_file_url_through_fsspec_equals_a_local_run(
    tmp_path: Path, write: Callable[[str], Path], local: dict[str, bytes]
) -> None:
    """``run_to_folder`` with a ``file://`` URL commits through fsspec's local filesystem."""
    url = (tmp_path / "remote").as_uri()
    result = run_to_folder(load_config(write("1, 64, 512")), url)
    assert result.url == f"{url}/remote-run"
    folder = tmp_path / "remote" / "remote-run"
    assert {name: (folder / name).read_bytes() for name in TABLES} == local
    assert sorted(p.name for p in (tmp_path / "remote").iterdir()) == ["remote-run"]
    copy = result.folder
    assert copy.is_dir()  # the local copy lives as long as the result
    del result
    assert not copy.exists()


def test_a_bad_protocol_exits_2_naming_key_value_and_the_installed_ones(
    write: Callable[[str], Path],
) -> None:
    runner = CliRunner()
    done = runner.invoke(cli, ["run", str(write("1")), "--out", "nosuch://bucket/runs"])
    assert done.exit_code == 2
    assert "--out nosuch://bucket/runs: fsspec cannot open nosuch://" in done.stderr
    listed = done.stderr.split("an installed protocol: ")[1].replace("\n", " ").split(", ")
    assert {"file", "flaky", "memory"} <= {name.strip() for name in listed}
    assert "nosuch" not in listed
    climbs = runner.invoke(cli, ["run", str(write("1")), "--out", "memory://a/../b"])
    assert climbs.exit_code == 2
    assert "'.' and '..' are not allowed in a URL's path" in climbs.stderr


def test_memory_with_workers_in_other_processes_is_refused(
    url: str, write: Callable[[str], Path]
) -> None:
    done = CliRunner().invoke(cli, ["run", str(write("1")), "--out", url, "--workers", "2"])
    assert done.exit_code == 2
    assert f"--out {url}: memory:// lives in this process's memory" in done.stderr
    assert "(--workers 2) run in processes of their own" in done.stderr

    class Client:
        def __init__(self, address: str) -> None:
            self.address = address

        def scheduler_info(self) -> dict[str, Any]:
            return {"workers": {self.address: {}}}

    where = remote.open_url(url)
    remote.check_workers(where, Client("inproc://10.0.0.1/1/2"))  # threads: shared
    with pytest.raises(ConfigError, match="the client given"):
        remote.check_workers(where, Client("tcp://10.0.0.1:4000"))


FAILURES = [
    ("staging", None),
    ("aside", None),
    ("aside", 1),  # the earlier result half moved aside
    ("placing", None),
    ("placing", 1),  # the new result half moved in
    ("removing", None),
]


def interrupt(
    url: str, step: str, moves: int | None, sweep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run ``sweep`` into ``url`` (``flaky://``), the storage going down as the journal
    reaches ``step``, after ``moves`` more files moved where given: the run fails, unable to
    tidy up, and says the next run recovers."""
    real = remote._write_journal

    def failing(where: Any, result: str, at: str, ident: str) -> None:
        real(where, result, at, ident)
        if at == step:
            Flaky.moves = moves
            Flaky.down = moves is None
            where.fs._check()

    try:
        with pytest.MonkeyPatch.context() as patched:  # undone alone: the test's own stay
            patched.setattr(remote, "_write_journal", failing)
            with pytest.raises(ConnectionError, match="connection lost") as raised:
                run_to_folder(sweep, url, force=True)
    finally:
        Flaky.down, Flaky.moves = False, None
    assert any("the next run against flaky://" in note for note in raised.value.__notes__)


@pytest.fixture
def flaky(write: Callable[[str], Path], local: dict[str, bytes]) -> tuple[str, Any, str]:
    """A ``flaky://`` prefix with the earlier result (batches 1, 64, 512) committed."""
    url = f"flaky://t-{secrets.token_hex(4)}/runs"
    fs, root = fsspec.core.url_to_fs(url)
    run_to_folder(load_config(write("1, 64, 512")), url)
    assert tables(fs, f"{root}/remote-run") == local
    return url, fs, root


@pytest.mark.parametrize(("step", "moves"), FAILURES)
def test_an_interrupted_commit_is_recovered_at_the_next_run(
    step: str,
    moves: int | None,
    flaky: tuple[str, Any, str],
    write: Callable[[str], Path],
    local: dict[str, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next run against the URL rolls the stopped commit back (steps staging, aside) or
    forward (placing, removing), says so in one line, and leaves nothing else behind."""
    url, fs, root = flaky
    name = "remote-run"
    interrupt(url, step, moves, load_config(write("2, 128")), monkeypatch)
    assert fs.exists(f"{root}/{name}{remote.JOURNAL}")
    newer = CliRunner().invoke(cli, ["run", str(write("2, 128")), "--out", url, "--force"])
    assert newer.exit_code == 0, newer.output
    back = step in ("staging", "aside")
    how = "rolled back: the earlier result is in place" if back else "rolled forward"
    assert f"recovered {url}/{name}: a commit stopped at step {step!r}, {how}" in newer.stderr
    assert leftovers(fs, root) == []
    assert fs.cat_file(f"{root}/{name}/decode.parquet") != local["decode.parquet"]  # the newer


@pytest.mark.parametrize(("step", "moves"), FAILURES)
def test_a_recovery_keeps_the_earlier_result_or_completes_the_new(
    step: str,
    moves: int | None,
    flaky: tuple[str, Any, str],
    write: Callable[[str], Path],
    local: dict[str, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``recover`` alone: back to the earlier result byte for byte, or on to the new one
    whole (every file of it); a second recovery finds nothing to do."""
    url, fs, root = flaky
    files = sorted(p.rsplit("/", 1)[-1] for p in fs.find(f"{root}/remote-run"))
    interrupt(url, step, moves, load_config(write("2, 128")), monkeypatch)
    line = remote.recover(remote.open_url(url), "remote-run")
    assert line is not None
    got = tables(fs, f"{root}/remote-run")
    if step in ("staging", "aside"):
        assert got == local
    else:
        assert got["decode.parquet"] != local["decode.parquet"]
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.find(f"{root}/remote-run"))
    assert names == files  # the same files, every one: none left behind, none missing
    assert leftovers(fs, root) == []
    assert remote.recover(remote.open_url(url), "remote-run") is None


def test_a_failure_while_the_storage_answers_is_undone_at_once(
    url: str, write: Callable[[str], Path], local: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, root = fsspec.core.url_to_fs(url)
    run_to_folder(load_config(write("1, 64, 512")), url)
    real = remote._move_tree
    failed: list[str] = []

    def failing(fs: Any, source: str, target: str) -> None:
        if source.endswith("/remote-run") and not failed:  # moving the earlier result aside
            failed.append(source)
            msg = "disk full"
            raise OSError(msg)
        real(fs, source, target)

    monkeypatch.setattr(remote, "_move_tree", failing)
    with pytest.raises(OSError, match="disk full"):
        run_to_folder(load_config(write("2, 128")), url, force=True)
    monkeypatch.undo()
    assert failed
    assert tables(fs, f"{root}/remote-run") == local
    assert leftovers(fs, root) == []  # the journal too: nothing for the next run to do


def test_a_move_that_fails_once_while_placing_is_taken_up_at_once(
    url: str, write: Callable[[str], Path], local: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the aside step the staging is whole: a move into place that fails while the
    storage answers is finished at once, and the run succeeds with the new result."""
    fs, root = fsspec.core.url_to_fs(url)
    run_to_folder(load_config(write("1, 64, 512")), url)
    real = remote._move_tree
    failed: list[str] = []

    def failing(fs: Any, source: str, target: str) -> None:
        if target.endswith("/remote-run") and not failed:  # placing the new result
            failed.append(source)
            msg = "503 slow down"
            raise OSError(msg)
        real(fs, source, target)

    monkeypatch.setattr(remote, "_move_tree", failing)
    run_to_folder(load_config(write("2, 128")), url, force=True)
    assert failed
    assert fs.cat_file(f"{root}/remote-run/decode.parquet") != local["decode.parquet"]
    assert leftovers(fs, root) == []


def test_a_staging_prefix_no_journal_names_is_removed(
    url: str, write: Callable[[str], Path], local: dict[str, bytes]
) -> None:
    """A part put after its run was rolled back (a task dask cancelled) is removed by the
    next run against the URL, in one line; a result whose name shares the prefix is kept."""
    fs, root = fsspec.core.url_to_fs(url)
    fs.pipe_file(f"{root}/remote-run.tmp-123-abcd/decode/m/part-00000.parquet", b"late")
    fs.pipe_file(f"{root}/remote-run.tmp-x/keep", b"not ours")  # not a commit's id
    done = CliRunner().invoke(cli, ["run", str(write("1, 64, 512")), "--out", url])
    assert done.exit_code == 0, done.output
    assert f"recovered {url}/remote-run: removed 1 staging prefix(es) no commit names" in (
        done.stderr
    )
    assert not fs.exists(f"{root}/remote-run.tmp-123-abcd")
    assert fs.exists(f"{root}/remote-run.tmp-x/keep")
    assert tables(fs, f"{root}/remote-run") == local


def test_paths_never_leave_the_output_prefix(url: str, tmp_path: Path) -> None:
    where = remote.open_url(url)
    for name in ("../x", "a/b", ".hidden", "x.tmp-1/../../y", "x.old-1/z"):
        with pytest.raises(ConfigError):
            where.path(name)
    assert where.path("x.tmp-1-ab") == f"{where.root}/x.tmp-1-ab"
    assert where.path("llama3.1-8b.old-1-ab") == f"{where.root}/llama3.1-8b.old-1-ab"
    # a journal whose id climbs out is refused, nothing moved
    where.fs.pipe_file(where.path(f"x{remote.JOURNAL}"), b'{"step": "placing", "id": "../../y"}')
    with pytest.raises(WriteError, match="is not a commit's"):
        remote.recover(where, "x")
    # a symbolic link in a result is never followed
    folder = tmp_path / "result"
    folder.mkdir()
    (folder / "link").symlink_to("/etc")
    with pytest.raises(WriteError, match="a symbolic link in a result"):
        remote.upload(folder, where, where.path("x.tmp-1"))
    assert where.fs.find(where.root) == [where.path(f"x{remote.JOURNAL}")]


def test_without_fsspec_the_remote_extra_is_named(
    url: str, write: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "fsspec", None)  # as if not installed
    done = CliRunner().invoke(cli, ["run", str(write("1")), "--out", url])
    assert done.exit_code == 2
    assert "a memory:// URL needs fsspec, which is not installed; install the remote extra" in (
        done.stderr
    )


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """One worker process: it shares this machine's disk (``file://``), not its memory."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as connected:
        yield connected


def files(folder: Path) -> dict[str, bytes]:
    """Every Parquet file under ``folder``, by its path there."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.parquet")}


@pytest.mark.parametrize("layout", ["partitioned", "single"])
def test_workers_write_their_parts_straight_to_the_url(
    layout: str, client: Any, tmp_path: Path, write: Callable[[str], Path]
) -> None:
    """The workers' parts go to the URL's staging prefix, never to the client's local
    folder (partitioned: its local copy holds no part); a single file per table is joined
    from them on the client. Every table equals the same cluster's run into a local folder."""
    sweep = load_config(write("1, 64, 512"))
    local = run_to_folder(sweep, tmp_path / "local", client=client, layout=layout)
    url = (tmp_path / "remote").as_uri()
    result = run_to_folder(sweep, url, client=client, layout=layout)
    assert result.url == f"{url}/remote-run"
    got = files(tmp_path / "remote" / "remote-run")
    assert got == files(local.folder)
    parts = [name for name in got if name.startswith(("decode/", "prefill/"))]
    assert len(parts) == (4 if layout == "partitioned" else 0)  # a chunk a model and table
    held = files(result.folder)  # the client's local copy: the spec tables, the summary
    assert [name for name in held if "/" in name] == []  # partitioned: none ever came here
    assert sorted(p.name for p in (tmp_path / "remote").iterdir()) == ["remote-run"]


def test_memory_with_workers_in_this_process_writes_there(
    url: str, write: Callable[[str], Path], tmp_path: Path
) -> None:
    """A cluster of threads of this process shares its memory: ``memory://`` is allowed, the
    parts are written there and equal the same cluster's run into a local folder."""
    distributed = pytest.importorskip("distributed")
    sweep = load_config(write("1, 64, 512"))
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as threads:
        local = run_to_folder(sweep, tmp_path / "local", client=threads, layout="partitioned")
        run_to_folder(sweep, url, client=threads, layout="partitioned")
    fs, root = fsspec.core.url_to_fs(url)
    got = {
        path.removeprefix(f"{root}/remote-run/"): fs.cat_file(path)
        for path in fs.find(f"{root}/remote-run")
        if path.endswith(".parquet")
    }
    assert got == files(local.folder)
    assert leftovers(fs, root) == []
