"""A result on an object store through its own protocol (issue 45): ``s3://`` by s3fs against
moto's S3 server on 127.0.0.1, started by the test. S3 has no rename (a move is a copy and a
delete) and takes a create-exclusive write as a conditional put (``If-None-Match``): the
journal and the lease of ``sweeps.pipeline.remote`` on the store they were written for."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from sweeps.config import load_config
from sweeps.pipeline import remote, run_to_folder
from tests.test_remote import CONFIG, TABLES
from tests.test_remote_lease import race

pytest.importorskip("s3fs")
server = pytest.importorskip("moto.server")


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """moto's S3 on a free port of 127.0.0.1, and fsspec's ``s3`` defaults pointed at it."""
    moto = server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    url = f"http://{host}:{port}"
    options = {"endpoint_url": url, "key": "test", "secret": "test"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(fsspec.config.conf, "s3", options)
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # a bucket there takes no constraint
        yield url
    moto.stop()


@pytest.fixture(autouse=True)
def settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease read back after 10 ms, not 1 s: one process's writes land at once."""
    monkeypatch.setattr(remote, "LEASE_SETTLE_S", 0.01)


@pytest.fixture
def url(endpoint: str) -> str:
    """A prefix in a fresh bucket."""
    bucket = f"sweeps-{secrets.token_hex(4)}"
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
    return f"s3://{bucket}/runs"


def _config(tmp_path: Path, batches: str) -> Any:
    path = tmp_path / f"sweep-{batches.replace(', ', '-')}.toml"
    path.write_text(CONFIG.format(batches=batches), encoding="utf-8")
    return load_config(path)


def _tables(fs: Any, prefix: str) -> dict[str, bytes]:
    return {name: fs.cat_file(f"{prefix}/{name}") for name in TABLES}


def _leftovers(fs: Any, prefix: str) -> list[str]:
    """What is under ``prefix`` beside the result folders (a staging prefix, a journal, an
    old result set aside, a lease)."""
    return [p for p in fs.find(prefix) if ".tmp-" in p or p.endswith(remote.JOURNAL)]


def test_a_run_on_s3_equals_the_same_run_in_a_local_folder(url: str, tmp_path: Path) -> None:
    sweep = _config(tmp_path, "1, 64, 512")
    local = run_to_folder(sweep, tmp_path / "local").folder
    run_to_folder(sweep, url)
    fs, root = fsspec.core.url_to_fs(url)
    assert _tables(fs, f"{root}/remote-run") == {n: (local / n).read_bytes() for n in TABLES}
    assert _leftovers(fs, root) == []  # the lease and the journal gone with the commit
    again = run_to_folder(_config(tmp_path, "2, 128"), url, force=True)  # over the earlier
    assert again.url == f"{url}/remote-run"
    assert (
        _tables(fs, f"{root}/remote-run")["decode.parquet"]
        != (local / "decode.parquet").read_bytes()
    )
    assert _leftovers(fs, root) == []


def test_the_lease_is_a_conditional_put_on_s3(url: str) -> None:
    """s3fs writes ``"xb"`` as a put with ``If-None-Match``: a second create of the lease is
    refused by the store itself, not by a read back."""
    fs, root = fsspec.core.url_to_fs(url)
    path = f"{root}/x{remote.LEASE}"
    with fs.open(path, "xb") as file:
        file.write(b"one")
    with pytest.raises(FileExistsError), fs.open(path, "xb") as file:
        file.write(b"two")
    assert fs.cat_file(path) == b"one"


def test_two_commits_racing_on_s3_one_wins_the_other_stops(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads commit different results to one S3 prefix at once (each upload held
    0.2 s, so they overlap): one commits, the other stops with LeaseHeldError before writing;
    the result is the winner's, whole, and nothing else is left."""
    where = race(url, tmp_path, monkeypatch)
    assert _leftovers(where.fs, where.root) == []


def test_a_failure_on_s3_while_it_answers_leaves_the_earlier_result(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A move that fails as the earlier result is set aside (S3 moves by copy and delete):
    the commit is undone at once, the earlier result byte for byte, nothing left behind."""
    sweep = _config(tmp_path, "1, 64, 512")
    run_to_folder(sweep, url)
    fs, root = fsspec.core.url_to_fs(url)
    before = _tables(fs, f"{root}/remote-run")
    real = remote._move_tree
    failed: list[str] = []

    def failing(fs: Any, source: str, target: str) -> None:
        if source.endswith("/remote-run") and not failed:  # setting the earlier result aside
            failed.append(source)
            msg = "slow down"
            raise OSError(msg)
        real(fs, source, target)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(remote, "_move_tree", failing)
        with pytest.raises(OSError, match="slow down"):
            run_to_folder(_config(tmp_path, "2, 128"), url, force=True)
    assert failed
    assert _tables(fs, f"{root}/remote-run") == before
    assert _leftovers(fs, root) == []


def test_a_batched_move_stopped_between_its_copies_and_deletes_is_taken_up(
    url: str, tmp_path: Path
) -> None:
    """On S3 a tree moves as one batch of copies, then one of deletes: a commit whose first
    batch of deletes fails (the copies made, the sources still there) is taken up at once,
    every file once in its place, the new result whole, nothing left behind."""
    run_to_folder(_config(tmp_path, "1, 64, 512"), url)
    fs, root = fsspec.core.url_to_fs(url)
    newer = run_to_folder(_config(tmp_path, "2, 128"), tmp_path / "newer").folder
    real, failed = fs.rm, []
    assert remote.open_url(url).fs is fs  # one client a URL's options: patched is used

    def failing(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, list) and not failed:  # the first batch of deletes
            failed.append(len(path))
            msg = "slow down"
            raise OSError(msg)
        return real(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(fs, "rm", failing)
        with pytest.raises(OSError, match="slow down"):
            run_to_folder(_config(tmp_path, "2, 128"), url, force=True)
    assert failed
    assert failed[0] > 1  # a batch, not one file
    got = _tables(fs, f"{root}/remote-run")
    assert got in ({n: (newer / n).read_bytes() for n in TABLES}, _tables_of_first(tmp_path))
    assert _leftovers(fs, root) == []


def _tables_of_first(tmp_path: Path) -> dict[str, bytes]:
    folder = run_to_folder(_config(tmp_path, "1, 64, 512"), tmp_path / "first").folder
    return {n: (folder / n).read_bytes() for n in TABLES}
