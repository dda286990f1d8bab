"""The tables of a sweep written by the workers of a dask cluster, never sent to the client.

Each task builds one chunk's grid (``sweeps.grid.chunks``), takes every streamed table's frame
of it and writes them as Parquet parts into the run's staging folder, which the workers share
with the client (one machine, or a shared file system): ``<table>/<model>/part-<n>.parquet``,
``n`` the chunk's place in the sweep (zero-padded, so the parts of a model sort in row order).
A task returns only counts and the columns' units (``Part``); the client never receives a row.
A part is written under a hidden name and renamed into place, so a task retried after its
worker died (dask retries it elsewhere) replaces, never appends to, what the dead one began.

The folders are named by the model alone, not ``model=<id>``: every part keeps its ``model``
column (the Enum of the whole sweep, as in one file), and a ``key=value`` folder would make
pyarrow and pandas read a second ``model`` from the path whose type clashes with it (measured:
``Unable to merge: Field model has incompatible types``). So each table's folder reads as one
table in Polars (``pl.scan_parquet(folder)``), pyarrow (``pq.read_table(folder)``), pandas
(``pd.read_parquet(folder)``) and DuckDB (``read_parquet('<folder>/*/*.parquet')``).

Back-pressure: chunks are cut against the workers' memory (``worker_budget``, asked of the
scheduler) and at most ``window`` of them are submitted at once, one running and one queued
per worker thread, so a worker never holds more than two chunks, and the client holds only
futures of counts. A ``single`` layout is then one file per table, streamed from the parts by
Polars on the client (a lazy scan, never the whole table in memory), and the parts removed.

Failures: a cluster without workers for ``timeout`` seconds, or whose scheduler stops
answering, raises ``ClusterLost`` with one line naming the scheduler and the chunks not
written; the caller's atomic folder then removes the parts, leaving any earlier result as it
was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeps.errors import SweepsError

if TYPE_CHECKING:
    from sweeps.grid.chunks import Chunk

PART = "{table}/{model}/part-{index:05d}.parquet"
"""Where a chunk's rows of a table go, relative to the result folder."""

PART_PATTERN = "{table}/<model>/part-<n>.parquet"
"""``PART`` as the manifest describes it."""

CLUSTER_TIMEOUT = 180.0
"""Seconds a run waits for a cluster without workers (or a scheduler that does not answer)
before it fails [s] (dask config ``sweeps.cluster-timeout``)."""

POLL = 0.5
"""Seconds between two looks at the cluster while chunks are in flight [s]."""

PER_THREAD = 2
"""Chunks in flight per worker thread: one computing, one queued behind it."""


PARTS_AT: ContextVar[str | None] = ContextVar("sweeps_parts_at", default=None)
"""The URL of the staging prefix where the workers write their parts, set while a run whose
result goes to a URL of shared storage runs (``sweeps.pipeline.remote.run_to_url``); ``None``:
into the run's local staging folder."""


class ClusterLost(SweepsError):
    """The cluster lost every worker for longer than the timeout, or its scheduler (exit 1)."""


@dataclass(frozen=True)
class Part:
    """What a task hands back for one table of one chunk: no rows, only their count.

    rows : Rows written [row]
    columns : The columns' units and descriptions (``column_info``)
    file : The part's path, relative to the result folder
    """

    rows: int
    columns: dict[str, dict[str, str]]
    file: str


def write_chunk(
    chunk: Chunk, names: Sequence[str], enums: Mapping[str, Sequence[str]], folder: str
) -> dict[str, Part]:
    """On a worker: build ``chunk``'s grid, write each table of ``names`` as a part into
    ``folder`` (under a hidden name, then renamed; a URL: written here, then put there, one
    object, whole) and return the parts' counts."""
    from sweeps.export.frame import table_frame
    from sweeps.export.parquet import write_frame
    from sweeps.grid.build import build_grid

    ds = build_grid(chunk.sweep)
    parts = {}
    with _written_at(folder) as local:
        for name in names:
            frame = table_frame(ds, name, enums)
            file = PART.format(table=name, model=chunk.model, index=chunk.index)
            path = local / file
            path.parent.parent.mkdir(exist_ok=True)  # never the staging folder itself: a run
            path.parent.mkdir(exist_ok=True)  # that stopped has removed it, for good
            hidden = path.with_name(f".{path.name}.{os.getpid()}")
            columns = write_frame(frame, hidden, name)
            os.replace(hidden, path)
            _put(local, folder, file)
            parts[name] = Part(frame.height, columns, file)
            del frame
    return parts


