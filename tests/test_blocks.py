"""grid.zarr written model by model as each model's grid is computed (issue 25, item 5): the
store a whole-grid ``to_zarr`` writes, and a failed run leaves nothing behind."""

from __future__ import annotations

import dataclasses
import json

import pytest
import xarray as xr
import zarr

from sweeps.config import parse_config
from sweeps.errors import WriteError
from sweeps.export import grid
from sweeps.export.blocks import ZarrBlocks
from sweeps.export.grid import to_zarr
from sweeps.grid.build import build_grid
from sweeps.pipeline import pieces, run_to_folder

from .test_pieces import CONFIG


@pytest.fixture(scope="module")
def sweep():
    return parse_config(CONFIG, "pieces.toml")


@pytest.fixture(scope="module")
def stores(sweep, tmp_path_factory):
    """The grid written whole by ``to_zarr`` and model by model by ``ZarrBlocks``, variables
    cut into blocks from 100 elements: the decode roofline's 144 are cut, one model's 48 of
    them would not be."""
    folder = tmp_path_factory.mktemp("blocks")
    whole = build_grid(sweep)
    assert whole["attainable_flops"].size == 144
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grid, "MIN_CHUNKED", 100)
        to_zarr(whole, folder / "whole.zarr")
        blocks = ZarrBlocks(folder / "blocks.zarr", len(sweep.models))
        for model in sweep.models:
            blocks.append(build_grid(dataclasses.replace(sweep, models=[model])))
        blocks.close()
    return whole, folder / "whole.zarr", folder / "blocks.zarr"


def test_the_store_opens_to_the_grid_in_memory(stores) -> None:
    whole, _, blocks = stores
    back = xr.open_zarr(blocks, consolidated=True).load()
    xr.testing.assert_identical(back, whole)
    # the second model's schedulers are all None: encoded as the whole grid's, not "None"
    assert "None" not in set(back["pools_scheduler"].values.ravel().tolist())


def test_the_store_has_the_whole_writes_arrays_chunks_codecs_and_attrs(stores) -> None:
    _, whole, blocks = stores
    ours, theirs = zarr.open_group(blocks), zarr.open_group(whole)
    assert sorted(ours.array_keys()) == sorted(theirs.array_keys())
    assert ours.attrs.asdict() == theirs.attrs.asdict()
    for name in theirs.array_keys():  # as JSON: a NaN fill value is equal to itself there
        mine = json.dumps(ours[name].metadata.to_dict(), sort_keys=True, default=str)
        assert mine == json.dumps(theirs[name].metadata.to_dict(), sort_keys=True, default=str)
    big = theirs["attainable_flops"]
    assert isinstance(big, zarr.Array)
    assert big.chunks[:2] == (1, 1)  # one block per model and device, as written whole
    small = theirs["bytes"]  # 72 elements: one block
    assert isinstance(small, zarr.Array)
    assert small.chunks == small.shape


def test_each_array_is_written_whole_once_or_one_model_block_at_a_time(sweep, tmp_path) -> None:
    """No write reads a chunk back: an array stored as one chunk over every model (or holding
    strings) is written once, with every model's values, at close; the others one model's
    block at a time, each array opened once for the region writes."""
    from sweeps.export import blocks as module

    writes: list[tuple[str, tuple[slice, ...]]] = []
    opened: list[str] = []
    real_assign, real_open = module._assign, zarr.open_group

    def assign(group, name, variable, place):  # type: ignore[no-untyped-def]
        writes.append((name, place))
        real_assign(group, name, variable, place)

    def open_group(*args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(args[0]))
        return real_open(*args, **kwargs)

    models = len(sweep.models)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grid, "MIN_CHUNKED", 100)
        patch.setattr(module, "_assign", assign)
        patch.setattr(zarr, "open_group", open_group)
        store = ZarrBlocks(tmp_path / "grid.zarr", models)
        for model in sweep.models:
            store.append(build_grid(dataclasses.replace(sweep, models=[model])))
        store.close()
        group = real_open(tmp_path / "grid.zarr")
    assert models > 1
    by_name: dict[str, list[tuple[slice, ...]]] = {}
    for name, place in writes:
        by_name.setdefault(name, []).append(place)
    assert by_name["attainable_flops"]
    assert by_name["bytes"]
    for name, places in by_name.items():
        array = group[name]
        assert isinstance(array, zarr.Array)
        model = list(array.metadata.dimension_names).index("model")
        text = array.dtype.kind in "USOT"  # strings: encoded from every model's values at once
        if array.chunks[model] == 1 and not text:  # cut: each later model, in order, its block
            assert [p[model] for p in places] == [slice(i, i + 1) for i in range(1, models)], (
                name,
                array.chunks,
                array.dtype,
            )
        else:  # one chunk over every model, or strings: written once, whole
            assert places == [(slice(None),) * array.ndim], name
    assert len(opened) <= 4  # create, resize, the region writes' arrays, the held: not per model


