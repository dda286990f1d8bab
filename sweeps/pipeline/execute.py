"""One sweep end to end: config to grid to files. The CLI calls these; so can users."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xarray as xr

from sweeps.config import Sweep, load_config
from sweeps.errors import ConfigError
from sweeps.export import atomic_folder, check_target, to_netcdf, write_frame, write_tables
from sweeps.grid import analyses, build_grid
from sweeps.pipeline.manifest import manifest
from sweeps.pipeline.plan import Plan, plan
from sweeps.pipeline.stream import PART_PATTERN, Progress

if TYPE_CHECKING:
    import polars as pl

Hook = Callable[[xr.Dataset, Sweep, Path], list[str]]
"""Extra outputs (charts, report): given the grid, the sweep and the staging folder, write
files there and return their paths relative to it."""


def run(
    config: Sweep | str | Path | Mapping[str, Any], chunks: Mapping[str, int] | None = None
) -> xr.Dataset:
    """The grid of a sweep: a ``Sweep``, the path of a config file to load first, or a dict of
    the file's tables (as ``tomllib`` reads one), validated as a file is.

    ``chunks`` (e.g. ``{"model": 1}``, needs the ``dask`` extra) gives a lazy grid whose
    full-rank variables are dask arrays, computed block by block when asked (see
    ``sweeps.grid.build_grid``).
    """
    if isinstance(config, Sweep):
        sweep = config
    elif isinstance(config, str | Path):
        sweep = load_config(config)
    elif isinstance(config, Mapping):
        from sweeps.pipeline.mapping import sweep_from_mapping

        sweep = sweep_from_mapping(config)
    else:
        msg = (
            f"sweeps.run: a config is a path, a Sweep or a dict of a config file's tables; "
            f"got {type(config).__name__}"
        )
        raise ConfigError(msg)
    return build_grid(sweep, chunks=chunks)


@dataclass
class RunResult:
    """What ``run_to_folder`` wrote: the folder, the grid, row counts and timings [s].

    ``dataset`` is the whole grid for a single-file result; for a streamed (partitioned)
    result it is ``None``: the grid never existed in memory at once. ``configurations`` is
    then the grid at one batch size (``sweeps.pipeline.stream.configurations``), enough for the
    summary, or ``None`` where even that was over the memory budget; ``skipped`` names the
    outputs asked for that need the whole grid and were not written (``grid.nc``, the hooks
    by name).
    """

    folder: Path
    dataset: xr.Dataset | None
    rows: dict[str, int]
    timings: dict[str, float] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    layout: str = "single"
    chunks: int = 1
    configurations: xr.Dataset | None = None
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> pl.DataFrame | None:
        """``sweeps.pipeline.summarize`` of the result, or ``None`` where no grid is held."""
        from sweeps.pipeline.summary import summarize

        grid = self.dataset if self.dataset is not None else self.configurations
        return None if grid is None else summarize(grid)


def _write_manifest(folder: Path, document: dict[str, object]) -> None:
    (folder / "manifest.json").write_text(json.dumps(document, indent=2) + "\n", "utf-8")


def run_to_folder(
    sweep: Sweep,
    out: str | Path = "outputs",
    force: bool = False,
    hooks: tuple[Hook, ...] = (),
    memory_budget: int | None = None,
    progress: Progress | None = None,
    client: Any = None,
) -> RunResult:
    """Compute ``sweep`` and write ``<out>/<name>/`` atomically (replaced only with ``force``).

    Writes a Parquet table per analysis and per spec, ``grid.nc`` (unless ``[outputs] grid =
    "none"``), whatever ``hooks`` add (charts, report), and ``manifest.json`` last.

    When the grid's estimated memory (``sweeps.grid.memory.estimate_bytes``) exceeds
    ``memory_budget`` [byte] (default: half the physical memory; at least
    ``sweeps.grid.memory.BASE_BYTES``, else ``ConfigError``), or when ``client`` (a
    ``dask.distributed.Client``) is given, the grid is evaluated in chunks and streamed to
    ``<table>/model=<id>/part-N.parquet`` instead; ``grid.nc`` and the hooks are skipped (they
    need the whole grid in memory) and the manifest says so. ``progress`` is called after each
    chunk with (rows done, rows in all).
    """
    how = plan(sweep, memory_budget, distributed=client is not None)
    if how.streamed:
        return _stream_to_folder(how, Path(out), force, progress, client, hooks)
    return _run_in_memory(sweep, Path(out), force, hooks, progress)


def _run_in_memory(
    sweep: Sweep, out: Path, force: bool, hooks: tuple[Hook, ...], progress: Progress | None
) -> RunResult:
    target = out / sweep.name
    check_target(target, force)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    ds = build_grid(sweep)
    timings["grid"] = time.perf_counter() - start
    with atomic_folder(target, force) as staging:
        start = time.perf_counter()
        tables = write_tables(ds, staging)
        files = [f"{name}.parquet" for name in tables]
        rows = {name: table.rows for name, table in tables.items()}
        columns = {name: table.columns for name, table in tables.items()}
        if sweep.grid_format == "netcdf":
            to_netcdf(ds, staging / "grid.nc")
            files.append("grid.nc")
        timings["export"] = time.perf_counter() - start
        if progress is not None:
            total = sum(rows[table.name] for table in analyses.tables(sweep))
            progress(total, total)
        for hook in hooks:
            start = time.perf_counter()
            files += hook(ds, sweep, staging)
            timings[getattr(hook, "__name__", "hook")] = time.perf_counter() - start
        files.append("manifest.json")
        _write_manifest(staging, manifest(sweep, rows, columns, timings, files))
    return RunResult(target, ds, rows, timings, files)


def _stream_to_folder(
    how: Plan,
    out: Path,
    force: bool,
    progress: Progress | None,
    client: Any,
    hooks: tuple[Hook, ...],
) -> RunResult:
    from sweeps.grid.chunks import plan_chunks
    from sweeps.pipeline.stream import configurations, spec_tables, stream_chunks

    sweep = how.sweep
    target = out / sweep.name
    check_target(target, force)
    chunks = plan_chunks(sweep, how.budget)
    timings: dict[str, float] = {}
    skipped = ["grid.nc"] if sweep.grid_format == "netcdf" else []
    skipped += [getattr(hook, "__name__", "hook") for hook in hooks]
    with atomic_folder(target, force) as staging:
        start = time.perf_counter()
        results = stream_chunks(sweep, chunks, staging, progress, client)
        timings["grid_and_export"] = time.perf_counter() - start
        rows = {table.name: 0 for table in analyses.tables(sweep)}
        files: list[str] = []
        for result in results:
            for name, count in result.rows.items():
                rows[name] += count
            files += result.files
        columns: dict[str, object] = dict(results[0].columns) if results else {}
        for name, frame in spec_tables(sweep).items():
            columns[name] = write_frame(frame, staging / f"{name}.parquet", name)
            files.append(f"{name}.parquet")
            rows[name] = frame.height
        files.append("manifest.json")
        layout = {
            "kind": "partitioned",
            "partitioning": "hive",
            "by": ["model"],
            "tables": {t.name: PART_PATTERN.format(table=t.name) for t in analyses.tables(sweep)},
            "chunks": len(chunks),
            "memory_budget_bytes": how.budget,
            "engine": "dask.distributed" if client is not None else "local",
            "skipped": skipped,
            "reason": "the grid is streamed in chunks and never held in memory at once",
        }
        _write_manifest(staging, manifest(sweep, rows, columns, timings, files, layout))
    # a small fraction of the sweep (one batch size), for the summary; outside the folder's
    # writing, so a failure here cannot touch the result
    per_configuration = configurations(sweep, how.budget)
    return RunResult(
        target, None, rows, timings, files, "partitioned", len(chunks), per_configuration, skipped
    )