def _remote(folder: str) -> bool:
    return "://" in folder


@contextlib.contextmanager
def _written_at(folder: str) -> Iterator[Path]:
    """The local folder a worker writes ``folder``'s files in: itself, or for a URL a
    temporary one of its own, removed after (``_put`` sends each file on)."""
    if not _remote(folder):
        yield Path(folder)
        return
    local = Path(tempfile.mkdtemp(prefix="sweeps-parts-"))
    try:
        yield local
    finally:
        shutil.rmtree(local, ignore_errors=True)


def _put(local: Path, folder: str, file: str) -> None:
    """Send ``local/file`` to ``folder/file`` where ``folder`` is a URL (fsspec)."""
    if not _remote(folder):
        return
    import fsspec

    fs, path = fsspec.core.url_to_fs(f"{folder}/{file}")
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    fs.put_file(str(local / file), path)


def fetch(folder: str, files: Sequence[str], local: Path) -> None:
    """On the client: the parts ``files`` the workers wrote at the URL ``folder``, moved into
    the local staging folder ``local`` (where the client reads them)."""
    import fsspec

    for file in files:
        fs, path = fsspec.core.url_to_fs(f"{folder}/{file}")
        (local / file).parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(path, str(local / file))
        fs.rm_file(path)


async def warm() -> None:
    """On a worker, as it joins: import what a chunk's task runs (the grid and its numba
    kernels, the frames, Parquet) on a thread of its own, so that its first task does not
    wait for them while the client imports and plans (``sweeps.cli.cluster``: 1-2 s of each
    worker's CPU). A coroutine, so that ``Client.run`` need not wait for it."""
    import threading

    threading.Thread(target=_imports, name="sweeps-warm", daemon=True).start()


def _imports() -> None:
    import sweeps.export.frame
    import sweeps.export.parquet
    import sweeps.grid.build  # noqa: F401


def worker_budget(client: Any, fallback: int) -> int:
    """The memory a chunk may take on the cluster's smallest worker [byte]: its memory limit
    shared by its threads and ``PER_THREAD`` chunks each; ``fallback`` where no worker has a
    limit (or none is there yet)."""
    workers = client.scheduler_info()["workers"].values()
    shares = [
        int(w["memory_limit"]) // (max(1, int(w["nthreads"])) * PER_THREAD)
        for w in workers
        if w.get("memory_limit")
    ]
    return min([fallback, *shares])


def window(client: Any) -> int:
    """Chunks in flight at once: ``PER_THREAD`` per worker thread (at least two)."""
    workers = client.scheduler_info()["workers"].values()
    return max(PER_THREAD, PER_THREAD * sum(int(w["nthreads"]) for w in workers))


class _Watch:
    """Raises ``ClusterLost`` once the cluster has had no worker, or its scheduler has not
    answered, for ``timeout`` seconds (``check``), or at once where its scheduler is gone
    (``gone``)."""

    def __init__(self, client: Any, timeout: float) -> None:
        self.client, self.timeout = client, timeout
        self.since: float | None = None
        self.unanswered: float | None = None

    def check(self, left: int) -> None:
        """Count the workers; raise once there has been none, or the client has been cut off
        from the scheduler (reconnecting), for ``timeout``."""
        try:
            workers = len(self.client.scheduler_info()["workers"])
        except Exception as error:
            raise self.gone(error, left) from None
        status, now = self.client.status, time.monotonic()
        if status in ("closing", "closed"):
            raise self.gone(None, left)
        # dask's client keeps trying a lost scheduler for its own connect timeout (10 s or
        # more) before it closes: cut off for the cluster timeout is gone enough
        self.unanswered = None if status == "running" else self.unanswered or now
        if self.unanswered is not None and now - self.unanswered >= self.timeout:
            msg = f"the scheduler is gone (no answer for {self.timeout:g} s)"
            raise self._lost(msg, left)
        if workers:
            self.since = None
            return
        self.since = self.since or now
        if now - self.since >= self.timeout:
            msg = f"no worker for {self.timeout:g} s"
            raise self._lost(msg, left)

    def gone(self, error: BaseException | None, left: int) -> ClusterLost:
        """The scheduler stopped answering (``error``: how the client found out)."""
        how = f" ({type(error).__name__})" if error is not None else ""
        return self._lost(f"the scheduler is gone{how}", left)

    def _lost(self, why: str, left: int) -> ClusterLost:
        address = getattr(self.client, "scheduler", None)
        where = getattr(address, "address", None) or "the scheduler"
        msg = (
            f"dask cluster at {where}: {why}; {left:,} chunks not written, the run's "
            "partial files removed and any earlier result left as it was; allowed: a "
            "cluster with workers, or a longer cluster timeout to wait for them"
        )
        return ClusterLost(msg)


