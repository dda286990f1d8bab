"""One sweep end to end: config to grid to files. The CLI calls these; so can users."""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xarray as xr

from sweeps.config import Sweep, load_config
from sweeps.errors import ConfigError
from sweeps.export import (
    DATABASE,
    GRID_FILES,
    Written,
    atomic_folder,
    check_target,
    result_folder,
    write_database,
    write_frame,
    write_grid,
    write_tables,
)
from sweeps.export.parquet import PART_PATTERN
from sweeps.grid import analyses, build_grid
from sweeps.pipeline.distributed import PART_PATTERN as DISTRIBUTED_PARTS
from sweeps.pipeline.distributed import cluster_plan, write_streamed
from sweeps.pipeline.extras import check_extras
from sweeps.pipeline.hook import Hook, Track
from sweeps.pipeline.manifest import expected_counts, manifest
from sweeps.pipeline.pieces import model_pieces, reads_tables, write_pieces
from sweeps.pipeline.plan import Plan, slice_groups
from sweeps.pipeline.plan import plan as make_plan
from sweeps.pipeline.receivers import model_device_slices
from sweeps.pipeline.stream import Progress
from sweeps.pipeline.summarized import summary_table

if TYPE_CHECKING:
    import polars as pl


def run(
    config: Sweep | str | Path | Mapping[str, Any], chunks: Mapping[str, int] | None = None
) -> xr.Dataset:
    """The grid of a sweep, in memory.

    Parameters
    ----------
    config
        A ``Sweep``, the path of a config file to load first, or a dict of the file's tables
        (as ``tomllib`` reads one), validated as a file is.
    chunks
        ``{"model": 1}`` (needs the ``dask`` extra) gives a lazy grid whose full-rank
        variables are dask arrays, computed block by block when asked
        (``sweeps.grid.build_grid``).

    Returns
    -------
    xr.Dataset
        The grid (``sweeps.grid.build_grid``).
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

    ``dataset`` is the whole grid when it is held in memory (``grid``: computed model by model,
    it is joined, or computed again, on first access; ``held`` is it where already one dataset);
    for a streamed result it is ``None``: the grid never was in memory. ``configurations`` is then
    the grid at one batch size (``sweeps.pipeline.stream.configurations``), enough for the
    summary, or ``None`` where even that was over the memory budget; ``skipped`` names the
    outputs asked for that need the whole grid and were not written (the grid file, the hooks by
    name). ``layout`` is the files' (``single`` or ``partitioned``), ``chunks`` how many pieces
    the grid was computed in. ``seconds`` is the run's wall time: ``timings`` overlap (tables,
    grid file and hooks are written side by side), so their sum is more. ``notes`` are the
    hooks' lines on what they skipped (a chart that failed, and why). ``expected`` is each
    expected table's counts (``sweeps.pipeline.manifest.expected_counts``: rows, below their
    bound, without data, by basis), as the manifest has them; empty without an engine.
    """

    folder: Path
    grid: xr.Dataset | Callable[[], xr.Dataset] | None
    """The whole grid, or what joins or computes it on first access (``dataset``)."""
    rows: dict[str, int]
    timings: dict[str, float] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    layout: str = "single"
    chunks: int = 1
    configurations: xr.Dataset | None = None
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    expected: dict[str, dict[str, int]] = field(default_factory=dict)
    url: str | None = None
    """Where the result was committed when ``out`` is a URL (``folder`` is then its local
    copy, removed once the result is no longer referenced); ``None`` for a local folder."""

    @property
    def dataset(self) -> xr.Dataset | None:
        """The whole grid, ``None`` for a streamed result; a grid computed model by model is
        joined (``sweeps.pipeline.receivers.Join``) or computed again on first access."""
        if callable(self.grid):
            self.grid = self.grid()
        return self.grid

    @property
    def held(self) -> xr.Dataset | None:
        """The whole grid where it is in memory as one dataset now, without joining it."""
        return self.grid if isinstance(self.grid, xr.Dataset) else None

    def summary(self) -> pl.DataFrame | None:
        """``sweeps.views.summarize`` of the grid at every configuration held, or ``None``
        (no grid held)."""
        from sweeps.views.summary import summarize

        grid = self.held if self.held is not None else self.configurations
        return None if grid is None else summarize(grid)


