"""Write a sweep's tables chunk by chunk: files whose layout does not depend on the chunks.

A chunked (streamed) run evaluates the grid one chunk at a time (``sweeps.grid.chunks``) and
feeds each chunk's rows to Parquet writers that emit row groups of a fixed size, so every
file is the one an in-memory run writes: ``<table>.parquet`` in the single layout,
``<table>/<model>.parquet`` in the partitioned one (the folder and file names carry no data:
every file keeps its ``model`` column, so pyarrow, pandas, Polars and DuckDB read the same
columns and types as from the single file).

Each chunk's grid is built once and every streamed table's frame taken from it
(``chunk_tables``). Each table file open at a time (one per table, per model when
partitioned) has a writer thread of its own running Polars' sink, handed one frame at a time
(``_Writer``); the stream's thread hands chunk ``i``'s frames to every writer while a further
thread evaluates chunk ``i + 1`` (numba's loop, numpy and Polars' writer release the GIL), and
takes the next chunk only once every writer has asked for it and every file that ends there
is finished. So the writers and the evaluation overlap, two chunks are in memory at once (as
with one writer, Polars' sink may ask for a frame while still encoding the last), and the
plan cuts chunks against half the budget (``sweeps.pipeline.plan``). Any failure (a
writer's, the evaluation's or ``progress``'s) stops every writer and the evaluation before it
propagates. With a ``dask.distributed`` client the chunks are evaluated on its workers and
their rows written here, in order. The ``whole`` tables (serving, pools) reduce over devices,
tp or batch, so they are computed afterwards from one grid of the whole sweep at its first
context and prompt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sweeps.axes import categories
from sweeps.config import Sweep
from sweeps.grid.chunks import Chunk
from sweeps.grid.memory import estimate_bytes

if TYPE_CHECKING:
    import polars as pl
    import xarray as xr

    from sweeps.export.frame import Repeats


class Keep(Protocol):
    """Where a chunk's grid goes once built (a list; ``sweeps.pipeline.pieces._Keep``)."""

    def append(self, ds: xr.Dataset, /) -> None: ...


Progress = Callable[[int, int], None]
"""Called after each chunk with (rows done, rows in all) [row]; may raise to abort."""

Written = tuple[int, dict[str, Any], list[str]]
"""A table's rows [row], its columns' units and its files (relative to the output folder)."""


def chunk_tables(
    chunk: Chunk,
    names: Sequence[str],
    enums: Mapping[str, Sequence[str]],
    keep: Keep | None = None,
    repeats: Repeats | None = None,
) -> dict[str, pl.DataFrame]:
    """The rows of each table in ``names`` over one chunk, from one grid of it, with the whole
    sweep's Enum categories ``enums``; the grid is appended to ``keep`` where given, and the
    columns that repeat between chunks shared through ``repeats`` where given."""
    from sweeps.export.frame import table_frame
    from sweeps.grid.build import build_grid

    ds = build_grid(chunk.sweep)
    if keep is not None:
        keep.append(ds)
    return {name: table_frame(ds, name, enums, repeats) for name in names}


def chunk_frames(
    chunks: Sequence[Chunk],
    names: Sequence[str],
    enums: Mapping[str, Sequence[str]],
    client: Any = None,
    keep: Keep | None = None,
    repeats: Repeats | None = None,
) -> Generator[dict[str, pl.DataFrame], None, None]:
    """Each chunk's frames of ``names`` (``chunk_tables``), in order, one evaluated ahead.

    Here: a second thread evaluates chunk ``i + 1`` while the caller writes chunk ``i`` (closing
    the iterator waits for that thread), appending each chunk's grid to ``keep`` in order where
    given. On ``client``: every chunk is submitted and the results taken in order.
    """
    if client is not None:
        futures = client.map(
            chunk_tables, list(chunks), names=list(names), enums=dict(enums), pure=False
        )
        try:
            for future in futures:
                yield future.result()
        finally:
            client.cancel(futures)
        return
    with ThreadPoolExecutor(1, thread_name_prefix="sweeps-chunk") as pool:
        ahead: Future[dict[str, pl.DataFrame]] | None = None
        for index in range(len(chunks)):
            current = ahead or pool.submit(chunk_tables, chunks[index], names, enums, keep, repeats)
            ahead = (
                pool.submit(chunk_tables, chunks[index + 1], names, enums, keep, repeats)
                if index + 1 < len(chunks)
                else None
            )
            yield current.result()


