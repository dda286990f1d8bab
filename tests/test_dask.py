"""The distributed engine: a dask LocalCluster gives the in-memory path's rows (issue 4)."""

from __future__ import annotations

import threading

import polars as pl
import pytest

from sweeps.config import parse_config
from sweeps.pipeline import run_to_folder

from .conftest import KEYS

distributed = pytest.importorskip("distributed")

CONFIG = """
[sweep]
name = "cluster"
[axes]
model = ["llama-3-8b", "mixtral-8x7b", "gemma-2-9b"]
hardware = ["h100-sxm", "mi300x"]
batch = { start = 1, stop = 32 }
context = [1024, 16384]
kv_heads = ["native", 1]
kv_dtype = ["bf16", "int4"]
[outputs]
charts = []
grid = "none"
"""


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        yield client


def test_local_cluster_gives_identical_rows(client, tmp_path):
    sweep = parse_config(CONFIG, "cluster.toml")
    whole = run_to_folder(sweep, tmp_path / "memory")
    spread = run_to_folder(sweep, tmp_path / "cluster", client=client)
    assert spread.layout == whole.layout == "single"  # the layout is the config's
    assert spread.chunks > 1
    split = run_to_folder(sweep, tmp_path / "split", client=client, layout="partitioned")
    assert spread.rows == whole.rows == split.rows
    for phase in ("decode", "prefill"):
        single = pl.read_parquet(whole.folder / f"{phase}.parquet")
        assert pl.read_parquet(spread.folder / f"{phase}.parquet").equals(single)
        parts = pl.scan_parquet(split.folder / phase).collect()
        assert parts.schema == single.schema
        assert parts.sort([*KEYS, "kv_heads_native"]).equals(
            single.sort([*KEYS, "kv_heads_native"])
        )
        parts = [
            file
            for model in sweep.models
            for file in sorted((split.folder / phase / model.id).glob("part-*.parquet"))
        ]  # the workers' parts (sweeps.pipeline.distributed), in the sweep's order
        assert pl.read_parquet(parts).equals(single)
    for name in ("hardware", "models"):
        assert pl.read_parquet(spread.folder / f"{name}.parquet").equals(
            pl.read_parquet(whole.folder / f"{name}.parquet")
        )


def test_failure_on_a_worker_leaves_nothing(client, tmp_path):
    sweep = parse_config(CONFIG, "cluster.toml")

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_to_folder(sweep, tmp_path, client=client, progress=stop)
    assert list(tmp_path.iterdir()) == []  # nothing, not even the emptied staging folder


@pytest.mark.parametrize("use_kernel", [True, False])
def test_lazy_grid_is_dask_backed_and_equals_the_eager_one(use_kernel, monkeypatch):
    import xarray as xr

    from sweeps.grid import build_grid, roof

    calls = []
    evaluate = roof._evaluate
    here = threading.get_ident()  # a grid still computing in another test's thread is not ours

    def counted(*a):  # type: ignore[no-untyped-def]
        if threading.get_ident() == here:
            calls.append(1)
        return evaluate(*a)

    monkeypatch.setattr(roof, "_evaluate", counted)
    sweep = parse_config(CONFIG)
    lazy = build_grid(sweep, use_kernel=use_kernel, chunks={"model": 1, "hardware": 1})
    assert calls == []  # nothing of the full-rank variables computed yet
    assert lazy["attainable_flops"].chunks == (
        (1, 1, 1),
        (1, 1),
        (1,),
        (32,),
        (2,),
        (2,),
        (2,),
        (1,),
    )
    assert lazy["ceiling"].chunks is None  # low-rank variables are plain numpy
    computed = lazy.compute(scheduler="synchronous")  # here, whatever client is about
    assert len(calls) == 2 * 3 * 2  # decode and prefill, 3 models x 2 devices
    xr.testing.assert_identical(computed, build_grid(sweep, use_kernel=use_kernel))


def test_lazy_grid_computes_on_the_cluster(client, tmp_path):
    import xarray as xr

    from sweeps.export import to_parquet
    from sweeps.grid import build_grid

    sweep = parse_config(CONFIG)
    lazy = build_grid(sweep, chunks={"model": 1})
    with distributed.get_task_stream(client) as tasks:
        computed = lazy.compute()
    assert len(tasks.data) >= 2 * 3  # the blocks ran on the cluster's workers
    eager = build_grid(sweep)
    xr.testing.assert_identical(computed, eager)
    to_parquet(lazy, tmp_path / "lazy")  # computed once, then written like any grid
    to_parquet(eager, tmp_path / "eager")
    for table in ("decode", "prefill"):
        assert pl.read_parquet(tmp_path / "lazy" / f"{table}.parquet").equals(
            pl.read_parquet(tmp_path / "eager" / f"{table}.parquet")
        )


def test_lazy_grid_rejects_unknown_chunk_keys():
    from sweeps.grid import build_grid

    with pytest.raises(ValueError, match=r"allowed keys: 'model', 'hardware'"):
        build_grid(parse_config(CONFIG), chunks={"batch": 8})