def check_targets(sweeps: Iterable[Sweep], out: str | Path, force: bool = False) -> list[str]:
    """Before any of ``sweeps`` runs: each writes a folder of its own in ``out`` (two configs
    of one name would replace each other's result: a ``ConfigError`` naming both files), and
    none of those folders is there already unless ``force`` (``OutputExistsError``).
    ``out`` a URL: a commit that stopped there is recovered first (``sweeps.pipeline.remote``);
    the lines that say so are returned."""
    from sweeps.pipeline.remote import is_url

    if is_url(out):
        return _check_url_targets(sweeps, str(out), force)
    seen: dict[Path, Sweep] = {}
    for sweep in sweeps:
        target = result_folder(out, sweep.name)
        if target in seen:
            msg = (
                f"{seen[target].path} and {sweep.path} both write {target} (sweep.name "
                f"{sweep.name!r}); allowed: one config per sweep name in a run"
            )
            raise ConfigError(msg)
        seen[target] = sweep
        check_target(target, force)
    return []


def _check_url_targets(sweeps: Iterable[Sweep], url: str, force: bool) -> list[str]:
    """``check_targets`` of results on the URL ``url``: the recovery lines."""
    from sweeps.pipeline import remote

    where = remote.open_url(url)
    seen: dict[str, Sweep] = {}
    lines = []
    for sweep in sweeps:
        if sweep.name in seen:
            msg = (
                f"{seen[sweep.name].path} and {sweep.path} both write {where.where(sweep.name)} "
                f"(sweep.name {sweep.name!r}); allowed: one config per sweep name in a run"
            )
            raise ConfigError(msg)
        seen[sweep.name] = sweep
        lines += remote.check(where, sweep.name, force)
    return lines


def _post_step_tables(
    hooks: tuple[Hook, ...], rows: dict[str, int], columns: dict[str, Any]
) -> dict[str, object]:
    """The studies' post-step tables (``simulated.parquet``) into the manifest's ``rows`` and
    ``columns``, as the grid's tables are; returns, of each such table with statistics left
    null, which and why."""
    from sweeps.export.post_steps import PostStepHook, described

    nulls: dict[str, object] = {}
    for given in hooks:
        hook = inspect.unwrap(given)  # the command wraps each hook to name its phase
        if isinstance(hook, PostStepHook):
            info = described(hook)
            rows[hook.step.name] = info["rows"]
            columns[hook.step.name] = info["columns"]
            if info["nulls"]:
                nulls[hook.step.name] = info["nulls"]
    return nulls


def _write_manifest(folder: Path, document: dict[str, object]) -> None:
    from sweeps.export.failures import writing

    with writing(folder / "manifest.json"):
        (folder / "manifest.json").write_text(json.dumps(document, indent=2) + "\n", "utf-8")


@dataclass(frozen=True)
class RunOptions:
    """How ``run_to_folder`` runs a sweep, all but the sweep and the folder: the parameters
    of that name. ``of(sweep)`` fills what is left ``None`` with the sweep's own settings."""

    force: bool = False
    hooks: tuple[Hook, ...] = ()
    memory_budget: int | None = None
    progress: Progress | None = None
    client: Any = None
    layout: str | None = None
    grid_format: str | None = None
    duckdb: bool | None = None
    phase: Callable[[str], None] | None = None
    """Told what the run starts doing: computing the grid, the summary, the database."""
    track: Track | None = None
    """Told how each long phase moves (``Track``): the tables, the grid file."""

    def of(self, sweep: Sweep) -> ResolvedOptions:
        """These options, each left ``None`` taken from ``sweep``."""
        return ResolvedOptions(
            self.force,
            self.hooks,
            self.memory_budget,
            self.progress,
            self.client,
            self.layout or sweep.layout,
            self.grid_format or sweep.grid_format,
            sweep.duckdb if self.duckdb is None else self.duckdb,
            self.phase or (lambda _: None),
            self.track or _untracked,
        )


