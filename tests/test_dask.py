"""The distributed engine: a dask LocalCluster gives the in-memory path's rows (issue 4)."""

from __future__ import annotations

import polars as pl
import pytest

from sweeps.config import parse_config
from sweeps.pipeline import run_to_folder

from .conftest import KEYS, in_sweep_order

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
    assert spread.layout == "partitioned"
    assert spread.rows == whole.rows
    for phase in ("decode", "prefill"):
        single = pl.read_parquet(whole.folder / f"{phase}.parquet")
        parts = pl.scan_parquet(spread.folder / phase, hive_partitioning=True).collect()
        assert parts.schema == single.schema
        assert parts.sort([*KEYS, "kv_heads_native"]).equals(
            single.sort([*KEYS, "kv_heads_native"])
        )
        assert in_sweep_order(spread.folder, phase, sweep).equals(single)
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
    assert list(tmp_path.iterdir()) == []
