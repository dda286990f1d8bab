"""(a) the engine, (c) the write limit for its bytes, (d) the export against Polars' writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeps.bench.timing import interleaved
from sweeps.config import Sweep
from sweeps.grid import DECODE_DIMS, PREFILL_DIMS
from sweeps.grid.chunks import table_points


def write_limit(
    shapes: list[tuple[tuple[int, ...], Any]],
) -> tuple[Callable[[], None], Callable[[], None]]:
    """Two functions: ``fill`` and ``copyto`` into fresh arrays of these shapes and dtypes."""
    import numpy as np

    def fill() -> None:
        for shape, dtype in shapes:
            np.empty(shape, dtype).fill(1)

    sources = [np.ones(shape, dtype) for shape, dtype in shapes]

    def copy() -> None:
        for source in sources:
            np.copyto(np.empty_like(source), source)

    return fill, copy


def measure_engine(sweep: Sweep) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """(a) and (c): the engine's and the write limit's figures, and the last grid built.

    They take turns, best of five each, so that the share of the limit compares like moments.
    """
    from sweeps.grid import build_grid

    ds = build_grid(sweep)  # warm-up: imports, caches, compiling
    shapes = [(ds[name].shape, ds[name].dtype) for name in ds.data_vars]
    written = int(sum(ds[name].nbytes for name in ds.data_vars))
    fill, copy = write_limit(shapes)
    del ds
    timed = interleaved({"engine": lambda: build_grid(sweep), "fill": fill, "copy": copy}, 5)
    t_engine, ds = timed["engine"]
    engine = {
        "decode_points": sweep.points(DECODE_DIMS),
        "prefill_points": sweep.points(PREFILL_DIMS),
        "seconds": t_engine,
        "points_per_s": table_points(sweep) / t_engine,
    }
    t_fill, t_copy = timed["fill"][0], timed["copy"][0]
    limit = {
        "bytes": written,
        "fill_s": t_fill,
        "copy_s": t_copy,
        "fill_bytes_per_s": written / t_fill,
        "copy_bytes_per_s": written / t_copy,
        "engine_bytes_per_s": written / t_engine,
        "engine_percent_of_fill": 100 * t_fill / t_engine,
        "engine_percent_of_copy": 100 * t_copy / t_engine,
    }
    return engine, limit, ds


def measure_export(ds: Any, folder: Path) -> dict[str, Any]:
    """(d): ``write_tables`` as ``run`` does it against Polars' ``write_parquet`` of equal
    frames built beforehand (every column one contiguous array), in turns, best of three."""
    from sweeps.export.parquet import WRITE_OPTIONS, frames, write_tables

    # The equal frames Polars writes: the same tables, each column one contiguous array, as a
    # frame a user built in memory would be. They are made before timing starts.
    tables = {name: frame.rechunk() for name, frame in frames(ds).items()}

    def ours() -> None:
        write_tables(ds, folder)

    def polars_own() -> None:
        for name, frame in tables.items():
            frame.write_parquet(folder / f"polars-{name}.parquet", **WRITE_OPTIONS)

    timed = interleaved({"ours": ours, "polars": polars_own}, 3)
    t_ours, t_polars = timed["ours"][0], timed["polars"][0]
    return {
        "rows": tables["decode"].height + tables["prefill"].height,
        "seconds": t_ours,
        "polars_seconds": t_polars,
        "ratio": t_ours / t_polars,
    }