def write_parts(  # long: submit, watch, take back, in one loop
    chunks: Sequence[Chunk],
    names: Sequence[str],
    enums: Mapping[str, Sequence[str]],
    folder: Path | str,
    client: Any,
    report: Callable[[int], None],
    timeout: float = CLUSTER_TIMEOUT,
) -> dict[str, list[Part]]:
    """Every table of ``names`` over ``chunks`` written by the workers into ``folder``, at
    most ``window`` chunks in flight; each table's parts in the chunks' order. ``report`` is
    told each chunk's rows as it is written. Whatever stops it cancels what is in flight."""
    from distributed import wait

    parts: list[dict[str, Part] | None] = [None] * len(chunks)
    queued = iter(range(len(chunks)))
    flight: dict[Any, int] = {}
    watch = _Watch(client, timeout)
    size = window(client)
    try:
        while True:
            for index in queued if len(flight) < size else ():
                future = client.submit(
                    write_chunk, chunks[index], list(names), dict(enums), str(folder), pure=False
                )
                flight[future] = index
                if len(flight) >= size:
                    break
            if not flight:
                break
            try:
                done, _ = wait(list(flight), timeout=POLL, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            except Exception as error:
                raise watch.gone(error, len(chunks) - sum(p is not None for p in parts)) from None
            if not done:
                watch.check(len(chunks) - sum(p is not None for p in parts))
                continue
            for future in done:
                index = flight.pop(future)
                written: dict[str, Part] = dict(_result(future, watch, len(flight)))
                parts[index] = written
                report(sum(part.rows for part in written.values()))
    finally:
        if flight:
            _cancel(client, list(flight))
    return {name: [chunk[name] for chunk in parts if chunk is not None] for name in names}


def _result(future: Any, watch: _Watch, left: int) -> Any:
    """``future``'s result (the task's own error as it was raised), the cluster watched while
    it is not there: gathering it from a worker that died meanwhile computes it again."""
    from concurrent.futures import CancelledError

    while True:
        try:
            return future.result(timeout=POLL)
        except TimeoutError:
            watch.check(left + 1)
        except (CancelledError, OSError) as error:
            raise watch.gone(error, left + 1) from None


def _cancel(client: Any, futures: list[Any]) -> None:
    """Cancel ``futures`` where the scheduler still answers (else there is nothing to do)."""
    with contextlib.suppress(Exception):
        client.cancel(futures, asynchronous=False)


def join_parts(folder: Path, table: str, files: Sequence[str], target: str) -> None:
    """Stream the parts ``files`` of ``table`` (in that order) into the one file ``target``,
    on the client, a row group at a time (Polars' lazy scan and sink), with the metadata of
    a table written whole; the parts and their folders are removed after."""
    import shutil

    import polars as pl

    from sweeps.export.failures import writing
    from sweeps.export.parquet import WRITE_OPTIONS, column_info, parquet_metadata

    paths = [folder / file for file in files]
    head = pl.read_parquet(paths[0], n_rows=0)
    info = column_info(head, table)
    with writing(folder / target):
        pl.scan_parquet(paths).sink_parquet(
            folder / target, metadata=parquet_metadata(head, info), **WRITE_OPTIONS
        )
    shutil.rmtree(folder / table)


def whole_tables(
    sweep: Any, names: Sequence[str], folder: str, layout: str, enums: Mapping[str, Any]
) -> dict[str, tuple[int, dict[str, Any], list[str]]]:
    """On a worker: the tables that reduce over devices, tp or batch (serving, pools), from
    one grid of their own (``sweeps.pipeline.stream._whole_table``)."""
    from sweeps.grid.analyses import BY_NAME
    from sweeps.pipeline.stream import _whole_table

    held: list[Any] = []
    with _written_at(folder) as local:
        written = {
            name: _whole_table(sweep, BY_NAME[name], local, layout, enums, held) for name in names
        }
        for _, _, files in written.values():
            for file in files:
                _put(local, folder, file)
    return written


def cluster_timeout() -> float:
    """The cluster timeout [s]: dask's config ``sweeps.cluster-timeout`` (what the command
    sets, or ``DASK_SWEEPS__CLUSTER_TIMEOUT``), else ``CLUSTER_TIMEOUT``."""
    import dask

    return float(dask.config.get("sweeps.cluster-timeout", CLUSTER_TIMEOUT))


def cluster_chunks(sweep: Any, budget: int, client: Any) -> list[Chunk]:
    """The chunks of ``sweep`` on ``client``'s cluster: cut against the smaller of the
    client's chunk budget (from ``budget`` [byte]) and the workers' (``worker_budget``)."""
    from sweeps.grid.chunks import plan_chunks
    from sweeps.pipeline.plan import chunk_budget

    return plan_chunks(sweep, worker_budget(client, chunk_budget(budget)))


def cluster_plan(how: Any, client: Any) -> Any:
    """``how`` (a ``sweeps.pipeline.plan.Plan``) with its pieces cut for ``client``'s cluster
    (``cluster_chunks``), once: the run writes those pieces (``write_on_cluster``)."""
    import dataclasses

    pieces = tuple(cluster_chunks(how.sweep, how.budget, client))
    return dataclasses.replace(how, chunks=len(pieces), pieces=pieces, on_cluster=True)


def write_on_cluster(
    sweep: Any,
    layout: str,
    chunks: Sequence[Chunk],
    folder: Path,
    client: Any,
    progress: Callable[[int, int], None] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Every analysis table of ``sweep`` written into ``folder`` by ``client``'s workers:
    {table: (rows, column units, files)}, over ``chunks`` (the plan's: ``cluster_plan``);
    ``layout`` ``single`` joins each table's parts into one file; ``timeout`` [s] defaults to
    ``cluster_timeout()``."""
    from sweeps.axes import categories
    from sweeps.grid.analyses import tables

    enums = categories(sweep)
    timeout = cluster_timeout() if timeout is None else timeout
    total, done = sum(chunk.points for chunk in chunks), 0

    def report(rows: int) -> None:
        nonlocal done
        done += rows
        if progress is not None:
            progress(done, total)

    streamed = [t.name for t in tables(sweep) if not t.whole]
    whole = [t.name for t in tables(sweep) if t.whole]
    at = PARTS_AT.get() or str(folder)  # a URL: the workers write straight there
    side = (
        client.submit(whole_tables, sweep, whole, at, layout, dict(enums), pure=False)
        if whole
        else None
    )
    parts = write_parts(chunks, streamed, enums, at, client, report, timeout) if streamed else {}
    written: dict[str, Any] = {}
    for name, table in parts.items():
        files = [part.file for part in table]
        if _remote(at) and (layout == "single" or _reads_parts(sweep)):
            fetch(at, files, folder)
        if layout == "single":
            join_parts(folder, name, files, f"{name}.parquet")
            files = [f"{name}.parquet"]
        written[name] = (sum(p.rows for p in table), table[0].columns, files)
    if side is not None:
        written |= _result(side, _Watch(client, timeout), 0)
        if _remote(at):  # small (reduced over devices, tp or batch), and read for the plans
            fetch(at, [file for name in whole for file in written[name][2]], folder)
    return {t.name: written[t.name] for t in tables(sweep)}


def _reads_parts(sweep: Any) -> bool:
    """Whether the client reads the streamed tables' parts after the workers wrote them:
    the expected counts of an engine, the DuckDB views, the studies' post-steps."""
    return bool(sweep.engine or sweep.duckdb or sweep.studies)


def write_streamed(
    how: Any, folder: Path, progress: Callable[[int, int], None] | None, client: Any
) -> dict[str, Any]:
    """The tables of a streamed run (``how``, a ``Plan``) into ``folder``, over the plan's
    pieces (cut once, by ``plan`` or ``cluster_plan``): by ``client``'s workers
    (``write_on_cluster``), or chunk by chunk here (``stream_tables``)."""
    if client is not None:
        return write_on_cluster(how.sweep, how.layout, how.pieces, folder, client, progress)
    from sweeps.pipeline.stream import stream_tables

    return stream_tables(how.sweep, how.pieces, folder, how.layout, progress)
