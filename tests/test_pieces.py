"""A grid held in memory computed model by model into the writers (issue 25, item 5): the same
files, the same grid, the same manifest as computed in one piece."""

from __future__ import annotations

import polars as pl
import pyarrow.parquet as pq
import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.export import open_grid
from sweeps.grid.build import build_grid
from sweeps.grid.chunks import plan_chunks, split_first_device
from sweeps.grid.parts import ModelParts, join_devices
from sweeps.pipeline import pieces, plan, run_to_folder
from sweeps.pipeline.pieces import in_pieces
from sweeps.pipeline.receivers import Join

CONFIG = """
[sweep]
name = "pieces"
[axes]
model = ["llama-3-8b", "mixtral-8x7b", "qwen2.5-7b"]
hardware = ["h100-sxm", "l4"]
batch = [1, 8, 64]
context = [512, 4096]
kv_heads = ["native", 2]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = []
grid = "zarr"
[serving]
prompt_tokens = [512]
output_tokens = [64]
arrival_rate = [2.0]
"""


SPLIT = CONFIG[: CONFIG.index("[serving]")]
"""Without the serving plans (whose dims pair every device with every other), the first model's
first device is a piece of its own (``split_first_device``)."""


@pytest.fixture(scope="module", params=["serving", "split"])
def sweep(request):
    return parse_config(CONFIG if request.param == "serving" else SPLIT, "pieces.toml")


def test_the_first_model_is_cut_after_its_first_device_unless_devices_are_paired() -> None:
    split, paired = parse_config(SPLIT, "split.toml"), parse_config(CONFIG, "paired.toml")
    chunks = split_first_device(split, plan_chunks(split, 1 << 40))
    assert [(c.index, c.model, [h.id for h in c.sweep.hardware]) for c in chunks] == [
        (0, "llama-3-8b", ["h100-sxm"]),
        (1, "llama-3-8b", ["l4"]),
        (2, "mixtral-8x7b", ["h100-sxm", "l4"]),
        (3, "qwen2.5-7b", ["h100-sxm", "l4"]),
    ]
    assert len(split_first_device(paired, plan_chunks(paired, 1 << 40))) == 3
    one = parse_config(SPLIT.replace('["h100-sxm", "l4"]', '["l4"]'), "one.toml")
    assert len(split_first_device(one, plan_chunks(one, 1 << 40))) == 3


def test_a_models_parts_over_its_devices_join_to_its_grid() -> None:
    import dataclasses

    split = parse_config(SPLIT, "split.toml")
    model = dataclasses.replace(split, models=split.models[1:2])
    parts = [
        build_grid(dataclasses.replace(model, hardware=model.hardware[i : i + 1])) for i in (0, 1)
    ]
    joined, whole = join_devices(parts), build_grid(model)
    xr.testing.assert_identical(joined, whole)
    assert list(joined.variables) == list(whole.variables)
    assert join_devices(parts[:1]) is parts[0]


@pytest.fixture(scope="module")
def runs(sweep, tmp_path_factory):
    """The sweep written in one piece and model by model, in both layouts."""
    out = tmp_path_factory.mktemp("pieces")
    done = {}
    with pytest.MonkeyPatch.context() as patch:
        for how in ("whole", "pieces"):
            patch.setattr(pieces, "PIECES_FROM", 0 if how == "pieces" else 1 << 62)
            for layout in ("single", "partitioned"):
                done[how, layout] = run_to_folder(sweep, out / how / layout, layout=layout)
    return done


def test_small_grids_and_one_model_stay_in_one_piece(sweep) -> None:
    assert not in_pieces(plan(sweep))  # 1,152 rows: far below PIECES_FROM
    one = parse_config(CONFIG.replace(', "mixtral-8x7b", "qwen2.5-7b"', ""), "one.toml")
    assert len(one.models) == 1
    assert not in_pieces(plan(one))