@dataclass(frozen=True)
class ResolvedOptions(RunOptions):
    """``RunOptions`` with the sweep's settings filled in (none ``None`` but the optional
    budget, progress and client)."""

    layout: str = "auto"
    grid_format: str = "zarr"
    duckdb: bool = False
    phase: Callable[[str], None] = lambda _: None
    track: Track = lambda *_: None


def _untracked(phase: str, done: int, total: int, what: str) -> None:
    """A ``Track`` told nothing."""


def run_to_folder(  # long: the one entry of a run, its steps in order, each a line or two
    sweep: Sweep,
    out: str | Path = "outputs",
    force: bool = False,
    hooks: tuple[Hook, ...] = (),
    memory_budget: int | None = None,
    progress: Progress | None = None,
    client: Any = None,
    layout: str | None = None,
    grid_format: str | None = None,
    duckdb: bool | None = None,
    phase: Callable[[str], None] | None = None,
    track: Track | None = None,
    *,
    plan: Plan | None = None,
) -> RunResult:
    """Compute ``sweep`` and write ``<out>/<name>/`` atomically (replaced only with ``force``).

    Writes the Parquet tables, the grid file, whatever ``hooks`` add (charts, report),
    ``sweep.duckdb`` where asked and ``manifest.json`` last. When the grid's estimated memory
    (``sweeps.grid.memory.estimate_bytes``) exceeds ``memory_budget``, or when ``client`` is
    given, the grid is evaluated in chunks and its rows streamed into the same files; the grid
    file is written block by block where its format allows (Zarr), the hooks get the grid one
    model and device at a time, and what cannot be written is skipped (the manifest says so).

    Parameters
    ----------
    sweep
        The validated sweep (``sweeps.load_config``).
    out
        The folder the run's folder ``<name>/`` is written into, or a URL of an installed
        fsspec protocol (a ``str``: ``s3://bucket/runs``, ``file:///abs``; the ``remote``
        extra): written in a local temporary folder, then uploaded and committed there with a
        journal (``sweeps.pipeline.remote``), ``RunResult.url`` naming it.
    force
        Replace ``<out>/<name>/`` where it exists (else ``OutputExistsError``).
    hooks
        Called with the grid (or its one-model-one-device slices), the sweep and the staging
        folder; each returns the files it wrote (``sweeps.charts.output_hooks``).
    memory_budget
        The most the grid may take in memory [byte] (default: half of what the process may
        use; at least ``sweeps.grid.memory.BASE_BYTES``, else ``ConfigError``).
    progress
        Called after each chunk with (rows done, rows in all) [row].
    client
        A ``dask.distributed.Client``: the chunks are computed on its workers.
    layout
        ``auto``, ``single`` or ``partitioned`` (``[outputs] layout``, see
        ``sweeps.pipeline.plan``); ``None``: the sweep's.
    grid_format
        ``zarr``, ``netcdf`` or ``none`` (``[outputs] grid``); ``None``: the sweep's.
    duckdb
        Write ``sweep.duckdb`` (``[outputs] duckdb``); ``None``: the sweep's.
    phase
        Told what the run starts doing: computing the grid, the summary, the database.
    track
        Told how each long phase moves, each beside the others (``sweeps.pipeline.hook.Track``:
        phase, done, in all, what it does): ``tables`` file by file, ``grid file`` chunk by
        chunk (Zarr; NetCDF once written). The figures' phase is the figures hook's
        (``sweeps.charts.output_hooks(sweep, track)``).
    plan
        ``sweeps.pipeline.plan(sweep, ...)`` where the caller has it already (``sweeps run``
        shows it first): the run follows it, pieces included, and plans nothing again; its
        budget is the run's (``memory_budget`` must then be left out or equal it) and it is
        distributed exactly when ``client`` is given. ``None``: planned here, once.

    Returns
    -------
    RunResult
        The folder, the grid where it was held, the row count of each table, the timings
        [s], the files written and what was skipped.
    """
    from sweeps.pipeline.remote import is_url, run_to_url

    if is_url(out):  # run here, then committed to the URL
        return run_to_url(
            sweep.name,
            str(out),
            force,
            client,
            lambda local: run_to_folder(
                sweep,
                local,
                False,
                hooks,
                memory_budget,
                progress,
                client,
                layout,
                grid_format,
                duckdb,
                phase,
                track,
                plan=plan,
            ),
        )
    began = time.perf_counter()
    given = RunOptions(force, hooks, memory_budget, progress, client, layout, grid_format, duckdb)
    settings = replace(given, phase=phase, track=track).of(sweep)
    how = _planned(sweep, plan, memory_budget, client, settings.layout)
    target = result_folder(out, sweep.name)
    check_target(target, force)
    check_extras(sweep, settings.grid_format, settings.duckdb)  # before any work
    timings: dict[str, float] = {}
    ds = None
    whole: Callable[[], xr.Dataset] | None = None
    pieces = bool(how.pieces) and not how.streamed  # model by model into the writers
    if not how.streamed and not pieces:
        settings.phase("computing the grid")
        start = time.perf_counter()
        ds = build_grid(sweep)
        timings["grid"] = time.perf_counter() - start
    with atomic_folder(target, force) as staging:
        start = time.perf_counter()
        if pieces:
            settings.phase("computing the grid and writing the tables")
            written, whole, extra, per_configuration = write_pieces(how, staging, settings, timings)
            skipped: list[str] = []
        else:  # the summary's grid (configurations) below; write_pieces computes its own
            written, extra, skipped = _write_outputs(how, ds, staging, settings, timings)
        timings["outputs"] = time.perf_counter() - start
        grid = per_configuration if pieces else ds  # the summary's: at every configuration
        per_configuration = summary_table(grid, how, staging, written, timings, settings.phase)
        files = [f for table in written.values() for f in table.files] + extra
        files += [DATABASE] if settings.duckdb else []  # written last, before the rename
        rows = {name: table.rows for name, table in written.items()}
        columns = {name: table.columns for name, table in written.items()}
        nulls = _post_step_tables(settings.hooks, rows, columns)
        files.append("manifest.json")
        counts = expected_counts(staging, files) if sweep.engine else None
        document = manifest(sweep, rows, columns, timings, files, _layout(how, skipped), counts)
        if nulls:
            document["nulls"] = nulls
        document["figures_not_drawn"] = [n for hook in hooks for n in getattr(hook, "notes", ())]
        _write_manifest(staging, document)
        if settings.duckdb:  # in the staging folder: its views read paths relative to it
            settings.phase(f"writing {DATABASE}")
            write_database(staging, {name: table.files for name, table in written.items()})
    return RunResult(
        target,
        ds if whole is None else whole,
        rows,
        timings,
        files,
        how.layout,
        how.chunks,
        per_configuration,
        skipped,
        time.perf_counter() - began,
        [line for hook in hooks for line in getattr(hook, "notes", ())],
        counts or {},
    )