def sink(frames: Iterator[pl.DataFrame], path: Path, table: str) -> tuple[int, dict[str, Any]]:
    """Write ``frames`` into one Parquet file, row group by row group; (rows, column units).

    The row groups are those of ``sweeps.export.parquet.WRITE_OPTIONS`` whatever the frames'
    sizes, and the metadata that of ``write_frame``: the file is laid out as if written whole.
    """
    from polars.io.plugins import register_io_source

    from sweeps.export.parquet import WRITE_OPTIONS, column_info, parquet_metadata

    first = next(frames)
    info = column_info(first, table)
    rows = [first.height]

    upstream: list[BaseException] = []  # raised by the frames (the stream), not the writer

    def source(*_: Any) -> Iterator[pl.DataFrame]:
        try:
            yield first
            for frame in frames:
                rows.append(frame.height)
                yield frame
        except GeneratorExit:  # the writer closed the source: its own failure, if any, stands
            raise
        except BaseException as error:
            upstream.append(error)
            raise

    from sweeps.errors import WriteError
    from sweeps.export.failures import writing

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with writing(path):
            register_io_source(source, schema=first.schema).sink_parquet(
                path,
                metadata=parquet_metadata(first, info),
                **WRITE_OPTIONS,
            )
    except WriteError:
        if upstream:  # the stream's own failure, as it was raised
            raise upstream[0] from None
        raise
    return sum(rows), info


class _Stopped(Exception):
    """Raised inside a writer's sink when the stream stops early (another part failed)."""


