"""Stream a sweep too big for memory to Hive-partitioned Parquet datasets, chunk by chunk.

Layout inside the result folder: ``<table>/model=<id>/part-<N>.parquet`` for every analysis
table (``decode/``, ``prefill/``, ...). Every part has the schema a single-file export would
have (same columns, dtypes, Enum categories of the whole sweep, units metadata), so
``pl.scan_parquet("decode/")`` or DuckDB's ``read_parquet('decode/*/*.parquet',
hive_partitioning = true)`` read one table. Chunks are evaluated here, one at a time, or on a
``dask.distributed`` cluster where each worker writes its own parts (the folder must then be
on a file system the workers share).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeps.axes import categories
from sweeps.config import Sweep
from sweeps.grid.analyses import tables
from sweeps.grid.chunks import Chunk
from sweeps.grid.memory import estimate_bytes

if TYPE_CHECKING:
    import xarray as xr

Progress = Callable[[int, int], None]
"""Called after each chunk with (rows done, rows in all) [row]; may raise to abort."""

PART = "{table}/model={model}/part-{part:05d}.parquet"
"""Where a chunk's part of a table goes, relative to the result folder."""
PART_PATTERN = PART.replace("{model}", "<id>").replace("{part:05d}", "<N>")
"""``PART`` as the manifest describes it: ``<table>/model=<id>/part-<N>.parquet``."""


def part_path(table: str, chunk: Chunk) -> str:
    """Path of a chunk's part of ``table``, relative to the result folder."""
    return PART.format(table=table, model=chunk.model, part=chunk.part)


@dataclass
class ChunkResult:
    """What ``write_chunk`` wrote: rows and columns' units per table, and the part files."""

    index: int
    rows: dict[str, int] = field(default_factory=dict)
    columns: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def write_chunk(
    chunk: Chunk, folder: str | Path, enums: Mapping[str, Sequence[str]]
) -> ChunkResult:
    """Evaluate one chunk and write its part of every analysis table under ``folder``.

    ``enums`` are the whole sweep's Enum categories of the name axes, so every part has the
    same schema. Runs in a worker process as well as here: it needs only its arguments.
    """
    from sweeps.export.frame import table_frame
    from sweeps.export.parquet import write_frame
    from sweeps.grid.build import build_grid

    folder = Path(folder)
    ds = build_grid(chunk.sweep)
    result = ChunkResult(chunk.index)
    for table in tables(chunk.sweep):
        frame = table_frame(ds, table, enums)
        path = part_path(table.name, chunk)
        if not folder.is_dir():  # the run was abandoned and its staging folder removed
            msg = f"{folder}: the staging folder is gone; the run was stopped"
            raise FileNotFoundError(msg)
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        result.columns[table.name] = write_frame(frame, folder / path, table.name)
        result.rows[table.name] = frame.height
        result.files.append(path)
        del frame
    return result


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


def stream_chunks(
    sweep: Sweep,
    chunks: Sequence[Chunk],
    folder: str | Path,
    progress: Progress | None = None,
    client: Any = None,
) -> list[ChunkResult]:
    """Write every chunk's parts into ``folder``, here or on ``client`` (a dask Client).

    Returns the per-chunk results of ``write_chunk`` in chunk order. Any failure (or an
    exception from ``progress``) stops the stream and propagates; the caller's atomic folder
    then removes the partial output.
    """
    enums = categories(sweep)
    total = sum(chunk.points for chunk in chunks)
    done = 0
    results: list[ChunkResult] = []
    if client is None:
        for chunk in chunks:
            results.append(write_chunk(chunk, folder, enums))
            done += chunk.points
            if progress is not None:
                progress(done, total)
        return results
    from distributed import as_completed

    futures = client.map(write_chunk, list(chunks), folder=str(folder), enums=enums, pure=False)
    points = {future.key: chunk.points for future, chunk in zip(futures, chunks, strict=True)}
    try:
        for future in as_completed(futures):
            results.append(future.result())
            done += points[future.key]
            if progress is not None:
                progress(done, total)
    except BaseException:
        client.cancel(futures)
        raise
    return sorted(results, key=lambda r: r.index)