def test_the_models_grids_joined_are_the_whole_grid(sweep) -> None:
    import dataclasses

    join = Join(len(sweep.models))
    for model in sweep.models:
        join.append(build_grid(dataclasses.replace(sweep, models=[model])))
    joined, whole = join.dataset(), build_grid(sweep)
    xr.testing.assert_identical(joined, whole)
    assert list(joined.variables) == list(whole.variables)  # in the same order
    assert joined.attrs == whole.attrs
    short = Join(2)
    short.append(build_grid(dataclasses.replace(sweep, models=sweep.models[:1])))
    with pytest.raises(RuntimeError, match="joined 1 of 2 models' grids"):
        short.dataset()


@pytest.fixture(scope="module")
def split_sweep():
    """The sweep whose first model a run cuts after its first device (no paired devices)."""
    return parse_config(SPLIT, "split.toml")


def _in_parts(sweep) -> list[xr.Dataset]:
    """The models' grids as a run hands them on: the first model in parts, one per device."""
    import dataclasses

    first = dataclasses.replace(sweep, models=sweep.models[:1])
    parts = [build_grid(dataclasses.replace(first, hardware=[h])) for h in sweep.hardware]
    rest = [build_grid(dataclasses.replace(sweep, models=[m])) for m in sweep.models[1:]]
    return parts + rest


def test_a_model_in_parts_is_counted_once_its_last_device_comes(split_sweep) -> None:
    sweep = split_sweep
    grids = _in_parts(sweep)
    counted = ModelParts(len(sweep.models), len(sweep.hardware))
    assert [counted.add(grid) for grid in grids] == [False, True, True, True]
    assert counted.complete == 3
    assert counted.done
    whole = ModelParts(2)  # no devices given: every grid is a whole model
    assert whole.add(grids[0]) is True
    assert not whole.done


def test_a_join_of_models_in_parts_is_the_whole_grid(split_sweep) -> None:
    sweep = split_sweep
    join = Join(len(sweep.models), len(sweep.hardware))
    for grid in _in_parts(sweep):
        join.append(grid)
    assert join.count == len(sweep.models)
    assert len(list(join.slices())) == 6  # the parts' slices, not joined
    xr.testing.assert_identical(join.dataset(), build_grid(sweep))
    short = Join(1, len(sweep.hardware))
    short.append(_in_parts(sweep)[0])  # the first device alone: the model is not complete
    with pytest.raises(RuntimeError, match="joined 0 of 1 models' grids"):
        short.dataset()


@pytest.mark.parametrize("layout", ["single", "partitioned"])
def test_the_files_are_those_of_a_grid_in_one_piece(runs, layout) -> None:
    whole, parts = runs["whole", layout], runs["pieces", layout]
    assert parts.files == whole.files
    assert parts.rows == whole.rows
    assert "grid_and_tables" in parts.timings
    assert "grid" not in parts.timings
    assert "grid" in whole.timings  # the other path really ran
    for name in whole.files:
        if not name.endswith(".parquet"):
            continue
        ours, theirs = parts.folder / name, whole.folder / name
        assert pl.read_parquet(ours).equals(pl.read_parquet(theirs)), name
        assert pq.read_schema(ours) == pq.read_schema(theirs), name
        assert pq.read_metadata(ours).num_row_groups == pq.read_metadata(theirs).num_row_groups
    xr.testing.assert_identical(
        open_grid(parts.folder / "grid.zarr").load(), open_grid(whole.folder / "grid.zarr").load()
    )
    assert (parts.folder / "report.html").is_file() is (whole.folder / "report.html").is_file()


def test_the_result_holds_the_whole_grid_and_its_summary(runs, sweep) -> None:
    parts, whole = runs["pieces", "single"], runs["whole", "single"]
    assert parts.dataset is not None
    xr.testing.assert_identical(parts.dataset, build_grid(sweep))
    assert parts.skipped == []
    assert parts.chunks == 1
    summary, expected = parts.summary(), whole.summary()
    assert summary is not None
    assert expected is not None
    assert summary.equals(expected)


