"""The streamed run's threads (``sweeps.pipeline.stream``): one grid per chunk for every table,
and any failure stops every writer and the evaluation, then propagates."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import polars as pl
import pytest

from sweeps.config import parse_config
from sweeps.grid import build
from sweeps.grid.analyses import tables
from sweeps.grid.chunks import Chunk, plan_chunks
from sweeps.grid.memory import BASE_BYTES, estimate_bytes
from sweeps.pipeline import run_to_folder, stream
from sweeps.pipeline.plan import chunk_budget

from .test_stream import CONFIG
from .test_stream import SERVED as STREAM_SERVED

SERVED = STREAM_SERVED.replace('model = ["llama-3-8b"]', 'model = ["llama-3-8b", "mistral-7b"]')
"""``test_stream``'s served sweep with a second model, for the partitioned layout."""


def _budget(sweep, parts):
    return BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // parts


def _count_grids(monkeypatch) -> list:
    built: list = []
    real = build.build_grid

    def counted(sweep, **options):
        built.append(sweep)
        return real(sweep, **options)

    monkeypatch.setattr(build, "build_grid", counted)
    return built


def _small_grids(sweep, summary: bool):
    """The spec tables' one-point grid, then the summary's one-batch grid if it fits."""
    first = {"batch": sweep.batch[:1], "prompt": sweep.prompt[:1]}
    tiny = dataclasses.replace(sweep, context=sweep.context[:1], tp=sweep.tp[:1], **first)
    return [tiny, dataclasses.replace(sweep, **first)] if summary else [tiny]


@pytest.mark.parametrize("layout", ["single", "partitioned"])
def test_each_chunk_grid_is_built_once_for_all_its_tables(monkeypatch, tmp_path, layout):
    """Decode and prefill come from one grid per chunk; beside those, only the spec tables' and
    the summary's small grids are built (they used to be built per table); ``progress`` is
    told once per chunk, with the rows of both tables."""
    sweep = parse_config(CONFIG, "stream.toml")
    assert [t.name for t in tables(sweep)] == ["decode", "prefill"]
    budget = _budget(sweep, 10)
    chunks = plan_chunks(sweep, chunk_budget(budget))
    built = _count_grids(monkeypatch)
    seen: list[tuple[int, int]] = []
    parts = run_to_folder(
        sweep, tmp_path, layout=layout, memory_budget=budget, progress=lambda *a: seen.append(a)
    )
    assert parts.chunks == len(chunks) > len(sweep.models)
    assert parts.configurations is not None
    assert built == [*(chunk.sweep for chunk in chunks), *_small_grids(sweep, summary=True)]
    assert len(seen) == len(chunks)
    assert [done for done, _ in seen][-1] == sum(parts.rows[t] for t in ("decode", "prefill"))


@pytest.mark.parametrize("layout", ["single", "partitioned"])
def test_the_whole_tables_add_one_grid_and_match_in_memory(monkeypatch, tmp_path, layout):
    """Serving and pools reduce over devices: one grid of the whole sweep at one context serves
    both, and every streamed file equals the in-memory run's, row for row, in either layout."""
    sweep = parse_config(SERVED, "served.toml")
    whole = run_to_folder(sweep, tmp_path / "whole", layout=layout)
    budget = _budget(sweep, 2)  # 3 parts fell under the minimum once pools had a row per scheduler
    chunks = plan_chunks(sweep, chunk_budget(budget))
    built = _count_grids(monkeypatch)
    streamed = run_to_folder(sweep, tmp_path / "streamed", layout=layout, memory_budget=budget)
    assert streamed.chunks == len(chunks) > len(sweep.models)
    one_context = dataclasses.replace(sweep, context=sweep.context[:1], prompt=sweep.prompt[:1])
    assert streamed.configurations is None  # the serving grid at one batch is over the budget
    expected = [*(chunk.sweep for chunk in chunks), one_context, *_small_grids(sweep, False)]
    # summary.parquet: the one-batch grid of each model alone (the whole one is over the budget)
    first = {"batch": sweep.batch[:1], "prompt": sweep.prompt[:1]}
    expected += [dataclasses.replace(sweep, models=(m,), **first) for m in sweep.models]
    assert built == expected
    names = sorted(f for f in whole.files if f.endswith(".parquet"))
    assert names == sorted(f for f in streamed.files if f.endswith(".parquet"))
    assert any(name.startswith("pools") for name in names)
    for name in names:
        one, other = (pl.read_parquet(run.folder / name) for run in (whole, streamed))
        assert one.height > 0
        assert one.equals(other), name


def _stream_in_thread(sweep, chunks: list[Chunk], folder: Path, **options) -> BaseException:
    """Run ``stream_tables`` on a thread of its own; what it raised, within a minute."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            stream.stream_tables(sweep, chunks, folder, "single", **options)
        except BaseException as error:
            raised.append(error)

    runner = threading.Thread(target=target)
    runner.start()
    runner.join(timeout=60)
    assert not runner.is_alive(), "the stream hung"
    (error,) = raised
    return error


def _stray_threads(before: set[threading.Thread]) -> list[str]:
    """Threads of ours started since ``before`` and still running (the drawing processes'
    threads of earlier tests in this process live on: they are started once per process)."""
    return [
        t.name for t in threading.enumerate() if t.name.startswith("sweeps-") and t not in before
    ]


@pytest.mark.parametrize("where", ["progress", "frame", "sink"])
def test_a_failure_stops_the_stream_and_propagates(monkeypatch, tmp_path, where):
    """A failure in ``progress``, in building one table's frame (the evaluation thread) or in
    one table's writer, midway: it propagates promptly, and no thread of the stream is left."""
    sweep = parse_config(CONFIG, "stream.toml")
    chunks = plan_chunks(sweep, chunk_budget(_budget(sweep, 10)))
    assert len(chunks) > 4
    calls = {"n": 0}

    def third() -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            msg = f"failed in {where}"
            raise RuntimeError(msg)

    options = {}
    if where == "progress":
        options["progress"] = lambda done, total: third()
    elif where == "frame":
        from sweeps.export import frame

        table_frame = frame.table_frame

        def failing(ds, table, enums=None, repeats=None):
            if table == "prefill":
                third()
            return table_frame(ds, table, enums, repeats)

        monkeypatch.setattr(frame, "table_frame", failing)
    else:
        real_sink = stream.sink

        def failing_sink(frames, path, table):
            def counted():
                for item in frames:
                    if table == "prefill":
                        third()
                    yield item

            return real_sink(counted(), path, table)

        monkeypatch.setattr(stream, "sink", failing_sink)
    before = set(threading.enumerate())
    error = _stream_in_thread(sweep, chunks, tmp_path, **options)
    assert isinstance(error, RuntimeError)
    assert str(error) == f"failed in {where}"
    assert _stray_threads(before) == []