def _planned(
    sweep: Sweep, given: Plan | None, budget: int | None, client: Any, layout: str
) -> Plan:
    """The run's plan, made once: ``given`` checked against the run's other parameters, or
    planned here; its pieces cut for the workers (``cluster_plan``) or model by model
    (``model_pieces``) where the run computes them so."""
    if given is None:
        given = make_plan(sweep, budget, distributed=client is not None, layout=layout)
    elif given.sweep is not sweep or given.distributed != (client is not None):
        msg = (
            f"{sweep.path}: run_to_folder: plan is of sweep {given.sweep.name!r} "
            f"(distributed: {given.distributed}), the run of {sweep.name!r} (client given: "
            f"{client is not None}); allowed: plan(sweep, distributed=client is not None)"
        )
        raise ConfigError(msg)
    elif budget is not None and budget != given.budget:
        msg = (
            f"{sweep.path}: run_to_folder: memory_budget = {budget:,} bytes, the plan's is "
            f"{given.budget:,}; allowed: the plan's budget, or memory_budget left out"
        )
        raise ConfigError(msg)
    if client is not None and not given.on_cluster:
        return cluster_plan(given, client)  # the workers' memory
    return model_pieces(given)


def _write_outputs(
    how: Plan,
    ds: xr.Dataset | None,
    staging: Path,
    settings: ResolvedOptions,
    timings: dict[str, float],
) -> tuple[dict[str, Written], list[str], list[str]]:
    """The tables, the grid file and the hooks into ``staging``: (tables, other files
    written, outputs skipped because the whole grid is not held).

    The grid file and the hooks (zarr's compressors, the report's Python) run on a thread of
    their own while the tables are written: Polars' writer leaves a core idle. Streamed here,
    the hooks that build slices of their own come after the tables (one thing at a time in
    the budget); streamed by a cluster's workers, the client holds no chunk, so the figures
    are drawn beside them (``_beside_workers``).
    """
    extra: list[str] = []
    beside = _beside_workers(how, ds, settings)
    stop = threading.Event()  # the tables failed: the hooks beside them stop at their next slice
    with ThreadPoolExecutor(2, thread_name_prefix="sweeps-outputs") as pool:
        side = pool.submit(_whole_grid_outputs, ds, how.sweep, staging, settings, timings, extra)
        drawn = pool.submit(_streamed_hooks, beside, how, staging, timings, stop)
        try:
            written = _write(how, ds, staging, timings, settings)
        except BaseException:
            stop.set()
            raise
        skipped = side.result()
        extra += drawn.result()
    if ds is None and _lazy_grid_file(how, settings, staging, timings):
        extra.append(GRID_FILES["zarr"])
        skipped.remove(GRID_FILES["zarr"])
    hooks = list(settings.hooks) if ds is None else []  # after the tables: one thing at a time
    hooks = [h for h in hooks if how.writes_figures or reads_tables(h)]  # or the tables alone
    extra += _streamed_hooks(() if beside else hooks, how, staging, timings, stop)
    for hook in beside or hooks:
        skipped.remove(getattr(hook, "__name__", "hook"))
    return written, extra, skipped