def test_the_acceptance_grid_held_in_memory_is_computed_in_pieces() -> None:
    """Issue 25's 16.8 M-point run (planned only, under a budget it fits): model by model,
    and in one piece without the models."""
    from sweeps.bench.run_path import RUN_GRID, RUN_HARDWARE, RUN_MODELS

    text = RUN_GRID.format(
        models=RUN_MODELS, hardware=RUN_HARDWARE, batch=1024, context=32768
    ).replace("'", '"')
    assert in_pieces(plan(parse_config(text, "run.toml"), 1 << 36))  # held in memory


def test_the_hooks_start_while_the_tables_are_still_being_written(sweep, tmp_path) -> None:
    """The hooks are handed the models' grids once the last one is computed, before the spec
    tables (written after every analysis table) are made; run after the tables, as before,
    the patched spec tables would wait 10 s for a hook that never starts."""
    import threading

    started, seen = threading.Event(), []
    real = pieces.spec_tables

    def spec_tables(*args):
        seen.append(started.wait(10))
        return real(*args)

    def hook(slices, _sweep, _staging):
        started.set()
        return [f"{len(list(slices))} slices"]  # every model's, on every device

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        patch.setattr(pieces, "spec_tables", spec_tables)
        result = run_to_folder(sweep, tmp_path, hooks=(hook,))
    assert seen == [True]
    assert "6 slices" in result.files  # 3 models x 2 devices


def test_a_failing_hook_fails_the_run_and_leaves_nothing(sweep, tmp_path) -> None:
    def hook(slices, _sweep, staging):
        (staging / "half.txt").write_text("half", "utf-8")
        msg = "the hook broke"
        raise RuntimeError(msg)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        with pytest.raises(RuntimeError, match="the hook broke"):
            run_to_folder(sweep, tmp_path, hooks=(hook,))
    assert not (tmp_path / "pieces").exists()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no staging folder left


def test_a_failing_table_waits_for_the_hooks_before_the_folder_goes(sweep, tmp_path) -> None:
    """The tables fail while the hooks still write into the staging folder: the run raises the
    tables' error only once the hooks are done, and nothing is left."""
    import threading
    import time

    finished = threading.Event()

    def spec_tables(*args):
        msg = "the spec tables broke"
        raise OSError(msg)

    def hook(slices, _sweep, staging):
        time.sleep(0.5)
        (staging / "late.txt").write_text("late", "utf-8")
        finished.set()
        return ["late.txt"]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        patch.setattr(pieces, "spec_tables", spec_tables)
        with pytest.raises(OSError, match="the spec tables broke"):
            run_to_folder(sweep, tmp_path, hooks=(hook,))
    assert finished.is_set()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_the_small_grids_are_computed_beside_the_last_models_rows(sweep, tmp_path) -> None:
    """The spec tables and the summary's grid (``configurations``) are computed on a thread
    of their own once the last model's grid is, not after the tables' last rows on the
    run's thread; the result's summary is the one-piece run's (above)."""
    import threading

    where: list[str] = []
    real = pieces.spec_tables

    def spec_tables(*args):
        where.append(threading.current_thread().name)
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        patch.setattr(pieces, "spec_tables", spec_tables)
        result = run_to_folder(sweep, tmp_path)
    assert len(where) == 1
    assert where[0].startswith("sweeps-small-grids")
    assert result.configurations is not None
    assert (tmp_path / "pieces" / "hardware.parquet").is_file()


def test_a_hook_reading_the_tables_is_known_through_its_wrappers() -> None:
    """``tables_only`` is a class attribute of the simulated plans' hook; the command wraps
    each hook (``functools.wraps`` copies only the instance's own attributes), and the
    wrapper is still known to read the tables."""
    import functools

    from sweeps.pipeline.pieces import reads_tables

    class Reads:
        tables_only = True

        def __call__(self, *args):
            return []

    hook = Reads()
    wrapper = functools.wraps(hook)(lambda *args: hook(*args))
    assert getattr(wrapper, "tables_only", False) is False  # what the run used to read
    assert reads_tables(wrapper)
    assert reads_tables(hook)
    assert not reads_tables(functools.wraps(len)(lambda *args: []))


