"""A grid that fits in memory, computed model by model into the table writers (issue 25, item 5).

Computed whole, a grid of 16.8 M points held every core for seconds before its first row was
written (0.7-3 s idle, more on a loaded machine), while its tables' writers then kept both cores
of the development machine busy on their own. Computed one model at a time instead, the
tables' writers start on the first model's rows while the next model is evaluated (the
streamed run's machinery, ``sweeps.pipeline.stream``, whose files are those of a whole grid),
each model's grid goes into its region of ``grid.zarr`` as it comes (``ZarrBlocks``, on a
thread of its own), and to the figures and report (their model-and-device slices, ``Feed``,
in ``sweeps.pipeline.receivers``; the hooks begin once the writers have the first rows),
and is then let go: the run's result computes the whole grid again if asked for it. Where
something needs the grids after the tables (a hook reading the tables, a NetCDF grid file)
they are held (``Join``) and joined into the whole grid (value for value the grid computed in
one piece). The first model's first device is a piece of its own (``split_first_device``),
handed on as a part of its model: the grid file's writer joins the two on its own thread
(``sweeps.grid.parts.join_devices``), the hooks take its slices as they are. A model's grid alone
is also quicker to build than its share of the whole one (its arrays are smaller: measured 3.7-4.7
s for four models one by one against 7.6-9.0 s in one piece, on a loaded machine).

Used from ``PIECES_FROM`` points and more than one model: below, the grid takes a fraction of
a second and one piece is simplest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xarray as xr

from sweeps.config import Sweep
from sweeps.export.blocks import ZarrBlocks
from sweeps.export.frame import Repeats
from sweeps.export.parquet import Written, write_frame
from sweeps.grid.chunks import Chunk, plan_chunks, split_first_device
from sweeps.grid.parts import ModelParts
from sweeps.pipeline.receivers import Feed, Join
from sweeps.pipeline.stream import Keep, Progress, configurations, spec_tables, stream_tables

if TYPE_CHECKING:
    from sweeps.pipeline.execute import ResolvedOptions
    from sweeps.pipeline.hook import Hook
    from sweeps.pipeline.plan import Plan

PIECES_FROM = 1 << 21
"""Points (rows of every table together) from which a grid held in memory is computed model by
model into the writers (2,097,152)."""


def in_pieces(how: Plan) -> bool:
    """Whether a run planned ``how`` computes its grid model by model (held in memory, more
    than one model, ``PIECES_FROM`` points or more)."""
    return not how.streamed and len(how.sweep.models) > 1 and how.points >= PIECES_FROM


def model_pieces(how: Plan) -> Plan:
    """``how`` with its pieces where it computes its grid model by model (``in_pieces``): one
    per model (the whole sweep fits the budget), the first model's first device alone
    (``split_first_device``); ``how`` itself otherwise, or where they are cut already."""
    if how.pieces or not in_pieces(how):
        return how
    pieces = split_first_device(how.sweep, plan_chunks(how.sweep, how.budget))
    return dataclasses.replace(how, pieces=tuple(pieces))


class _Keep:
    """Each model's grid as it is computed, to each of ``receivers`` in turn (the grid file's
    writer, the ``Join``, the hooks' ``Feed``s); ``last`` is called once the last model's grid
    is computed. A model computed in parts over its devices is handed on part by part: each
    receiver joins them where it needs the model whole (``sweeps.grid.parts``), off the thread
    computing the grid."""

    def __init__(
        self, receivers: Sequence[Keep], last: Callable[[], None], models: int, devices: int
    ) -> None:
        self.receivers = receivers
        self.last = last
        self._parts = ModelParts(models, devices)

    def append(self, piece: xr.Dataset) -> None:
        for receiver in self.receivers:
            receiver.append(piece)
        if self._parts.add(piece) and self._parts.done:
            self.last()


def write_in_pieces(
    sweep: Sweep,
    chunks: Sequence[Chunk],
    staging: Path,
    layout: str,
    budget: int,
    progress: Progress | None = None,
    receivers: Sequence[Keep] = (),
) -> tuple[dict[str, Written], xr.Dataset | None]:
    """Write every table of ``sweep`` into ``staging`` in ``layout`` from its models' grids
    (``chunks``: ``model_pieces``), one model evaluated ahead of the writers, each model's
    grid also handed to each of ``receivers`` in turn (the grid file's writer, a ``Join``,
    the hooks' ``Feed``s) as soon as it is computed; the tables written, and the grid at the
    first batch and prompt (``configurations``: the summary's, None over ``budget``).

    The small grids (the spec tables' and ``configurations``) are computed on a thread of
    their own from the moment the last model's grid is computed, beside the last rows rather
    than after them (0.1 s of issue 14's run on one core)."""
    small: list[Future[tuple[dict[str, Any], xr.Dataset | None]]] = []
    with ThreadPoolExecutor(1, thread_name_prefix="sweeps-small-grids") as pool:

        def last() -> None:
            small.append(pool.submit(_small_grids, sweep, budget))

        keep = _Keep(receivers, last, len(sweep.models), len(sweep.hardware))
        streamed = stream_tables(
            sweep, chunks, staging, layout, progress, keep=keep, repeats=Repeats()
        )
        tables, per_configuration = small[0].result()  # submitted with the last model
    written = {name: Written(*entry) for name, entry in streamed.items()}
    for name, table in tables.items():
        info = write_frame(table, staging / f"{name}.parquet", name)
        written[name] = Written(table.height, info, [f"{name}.parquet"])
    return written, per_configuration


def _small_grids(sweep: Sweep, budget: int) -> tuple[dict[str, Any], xr.Dataset | None]:
    """The spec tables of ``sweep`` and its grid at the first batch and prompt (None over
    ``budget`` [byte])."""
    return spec_tables(sweep), configurations(sweep, budget)


def reads_tables(hook: Hook) -> bool:
    """Whether ``hook`` reads the tables written into the staging folder, not the grid's
    slices (its ``tables_only``, through any ``functools.wraps`` wrappers around it)."""
    return bool(getattr(inspect.unwrap(hook), "tables_only", False))


class _Hooks:
    """A run's hooks, each timed into ``timings`` under its name."""

    def __init__(
        self, hooks: tuple[Hook, ...], sweep: Sweep, staging: Path, timings: dict[str, float]
    ) -> None:
        self.hooks, self.sweep, self.staging, self.timings = hooks, sweep, staging, timings

    def run(self, hook: Hook, slices: Iterator[xr.Dataset]) -> list[str]:
        """``hook`` on ``slices``: the files it wrote."""
        begun = time.perf_counter()
        files = hook(slices, self.sweep, self.staging)
        self.timings[getattr(hook, "__name__", "hook")] = time.perf_counter() - begun
        return files

    def fed(self, hook: Hook, feed: Feed, begun: threading.Event) -> list[str]:
        """``hook`` on the slices of ``feed`` as they come, once the writers have the first
        rows (``begun``); the feed stopped once it is done."""
        try:
            begun.wait()
            return self.run(hook, feed.slices())
        finally:
            feed.stop()

    def in_order(self, join: Join) -> list[str]:
        """Every hook in turn on the held models' slices."""
        return [f for hook in self.hooks for f in self.run(hook, join.slices())]


def write_pieces(
    how: Plan, staging: Path, options: ResolvedOptions, timings: dict[str, float]
) -> tuple[dict[str, Written], Callable[[], xr.Dataset], list[str], xr.Dataset | None]:
    """A run's outputs from its models' grids: the tables and ``grid.zarr`` as each model's
    grid is computed, and each hook on a thread of its own, fed each model's model-and-device
    slices as it comes (``Feed``) from the moment the writers have the first piece's rows
    (before, Altair's import held the interpreter while the first piece, cold, was computed,
    and the writers waited: they began 0.3-0.4 s later); (tables, what gives the whole grid
    on demand, other files written, the grid at the first batch and prompt:
    ``write_in_pieces``).

    The models' grids are held (``Join``) only where something needs them after the tables: a
    hook that reads the tables written (the simulated plans read ``pools.parquet``, written
    after the last model's rows), which runs with the others in order once every table is
    written, or a NetCDF grid file (``options.grid_format``), written last from the joined grid.
    Otherwise no model's grid outlives its rows, its blocks and its figures, and the whole grid
    is computed again if asked for (``build_grid``, value for value the joined one).

    A failure of the tables ends the hooks' feeds, waits for the hooks (they write into
    ``staging``) and propagates; a hook's failure propagates once the tables are written.
    """
    from sweeps.export.grid import GRID_FILES, write_grid
    from sweeps.grid.build import build_grid

    start = time.perf_counter()
    sweep, grid_format, hooks = how.sweep, options.grid_format, options.hooks
    progress = options.progress
    grid_file = GRID_FILES.get(grid_format)
    models, devices = len(sweep.models), len(sweep.hardware)  # a model's parts: its devices
    blocks = None
    if grid_format == "zarr":
        blocks = ZarrBlocks(staging / GRID_FILES["zarr"], models, devices)
    late = any(reads_tables(hook) for hook in hooks)
    join = Join(models, devices) if late or (grid_file and blocks is None) else None
    fed_hooks = [] if late else [(hook, Feed(models, devices)) for hook in hooks]
    feeds = [feed for _, feed in fed_hooks]

    run = _Hooks(hooks, sweep, staging, timings)
    receivers = [r for r in (blocks, join) if r is not None] + feeds
    begun = threading.Event()  # the writers have the first rows: the hooks start

    def told(done: int, total: int) -> None:
        begun.set()
        if progress is not None:
            progress(done, total)

    with ThreadPoolExecutor(max(1, len(feeds)), thread_name_prefix="sweeps-hooks") as pool:
        hooked = [pool.submit(run.fed, hook, feed, begun) for hook, feed in fed_hooks]
        try:  # on a failure, leaving the pool waits for the hooks before the folder is removed
            written, per_configuration = write_in_pieces(
                sweep, how.pieces, staging, how.layout, how.budget, told, receivers
            )
        except BaseException as error:
            begun.set()
            if blocks is not None:
                blocks.abort()
            for feed in feeds:
                feed.fail(error)
            raise
        timings["grid_and_tables"] = time.perf_counter() - start
        if late and join is not None:
            hooked = [pool.submit(run.in_order, join)]
        with blocks or contextlib.nullcontext():  # stops the grid file's writer if a hook fails
            extra = [f for future in hooked for f in future.result()]
            if blocks is not None:
                blocks.close()
    if grid_file and join is not None and blocks is None:  # NetCDF: from the joined grid
        what = f"writing {grid_file}"
        told = lambda done, total: options.track("grid file", done, total, what)  # noqa: E731
        write_grid(join.dataset(), staging / grid_file, grid_format, told)
    if grid_file:
        timings["grid_file"] = time.perf_counter() - start  # from the first block on
        extra.append(grid_file)
    whole = join.dataset if join is not None else functools.partial(build_grid, sweep)
    return written, whole, extra, per_configuration