def _streamed_hooks(
    hooks: Sequence[Any],
    how: Plan,
    staging: Path,
    timings: dict[str, float],
    stop: threading.Event,
) -> list[str]:
    """Run ``hooks`` in order on the slices of a streamed grid (built only for a hook that
    reads them, and not past ``stop``); the files they wrote, each one's time in
    ``timings``."""
    files: list[str] = []
    for hook in hooks:
        start = time.perf_counter()
        files += hook(_until(stop, _slices(how)), how.sweep, staging)
        timings[getattr(hook, "__name__", "hook")] = time.perf_counter() - start
    return files


def _beside_workers(how: Plan, ds: xr.Dataset | None, settings: ResolvedOptions) -> list[Any]:
    """The hooks a run on a cluster runs while the workers write the tables: every one, in
    order, where none reads the tables (the figures and report from slices of their own).
    The client holds no chunk then, so the slices' budget is its own, and its core draws
    while the workers use theirs; none where a hook reads the tables (the studies'
    post-steps: the figures draw their results)."""
    hooks = list(settings.hooks)
    if ds is not None or settings.client is None or not how.writes_figures:
        return []
    return [] if any(reads_tables(hook) for hook in hooks) else hooks


class _Stopped(Exception):
    """Raised to a hook beside the workers once the tables failed (its result is not wanted)."""


def _until(stop: threading.Event, slices: Iterator[xr.Dataset]) -> Iterator[xr.Dataset]:
    """``slices``, each only while ``stop`` is not set."""
    for one in slices:
        if stop.is_set():
            msg = "the tables failed"
            raise _Stopped(msg)
        yield one