def test_a_short_or_failed_store_is_an_error(sweep, tmp_path) -> None:
    short = ZarrBlocks(tmp_path / "short.zarr", 2)
    short.append(build_grid(dataclasses.replace(sweep, models=sweep.models[:1])))
    with pytest.raises(RuntimeError, match="1 of 2 models' grids written"):
        short.close()
    zarr.open_group(tmp_path / "taken.zarr", mode="w")  # an existing store is never overwritten
    taken = ZarrBlocks(tmp_path / "taken.zarr", 1)
    taken.append(build_grid(dataclasses.replace(sweep, models=sweep.models[:1])))
    with pytest.raises(WriteError, match=r"taken\.zarr: cannot be written"):
        taken.close()


def test_a_run_that_fails_mid_grid_file_leaves_the_earlier_result(sweep, tmp_path) -> None:
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        first = run_to_folder(sweep, out)
        before = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
        calls = []

        def failing(self, piece, index):  # the second model's region fails
            calls.append(index)
            if index == 1:
                raise OSError(28, "No space left on device")
            return real(self, piece, index)

        real = ZarrBlocks._write_region
        patch.setattr(ZarrBlocks, "_write_region", failing)
        with pytest.raises(WriteError, match=r"grid\.zarr: the disk is full"):
            run_to_folder(sweep, out, force=True)
    assert 1 in calls
    after = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert after == before  # nothing half-written, the earlier result untouched
    xr.testing.assert_identical(xr.open_zarr(first.folder / "grid.zarr").load(), build_grid(sweep))


def test_a_run_in_pieces_does_not_join_the_grid_unless_asked(sweep, tmp_path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pieces, "PIECES_FROM", 0)
        result = run_to_folder(sweep, tmp_path)
    assert result.held is None  # the models' grids, not yet joined
    summary = result.summary()
    assert summary is not None
    assert result.held is None  # the summary is from the grid at one batch size
    assert result.dataset is not None
    assert result.held is result.dataset  # joined once, on first access
    assert result.timings["grid_file"] > 0


def test_the_last_models_write_finishes_the_store_before_close(sweep, tmp_path) -> None:
    """The held arrays and the consolidated metadata are written on the writer's thread
    right after the last model's region (beside the tables' last rows), not by ``close``: the
    store opens whole, consolidated, once the last write is done and before ``close``."""
    blocks = ZarrBlocks(tmp_path / "grid.zarr", len(sweep.models))
    for model in sweep.models:
        blocks.append(build_grid(dataclasses.replace(sweep, models=[model])))
    blocks._writes[-1].result()  # the last write done; close not called
    back = xr.open_zarr(tmp_path / "grid.zarr", consolidated=True).load()
    xr.testing.assert_identical(back, build_grid(sweep))
    blocks.close()


def test_a_model_handed_on_in_parts_gives_the_store_of_whole_models(tmp_path) -> None:
    """The first model's grid in two parts over its devices, as a run hands it on: the writer
    joins them on its thread, and the store is the one written from whole models; the model
    is counted once its last part comes."""
    from .test_pieces import SPLIT, _in_parts

    split = parse_config(SPLIT, "split.toml")
    grids = _in_parts(split)
    assert len(grids) == len(split.models) + 1
    blocks = ZarrBlocks(tmp_path / "parts.zarr", len(split.models), len(split.hardware))
    blocks.append(grids[0])
    assert blocks._writes == []  # the first device alone: nothing to write yet
    for part in grids[1:]:
        blocks.append(part)
    blocks.close()
    to_zarr(build_grid(split), tmp_path / "whole.zarr")
    ours, theirs = xr.open_zarr(tmp_path / "parts.zarr"), xr.open_zarr(tmp_path / "whole.zarr")
    xr.testing.assert_identical(ours.load(), theirs.load())
    short = ZarrBlocks(tmp_path / "short.zarr", 1, len(split.hardware))
    short.append(grids[0])
    with pytest.raises(RuntimeError, match="0 of 1 models' grids written"):
        short.close()