def test_a_feed_hands_on_each_models_slices_and_ends_after_the_last(sweep) -> None:
    import dataclasses

    from sweeps.pipeline.receivers import Feed, model_device_slices

    grids = [build_grid(dataclasses.replace(sweep, models=[m])) for m in sweep.models]
    feed = Feed(len(grids))
    for grid in grids:
        feed.append(grid)
    got = list(feed.slices())  # ends by itself after the last model: no wait
    expected = [one for grid in grids for one in model_device_slices(grid)]
    assert len(got) == len(expected) == 6
    for ours, theirs in zip(got, expected, strict=True):
        xr.testing.assert_identical(ours, theirs)
    dropped = Feed(2)
    dropped.append(grids[0])
    dropped.stop()  # the hook is done: what was not read, and what comes, is dropped
    dropped.append(grids[1])
    assert dropped._queue.empty()


def test_a_feed_of_models_in_parts_ends_after_the_last_models_grid(split_sweep) -> None:
    sweep = split_sweep
    from sweeps.pipeline.receivers import Feed, model_device_slices

    grids = _in_parts(sweep)
    feed = Feed(len(sweep.models), len(sweep.hardware))
    feed.append(grids[0])
    assert feed.count == 0  # the first model's first device: its model is not complete yet
    for grid in grids[1:]:
        feed.append(grid)
    got = list(feed.slices())
    assert len(got) == 6
    for ours, theirs in zip(got, model_device_slices(build_grid(sweep)), strict=True):
        xr.testing.assert_identical(ours, theirs)
    half = Feed(len(sweep.models), len(sweep.hardware))
    half.append(grids[0])
    half.fail(OSError("the disk is full"))
    with pytest.raises(RuntimeError, match="the run stopped after 0 of 3 models' grids"):
        list(half.slices())


def test_a_feed_that_fails_stops_its_reader_with_the_cause(sweep) -> None:
    import dataclasses

    from sweeps.pipeline.receivers import Feed

    feed = Feed(3)
    feed.append(build_grid(dataclasses.replace(sweep, models=sweep.models[:1])))
    cause = OSError("the disk is full")
    feed.fail(cause)
    slices = feed.slices()
    assert next(slices).sizes["model"] == 1
    assert next(slices).sizes["hardware"] == 1
    with pytest.raises(RuntimeError, match="the run stopped after 1 of 3 models' grids") as info:
        next(slices)
    assert info.value.__cause__ is cause


def _grids_watched(patch: pytest.MonkeyPatch) -> list:
    """Weak references to each model's grid, or part of it, as the run hands it on."""
    import weakref

    made: list = []
    real = pieces._Keep.append

    def append(self, piece):
        made.append(weakref.ref(piece["arithmetic_intensity"].values))  # the part's own array
        real(self, piece)

    patch.setattr(pieces._Keep, "append", append)
    return made


def _parts(sweep) -> int:
    """How many grids a run of ``sweep`` in pieces hands on (a model's parts each)."""
    return len(split_first_device(sweep, plan_chunks(sweep, 1 << 40)))


def _joins_watched(patch: pytest.MonkeyPatch) -> list:
    """Each join of a model's parts, wherever the package calls it (every module's name for
    ``join_devices``): a weak reference to the joined grid's array, and the thread it was
    joined on."""
    import sys
    import threading
    import weakref

    from sweeps.grid import parts

    joined: list = []
    real = parts.join_devices

    def join_devices(pieces_of_a_model):
        model = real(pieces_of_a_model)
        if len(pieces_of_a_model) > 1:
            name = threading.current_thread().name
            joined.append((weakref.ref(model["arithmetic_intensity"].values), name))
        return model

    for module in [m for name, m in sys.modules.items() if name.startswith("sweeps")]:
        if getattr(module, "join_devices", None) is real:
            patch.setattr(module, "join_devices", join_devices)
    return joined


