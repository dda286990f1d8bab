"""Write a sweep's tables chunk by chunk: files whose layout does not depend on the chunks.

A chunked (streamed) run evaluates the grid one chunk at a time (``sweeps.grid.chunks``) and
feeds each chunk's rows to a Parquet writer that emits row groups of a fixed size, so every
file is the one an in-memory run writes: ``<table>.parquet`` in the single layout,
``<table>/<model>.parquet`` in the partitioned one (the folder and file names carry no data:
every file keeps its ``model`` column, so pyarrow, pandas, Polars and DuckDB read the same
columns and types as from the single file).

Both cores work: while Polars' writer encodes one chunk's rows, a second thread evaluates the
next chunk (numba's loop and numpy release the GIL), so two chunks are in memory at once and
the plan cuts chunks against half the budget (``sweeps.pipeline.plan``). With a
``dask.distributed`` client the chunks are evaluated on its workers and their rows written
here, in order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeps.axes import categories
from sweeps.config import Sweep
from sweeps.grid.chunks import Chunk
from sweeps.grid.memory import estimate_bytes

if TYPE_CHECKING:
    import polars as pl
    import xarray as xr

Progress = Callable[[int, int], None]
"""Called after each chunk with (rows done, rows in all) [row]; may raise to abort."""


def chunk_frame(chunk: Chunk, table: str, enums: Mapping[str, Sequence[str]]) -> pl.DataFrame:
    """The rows of ``table`` over one chunk, with the whole sweep's Enum categories ``enums``."""
    from sweeps.export.frame import table_frame
    from sweeps.grid.build import build_grid

    return table_frame(build_grid(chunk.sweep), table, enums)


def chunk_frames(
    chunks: Sequence[Chunk], table: str, enums: Mapping[str, Sequence[str]], client: Any = None
) -> Iterator[pl.DataFrame]:
    """The frames of ``table`` over ``chunks``, in order, one evaluated ahead of the one taken.

    Here: a second thread evaluates chunk ``i + 1`` while the caller writes chunk ``i``. On
    ``client``: every chunk is submitted and the results taken in order.
    """
    if client is not None:
        futures = client.map(chunk_frame, list(chunks), table=table, enums=dict(enums), pure=False)
        try:
            for future in futures:
                yield future.result()
        finally:
            client.cancel(futures)
        return
    with ThreadPoolExecutor(1, thread_name_prefix="sweeps-chunk") as pool:
        ahead: Future[pl.DataFrame] | None = None
        for index in range(len(chunks)):
            current = ahead or pool.submit(chunk_frame, chunks[index], table, enums)
            ahead = (
                pool.submit(chunk_frame, chunks[index + 1], table, enums)
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

    def source(*_: Any) -> Iterator[pl.DataFrame]:
        yield first
        for frame in frames:
            rows.append(frame.height)
            yield frame

    path.parent.mkdir(parents=True, exist_ok=True)
    register_io_source(source, schema=first.schema).sink_parquet(
        path,
        metadata=parquet_metadata(first, info),
        **WRITE_OPTIONS,
    )
    return sum(rows), info


def configurations(sweep: Sweep, budget: int) -> xr.Dataset | None:
    """The grid of ``sweep`` at its first batch size and prompt, or None if over ``budget``.

    Every variable without a batch dimension (ceiling, knee, max batch, ridge batch, ...) is
    there at every configuration, which is all ``sweeps.pipeline.summary.summarize`` needs, for a
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
) -> tuple[int, dict[str, Any], list[str]]:
    """A table whose analysis reduces over devices, tp or batch, from one grid of the whole
    sweep at its first context and prompt (which such an analysis does not depend on)."""
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
) -> dict[str, tuple[int, dict[str, Any], list[str]]]:
    """Write every analysis table of ``sweep`` into ``folder`` in ``layout``, chunk by chunk.

    Returns, per table, its rows, its columns' units and the files written (relative to
    ``folder``). Any failure (or an exception from ``progress``) stops the stream and
    propagates; the caller's atomic folder then removes the partial output.
    """
    from sweeps.export.parquet import table_files
    from sweeps.grid.analyses import tables

    enums = categories(sweep)
    total = sum(chunk.points for chunk in chunks)
    done = 0
    written: dict[str, tuple[int, dict[str, Any], list[str]]] = {}

    def counted(frames: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        nonlocal done
        for frame in frames:
            done += frame.height
            yield frame
            if progress is not None:
                progress(done, total)

    whole: list[Any] = []  # the one-piece grid of the whole analyses, built once if needed
    for table in tables(sweep):
        if table.whole:
            written[table.name] = _whole_table(sweep, table, folder, layout, enums, whole)
            continue
        groups: dict[str, list[Chunk]] = {"": list(chunks)}
        if layout == "partitioned":
            groups = {}
            for chunk in chunks:
                groups.setdefault(chunk.model, []).append(chunk)
        rows, files = 0, []
        info: dict[str, Any] = {}
        for model, group in groups.items():
            name = table_files(table.name, layout, [model])[0]
            count, info = sink(
                counted(chunk_frames(group, table.name, enums, client)), folder / name, table.name
            )
            rows += count
            files.append(name)
        written[table.name] = (rows, info, files)
    return written
