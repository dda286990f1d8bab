"""Stream a sweep too big for memory to a Hive-partitioned Parquet dataset, chunk by chunk.

Layout inside the result folder: ``decode/model=<id>/part-<N>.parquet`` and the same under
``prefill/``. Every part has the schema a single-file export would have (same columns, dtypes,
Enum categories of the whole sweep, units metadata), so ``pl.scan_parquet("decode/")`` or
DuckDB's ``read_parquet('decode/*/*.parquet', hive_partitioning = true)`` read one table.
Chunks are evaluated here, one at a time, or on a ``dask.distributed`` cluster where each
worker writes its own parts (the folder must then be on a file system the workers share).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeps.config import Sweep
from sweeps.grid.chunks import Chunk

if TYPE_CHECKING:
    import xarray as xr

Progress = Callable[[int, int], None]
"""Called after each chunk with (points done, points in all) [point]; may raise to abort."""

PHASES = ("decode", "prefill")


def categories(sweep: Sweep) -> dict[str, list[str]]:
    """Enum categories of the name axes of ``sweep``: its model, hardware and dtype names."""
    return {
        "model": [m.id for m in sweep.models],
        "hardware": [h.id for h in sweep.hardware],
        "kv_dtype": [d.name for d in sweep.kv_dtype],
        "weight_dtype": [d.name for d in sweep.weight_dtype],
    }


def part_path(phase: str, chunk: Chunk) -> str:
    """Path of a chunk's part, relative to the result folder."""
    return f"{phase}/model={chunk.model}/part-{chunk.part:05d}.parquet"


def write_chunk(
    chunk: Chunk, folder: str | Path, names: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """Evaluate one chunk and write its decode and prefill parts under ``folder``.

    Returns ``{"index", "rows": {phase: rows}, "files": [...], "columns": {phase: info}}``.
    Runs in a worker process as well as here: it needs only its arguments.
    """
    from sweeps.export.frame import decode_frame, prefill_frame
    from sweeps.export.parquet import write_frame
    from sweeps.grid.build import build_grid

    folder = Path(folder)
    ds = build_grid(chunk.sweep)
    result: dict[str, Any] = {"index": chunk.index, "rows": {}, "files": [], "columns": {}}
    for phase, make in (("decode", decode_frame), ("prefill", prefill_frame)):
        frame = make(ds, names)
        path = part_path(phase, chunk)
        if not folder.is_dir():  # the run was abandoned and its staging folder removed
            msg = f"{folder}: the staging folder is gone; the run was stopped"
            raise FileNotFoundError(msg)
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        result["columns"][phase] = write_frame(frame, folder / path, phase)
        result["rows"][phase] = frame.height
        result["files"].append(path)
        del frame
    return result


def configurations(sweep: Sweep, budget: int) -> xr.Dataset | None:
    """The grid of ``sweep`` at its first batch size and prompt, or None if over ``budget``.

    Every variable without a batch dimension (ceiling, knee, max batch, ridge batch, ...) is
    there at every configuration, which is all ``sweeps.summary.summarize`` needs, for a
    fraction of the whole grid [budget in byte].
    """
    from sweeps.grid.build import build_grid
    from sweeps.grid.chunks import estimate_bytes

    one = dataclasses.replace(sweep, batch=sweep.batch[:1], prompt=sweep.prompt[:1])
    return build_grid(one) if estimate_bytes(one) <= budget else None


def spec_tables(sweep: Sweep) -> dict[str, Any]:
    """The ``hardware`` and ``models`` frames of ``sweep``, from a one-point-per-axis grid."""
    from sweeps.export.frame import hardware_frame, models_frame
    from sweeps.grid.build import build_grid

    tiny = dataclasses.replace(
        sweep,
        batch=sweep.batch[:1],
        context=sweep.context[:1],
        prompt=sweep.prompt[:1],
        tp=sweep.tp[:1],
    )
    ds = build_grid(tiny)
    return {"hardware": hardware_frame(ds), "models": models_frame(ds)}


def stream_chunks(
    sweep: Sweep,
    chunks: Sequence[Chunk],
    folder: str | Path,
    progress: Progress | None = None,
    client: Any = None,
) -> list[dict[str, Any]]:
    """Write every chunk's parts into ``folder``, here or on ``client`` (a dask Client).

    Returns the per-chunk results of ``write_chunk`` in chunk order. Any failure (or an
    exception from ``progress``) stops the stream and propagates; the caller's atomic folder
    then removes the partial output.
    """
    names = categories(sweep)
    total = sum(chunk.points for chunk in chunks)
    done = 0
    results: list[dict[str, Any]] = []
    if client is None:
        for chunk in chunks:
            results.append(write_chunk(chunk, folder, names))
            done += chunk.points
            if progress is not None:
                progress(done, total)
        return results
    from distributed import as_completed

    futures = client.map(write_chunk, list(chunks), folder=str(folder), names=names, pure=False)
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
    return sorted(results, key=lambda r: r["index"])