def test_a_models_parts_are_joined_by_the_grid_files_writer_alone(sweep, tmp_path) -> None:
    """Handed on in parts, the first model's grid is joined once, for ``grid.zarr``, on its
    writer's thread: not on the thread computing the grid, where the writers waited for it
    (0.34 s of issue 14's grid), nor for the hooks, which take the parts' slices."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        joined = _joins_watched(patch)
        result = run_to_folder(sweep, tmp_path, hooks=(lambda s, _w, _f: [str(len(list(s)))],))
    split = _parts(sweep) > len(sweep.models)
    assert [name.startswith("sweeps-grid-file") for _, name in joined] == [True] * split
    assert "6" in result.files


def test_the_hooks_get_each_model_as_it_comes_and_no_grid_outlives_the_run(sweep, tmp_path) -> None:
    """Each hook (two here) is fed the models' slices as they are computed: the last model's
    grid waits for a hook to have the first model's slices (run at the end, as before, it would
    wait 10 s in vain). Nothing holds a model's grid once the run is done (it used to be held
    to the end for the result), and the result's grid is the whole grid again, on demand."""
    import gc
    import threading

    from sweeps.grid import build as grid_build

    first_seen, waited = threading.Event(), []
    real = grid_build.build_grid
    last = sweep.models[-1].id

    def build(chunk_sweep):
        if [m.id for m in chunk_sweep.models] == [last]:
            waited.append(first_seen.wait(10))
        return real(chunk_sweep)

    def hook(slices, _sweep, _staging):
        count = 0
        for one in slices:
            first_seen.set()
            count += one.sizes["hardware"]
        return [f"{count} slices"]

    def other(slices, _sweep, _staging):
        return [f"{sum(1 for _ in slices)} slices again"]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        patch.setattr(grid_build, "build_grid", build)
        made = _grids_watched(patch)
        joined = _joins_watched(patch)
        result = run_to_folder(sweep, tmp_path, hooks=(hook, other))
    assert waited == [True]
    assert {"6 slices", "6 slices again"} <= set(result.files)
    gc.collect()
    assert len(made) == _parts(sweep)
    assert [ref() for ref in made] == [None] * len(made)
    assert [ref() for ref, _ in joined] == [None] * len(joined)  # the grid file's join too
    assert result.held is None
    xr.testing.assert_identical(result.dataset, build_grid(sweep))