def _slices(how: Plan) -> Iterator[xr.Dataset]:
    """The one-model-one-device grids a hook asks for (the figures and report of a grid too
    big for memory), as views of grids built a few devices at a time (``slice_groups``, each
    under half the budget: the hook holds what it keeps of the slices before)."""
    for piece in slice_groups(how.sweep, how.budget // 2):
        yield from model_device_slices(build_grid(piece))


def _lazy_grid_file(
    how: Plan, settings: ResolvedOptions, staging: Path, timings: dict[str, float]
) -> bool:
    """Write ``grid.zarr`` of a streamed grid block by block, where it can be; True if done.

    Zarr stores chunk by chunk, so the lazy grid (``build_grid(chunks=...)``: one dask block
    per model and device) is written with one block per task in memory, after the tables.
    What the lazy grid computes at once (the variables without a device dimension) is held
    whole: at most the estimate of the sweep on one device, which must fit the budget
    (``Plan.writes_grid_file``). Needs dask (the ``dask`` extra); NetCDF has no such writer.
    """
    if not how.writes_grid_file(settings.grid_format):
        return False
    try:
        import dask  # noqa: F401
    except ImportError:
        return False
    start = time.perf_counter()
    lazy = build_grid(how.sweep, chunks={"model": 1, "hardware": 1})
    write_grid(lazy, staging / GRID_FILES["zarr"], "zarr", _told(settings, GRID_FILES["zarr"]))
    timings["grid_file"] = time.perf_counter() - start
    return True


def _told(settings: ResolvedOptions, grid_file: str) -> Callable[[int, int], None]:
    """The grid file's writer's ``told``: the ``grid file`` phase of ``settings.track``."""
    return lambda done, total: settings.track("grid file", done, total, f"writing {grid_file}")


def _whole_grid_outputs(
    ds: xr.Dataset | None,
    sweep: Sweep,
    staging: Path,
    settings: ResolvedOptions,
    timings: dict[str, float],
    files: list[str],
) -> list[str]:
    """Write the grid file and run the hooks where the whole grid ``ds`` is held (appending
    to ``files`` and ``timings``); returns what was skipped because it is not."""
    grid_file = GRID_FILES.get(settings.grid_format)
    outputs = [grid_file] if grid_file else []
    outputs += [getattr(hook, "__name__", "hook") for hook in settings.hooks]
    if ds is None:
        return outputs
    # the hooks first: the report is Python that holds the GIL, and overlaps best with
    # Polars' writer; the grid file's compressors then share the cores with its tail
    for hook in settings.hooks:
        start = time.perf_counter()
        files += hook(ds, sweep, staging)
        timings[getattr(hook, "__name__", "hook")] = time.perf_counter() - start
    if grid_file:
        start = time.perf_counter()
        write_grid(ds, staging / grid_file, settings.grid_format, _told(settings, grid_file))
        timings["grid_file"] = time.perf_counter() - start
        files.append(grid_file)
    return []


def _write(
    how: Plan,
    ds: xr.Dataset | None,
    staging: Path,
    timings: dict[str, float],
    settings: ResolvedOptions,
) -> dict[str, Written]:
    """Every table into ``staging``: from the whole grid ``ds``, or streamed chunk by chunk."""
    start = time.perf_counter()
    if ds is not None:
        track, progress = settings.track, settings.progress
        written = write_tables(
            ds, staging, how.layout, lambda file, i, n: track("tables", i, n, f"writing {file}")
        )
        files = sum(len(table.files) for table in written.values())
        track("tables", files, files, "tables written")
        timings.update({f"table_{name}": table.seconds for name, table in written.items()})
        if progress is not None:
            total = sum(written[table.name].rows for table in analyses.tables(how.sweep))
            progress(total, total)
        return written
    from sweeps.pipeline.stream import spec_tables

    streamed = write_streamed(how, staging, settings.progress, settings.client)  # or by the workers
    written = {name: Written(*entry) for name, entry in streamed.items()}
    timings["grid_and_tables"] = time.perf_counter() - start
    for name, table in spec_tables(how.sweep).items():
        info = write_frame(table, staging / f"{name}.parquet", name)
        written[name] = Written(table.height, info, [f"{name}.parquet"])
    return written


def _layout(how: Plan, skipped: list[str]) -> dict[str, object]:
    """The manifest's ``layout``: how the tables are stored and how the grid was computed."""
    document: dict[str, object] = {
        "kind": how.layout,
        "tables": {
            t.name: f"{t.name}.parquet"
            if how.layout == "single"
            else (DISTRIBUTED_PARTS if how.distributed else PART_PATTERN).format(table=t.name)
            for t in analyses.tables(how.sweep)
        },
        "chunks": how.chunks,
        "memory_budget_bytes": how.budget,
        "engine": "dask.distributed" if how.distributed else "local",
        "skipped": skipped,
    }
    if how.layout == "partitioned":
        document["by"] = ["model"]
    if skipped:
        document["reason"] = "the grid is streamed in chunks and never held in memory at once"
    return document