class _Writer:
    """``sink`` of one table file on a thread of its own, handed one frame at a time.

    ``put`` hands it a frame and ``wait`` returns once its sink has taken it and asks for the
    next (or raises what the sink raised), so the inbox holds at most one frame; it is
    unbounded only so that ``stop`` never blocks. Every exit of the thread sends a last reply,
    so no wait outlives it.
    """

    def __init__(self, path: Path, table: str) -> None:
        self._inbox: queue.SimpleQueue[pl.DataFrame | BaseException | None] = queue.SimpleQueue()
        self._replies: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self._result: tuple[int, dict[str, Any]] = (0, {})
        self._thread = threading.Thread(
            target=self._run, args=(path, table), name=f"sweeps-sink-{table}", daemon=True
        )
        self._thread.start()

    def _frames(self) -> Iterator[pl.DataFrame]:
        while (item := self._inbox.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
            del item  # the sink holds the frame as long as it needs it, no longer
            self._replies.put(None)

    def _run(self, path: Path, table: str) -> None:
        try:
            self._result = sink(self._frames(), path, table)
        except BaseException as error:  # raised in the stream's thread, by ``wait``
            self._replies.put(error)
        else:
            self._replies.put(None)

    def put(self, frame: pl.DataFrame) -> None:
        """Hand ``frame`` to the sink."""
        self._inbox.put(frame)

    def wait(self) -> None:
        """Return once the sink took the frame handed and asks for the next; raise its error."""
        if (error := self._replies.get()) is not None:
            raise error

    def close(self) -> tuple[int, dict[str, Any]]:
        """End the file and wait for the sink to finish it; its (rows, column units)."""
        self._inbox.put(None)
        self.wait()
        self._thread.join()
        return self._result

    def stop(self) -> None:
        """Make the sink raise (at once if idle, after its frame if busy) and wait for it."""
        self._inbox.put(_Stopped("the stream stopped"))
        self._thread.join()


def _stream(
    chunks: Sequence[Chunk],
    names: Sequence[str],
    folder: Path,
    layout: str,
    enums: Mapping[str, Sequence[str]],
    client: Any,
    report: Callable[[int], None],
    keep: Keep | None = None,
    repeats: Repeats | None = None,
) -> dict[str, Written]:
    """Write the tables ``names`` over ``chunks`` into ``folder``: every file of one model (or
    of the whole sweep, ``single``) written at once, a writer each; ``report`` is told each
    chunk's rows once every writer has taken them."""
    from sweeps.export.parquet import table_files

    written: dict[str, Written] = {name: (0, {}, []) for name in names}
    writers: dict[str, _Writer] = {}

    def close(key: str) -> None:
        for name, writer in writers.items():
            rows, info = writer.close()
            files = [*written[name][2], table_files(name, layout, [key])[0]]
            written[name] = (written[name][0] + rows, info, files)
        writers.clear()

    keys = [chunk.model if layout == "partitioned" else "" for chunk in chunks]
    with contextlib.closing(chunk_frames(chunks, names, enums, client, keep, repeats)) as evaluated:
        try:
            for index, frames in enumerate(evaluated):
                for name in names:
                    if name not in writers:
                        path = folder / table_files(name, layout, [keys[index]])[0]
                        writers[name] = _Writer(path, name)
                    writers[name].put(frames[name])
                rows = sum(frame.height for frame in frames.values())
                del frames  # what the writers took is theirs alone to hold
                for writer in writers.values():
                    writer.wait()
                report(rows)
                if index + 1 == len(keys) or keys[index + 1] != keys[index]:  # files end
                    close(keys[index])  # before the next chunk is taken (and one more begun)
        finally:
            for writer in writers.values():
                writer.stop()
    return written


def configurations(sweep: Sweep, budget: int) -> xr.Dataset | None:
    """The grid of ``sweep`` at its first batch size and prompt, or None if over ``budget``.

    Every variable without a batch dimension (ceiling, knee, max batch, ridge batch, ...) is
    there at every configuration, which is all ``sweeps.views.summary.summarize`` needs, for a
    fraction of the whole grid [budget in byte].
    """
    from sweeps.grid.build import build_grid

    one = dataclasses.replace(sweep, batch=sweep.batch[:1], prompt=sweep.prompt[:1])
    return build_grid(one) if estimate_bytes(one) <= budget else None


def spec_tables(sweep: Sweep) -> dict[str, Any]:
    """The spec frames of ``sweep`` (``hardware``, ``models``), from a one-point-per-axis grid."""
    from sweeps.export.frame import SPEC_TABLES
    from sweeps.grid.build import build_grid

    tiny = dataclasses.replace(
        sweep,
        batch=sweep.batch[:1],
        context=sweep.context[:1],
        prompt=sweep.prompt[:1],
        tp=sweep.tp[:1],
    )
    ds = build_grid(tiny)
    return {name: make(ds) for name, make in SPEC_TABLES.items()}


def _whole_table(
    sweep: Sweep,
    table: Any,
    folder: Path,
    layout: str,
    enums: Mapping[str, Sequence[str]],
    held: list[Any],
) -> Written:
    """A table whose analysis reduces over devices, tp or batch, from one grid of the whole
    sweep at its first context and prompt (which such an analysis does not depend on)."""
    import polars as pl

    from sweeps.export.frame import table_frame
    from sweeps.export.parquet import table_files
    from sweeps.grid.build import build_grid

    if not held:
        held.append(
            build_grid(
                dataclasses.replace(sweep, context=sweep.context[:1], prompt=sweep.prompt[:1])
            )
        )
    frame = table_frame(held[0], table, enums)
    models = [m.id for m in sweep.models] if layout == "partitioned" else [""]
    rows, files, info = 0, [], dict[str, Any]()
    for model in models:
        part = frame if not model else frame.filter(pl.col("model") == model)
        name = table_files(table.name, layout, [model])[0]
        count, info = sink(iter([part]), folder / name, table.name)
        rows += count
        files.append(name)
    return rows, info, files


def stream_tables(
    sweep: Sweep,
    chunks: Sequence[Chunk],
    folder: Path,
    layout: str,
    progress: Progress | None = None,
    client: Any = None,
    keep: Keep | None = None,
    repeats: Repeats | None = None,
) -> dict[str, Written]:
    """Write every analysis table of ``sweep`` into ``folder`` in ``layout``, chunk by chunk.

    Each chunk's grid is built once for all the tables that are not ``whole`` (and appended to
    ``keep``, in the chunks' order, where given; the columns that repeat from chunk to chunk
    are built once and shared through ``repeats`` where given, which holds them as long as
    it lives: for grids held in memory, not under a budget); the ``whole`` tables are then
    written from one grid of their own. Returns, per table, its rows, its columns' units and
    the files written (relative to ``folder``). ``progress`` is called after each chunk, with
    the rows of every table so far. Any failure (or an exception from ``progress``) stops the
    stream and propagates; the caller's atomic folder then removes the partial output.
    """
    from sweeps.grid.analyses import tables

    enums = categories(sweep)
    total = sum(chunk.points for chunk in chunks)
    done = 0

    def report(rows: int) -> None:
        nonlocal done
        done += rows
        if progress is not None:
            progress(done, total)

    if layout == "partitioned":  # every model's chunks together, in the order of the models
        models = list(dict.fromkeys(chunk.model for chunk in chunks))
        chunks = sorted(chunks, key=lambda chunk: models.index(chunk.model))
    streamed = [table.name for table in tables(sweep) if not table.whole]
    written = (
        _stream(chunks, streamed, folder, layout, enums, client, report, keep, repeats)
        if streamed
        else {}
    )
    whole: list[Any] = []  # the one-piece grid of the whole analyses, built once if needed
    for table in tables(sweep):
        if table.whole:
            written[table.name] = _whole_table(sweep, table, folder, layout, enums, whole)
    return {table.name: written[table.name] for table in tables(sweep)}