def test_a_hook_reading_the_tables_gets_the_held_grids_after_them(sweep, tmp_path) -> None:
    """A hook that reads the tables waits for them; the models' grids are then held for it
    (``Join``) and the others after it, and the result's grid is their join."""

    class Reads:
        tables_only = True

        def __call__(self, slices, _sweep, staging):
            return [f"{len(list(slices))} slices after {len(list(staging.glob('*.parquet')))}"]

    # the grid's tables; summary.parquet is written from the grid after the hooks
    tables = len(
        [name for name in run_to_folder(sweep, tmp_path / "first").rows if name != "summary"]
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        made = _grids_watched(patch)
        result = run_to_folder(sweep, tmp_path / "second", hooks=(Reads(),))
    assert len(made) == _parts(sweep)
    assert f"6 slices after {tables}" in result.files
    assert all(ref() is not None for ref in made)  # held by the result, to be joined
    xr.testing.assert_identical(result.dataset, build_grid(sweep))


def test_a_table_failing_midway_ends_a_hook_waiting_for_the_next_model(sweep, tmp_path) -> None:
    """The second model's grid fails while the hook waits for it: the feed ends, the hook
    stops with the cause, and the run raises the grid's error (it used to be a hook never fed
    and a run never ending); the run is on a thread of its own so a hang fails the test."""
    import threading

    from sweeps.grid import build as grid_build

    real, second = grid_build.build_grid, sweep.models[1].id
    seen: list[BaseException] = []
    raised: list[BaseException] = []

    def build(chunk_sweep):
        if [m.id for m in chunk_sweep.models] == [second]:
            msg = "the grid broke"
            raise OSError(msg)
        return real(chunk_sweep)

    def hook(slices, _sweep, _staging):
        try:
            return [str(sum(1 for _ in slices))]
        except RuntimeError as error:
            seen.append(error)
            raise

    def run() -> None:
        try:
            run_to_folder(sweep, tmp_path, hooks=(hook,))
        except BaseException as error:  # handed to the test's thread
            raised.append(error)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        patch.setattr(grid_build, "build_grid", build)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join(60)
    assert not thread.is_alive()
    assert [str(e) for e in raised] == ["the grid broke"]
    assert len(seen) == 1
    assert "of 3 models' grids" in str(seen[0])
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_netcdf_grid_file_is_written_from_the_held_grids(sweep, tmp_path) -> None:
    """A NetCDF grid file is written once every model is computed, from their join (held for
    it): the file of the grid computed in one piece, and the result's grid is that join."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        parts = run_to_folder(sweep, tmp_path / "pieces", grid_format="netcdf")
        patch.setattr(pieces, "PIECES_FROM", 1 << 62)
        whole = run_to_folder(sweep, tmp_path / "whole", grid_format="netcdf")
    assert "grid.nc" in parts.files
    assert "grid_and_tables" in parts.timings  # computed model by model
    assert "grid" in whole.timings  # in one piece
    with open_grid(parts.folder / "grid.nc") as ours, open_grid(whole.folder / "grid.nc") as theirs:
        xr.testing.assert_identical(ours.load(), theirs.load())
    xr.testing.assert_identical(parts.dataset, build_grid(sweep))


def test_the_hooks_start_once_the_writers_have_the_first_rows(sweep, tmp_path) -> None:
    """A hook begins (Altair's import, its first figures) only once the first piece's rows are
    with the table writers, so that it does not hold the interpreter while the first piece,
    cold, is computed and the writers wait for it; it still runs beside the writers."""
    import threading

    from sweeps.pipeline import stream

    put, seen = threading.Event(), []
    real_put = stream._Writer.put

    def recording_put(self, frame):  # type: ignore[no-untyped-def]
        put.set()
        return real_put(self, frame)

    def hook(slices, _sweep, _staging):
        seen.append(put.is_set())
        return [f"{len(list(slices))} slices"]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        patch.setattr(stream._Writer, "put", recording_put)
        result = run_to_folder(sweep, tmp_path, hooks=(hook,))
    assert seen == [True]
    assert "6 slices" in result.files


def test_a_first_piece_failing_starts_and_ends_the_waiting_hooks(sweep, tmp_path) -> None:
    """The first piece's grid fails before any row is written: the hooks, waiting for the first
    rows, are let go and end with the cause, and the run raises the grid's error (no hang: the
    run is on a thread of its own)."""
    import threading

    from sweeps.grid import build as grid_build

    raised: list[BaseException] = []
    seen: list[BaseException] = []

    def build(chunk_sweep):
        msg = "the first grid broke"
        raise OSError(msg)

    def hook(slices, _sweep, _staging):
        try:
            return [str(sum(1 for _ in slices))]
        except RuntimeError as error:
            seen.append(error)
            raise

    def run() -> None:
        try:
            run_to_folder(sweep, tmp_path, hooks=(hook,))
        except BaseException as error:  # handed to the test's thread
            raised.append(error)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        patch.setattr(grid_build, "build_grid", build)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join(60)
    assert not thread.is_alive()
    assert [str(e) for e in raised] == ["the first grid broke"]
    assert len(seen) == 1
    assert "after 0 of 3 models' grids" in str(seen[0])
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
