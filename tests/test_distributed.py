"""Worker-side writes (``sweeps.pipeline.distributed``): the workers of a LocalCluster of
processes, or of an external scheduler started here on 127.0.0.1, write the Parquet parts;
the client gets counts. Killed workers are retried; a cluster without workers or without its
scheduler fails in one line, leaving the earlier result byte for byte and no staging folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sweeps.config import parse_config
from sweeps.pipeline import run_to_folder

from .conftest import ROOT, in_sweep_order

distributed = pytest.importorskip("distributed")

CONFIG = """
[sweep]
name = "cluster"
[axes]
model = ["llama-3-8b", "mixtral-8x7b", "gemma-2-9b"]
hardware = ["h100-sxm", "mi300x"]
batch = { start = 1, stop = 16 }
context = [1024, 16384]
kv_dtype = ["bf16", "int4"]
[outputs]
charts = []
grid = "none"
layout = "partitioned"
"""

BIGGER = CONFIG.replace(
    '"gemma-2-9b"]', '"gemma-2-9b", "llama-3-70b", "qwen2.5-7b", "qwen2.5-32b"]'
).replace("stop = 16", "stop = 64")
"""Six models: a run long enough to lose its cluster after the first chunk."""

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes (nannies restart a killed one), one thread each."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        yield client


def parts_in_order(folder: Path, table: str, sweep: Any) -> pl.DataFrame:
    """A table's parts read back in the sweep's order: models, then chunks."""
    files = [f for m in sweep.models for f in sorted((folder / table / m.id).glob("*.parquet"))]
    return pl.read_parquet(files)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_parts_equal_the_single_process_tables(client: Any, tmp_path: Path) -> None:
    sweep = parse_config(CONFIG, "cluster.toml")
    alone = run_to_folder(sweep, tmp_path / "alone")
    spread = run_to_folder(sweep, tmp_path / "cluster", client=client)
    joined = run_to_folder(sweep, tmp_path / "joined", client=client, layout="single")
    assert spread.rows == alone.rows == joined.rows
    manifest = json.loads((spread.folder / "manifest.json").read_text())
    assert manifest["layout"]["engine"] == "dask.distributed"
    assert manifest["layout"]["tables"]["decode"] == "decode/<model>/part-<n>.parquet"
    for table in ("decode", "prefill"):
        whole = in_sweep_order(alone.folder, table, sweep)
        assert parts_in_order(spread.folder, table, sweep).equals(whole)  # row for row
        assert pl.read_parquet(joined.folder / f"{table}.parquet").equals(whole)
        listed = [f for f in manifest["files"] if f.startswith(f"{table}/")]
        assert len(listed) == len(list((spread.folder / table).rglob("*.parquet"))) >= 3
    assert not (joined.folder / "decode").exists()  # the parts joined, then removed


def test_the_figures_are_drawn_while_the_workers_write(client: Any, tmp_path: Path) -> None:
    """The client holds no chunk, so its hooks (the figures and report) take their slices
    while the workers write, not after: the first slice is taken before the last chunk is
    written, every slice is taken, and what the hook writes is in the result."""
    import threading

    sweep = parse_config(BIGGER, "cluster.toml")
    times: dict[str, list[float]] = {"slices": [], "chunks": []}
    threads: set[str] = set()

    def hook(slices: Any, sweep: Any, staging: Path) -> list[str]:
        for one in slices:
            times["slices"].append(time.monotonic())
            threads.add(threading.current_thread().name)
            assert one.sizes["model"] == one.sizes["hardware"] == 1
        (staging / "drawn.txt").write_text("drawn", "utf-8")
        return ["drawn.txt"]

    def progress(done: int, total: int) -> None:
        times["chunks"].append(time.monotonic())

    result = run_to_folder(sweep, tmp_path, hooks=(hook,), progress=progress, client=client)
    assert len(times["slices"]) == len(sweep.models) * len(sweep.hardware)
    assert len(times["chunks"]) >= 6  # a chunk a model at least
    assert times["slices"][0] < times["chunks"][-1]  # beside the workers, not after them
    assert threads != {threading.current_thread().name}
    assert (result.folder / "drawn.txt").read_text("utf-8") == "drawn"
    assert "drawn.txt" in result.files
    assert "hook" in result.timings


def test_every_reader_opens_a_partitioned_table_as_one(client: Any, tmp_path: Path) -> None:
    import duckdb
    import pandas as pd
    import pyarrow.parquet as pq

    sweep = parse_config(CONFIG, "cluster.toml")
    result = run_to_folder(sweep, tmp_path, client=client)
    keys = ["model", "hardware", "batch", "context", "kv_dtype"]
    folder = result.folder / "decode"
    expected = parts_in_order(result.folder, "decode", sweep).sort(keys)
    assert pl.scan_parquet(folder).collect().sort(keys).equals(expected)
    assert pq.read_table(folder).num_rows == expected.height
    frame = pd.read_parquet(folder)
    assert len(frame) == expected.height
    assert list(frame.columns) == expected.columns
    rows = duckdb.sql(f"select count(*), count(distinct model) from '{folder}/*/*.parquet'")
    assert rows.fetchall() == [(expected.height, 3)]


def test_chunks_and_window_follow_the_workers_memory(client: Any) -> None:
    from sweeps.pipeline.distributed import PER_THREAD, window, worker_budget

    info = client.scheduler_info()["workers"].values()
    limit = min(int(w["memory_limit"]) for w in info)
    assert worker_budget(client, 1 << 60) == limit // PER_THREAD  # one thread per worker
    assert worker_budget(client, 1 << 20) == 1 << 20  # the client's own budget when smaller
    assert window(client) == 2 * PER_THREAD


def test_a_killed_worker_is_retried(client: Any, tmp_path: Path) -> None:
    sweep = parse_config(CONFIG, "cluster.toml")
    pids = list(client.run(os.getpid).values())
    killed: list[int] = []

    def kill_one(done: int, total: int) -> None:
        if not killed:
            killed.append(pids[0])
            os.kill(pids[0], 9)

    result = run_to_folder(sweep, tmp_path / "cluster", client=client, progress=kill_one)
    alone = run_to_folder(sweep, tmp_path / "alone")
    assert killed
    for table in ("decode", "prefill"):
        whole = in_sweep_order(alone.folder, table, sweep)
        assert parts_in_order(result.folder, table, sweep).equals(whole)
    client.wait_for_workers(2, timeout=60)


class External:
    """A dask scheduler and two workers without nannies, on 127.0.0.1, as processes."""

    def __init__(self, folder: Path) -> None:
        file = folder / "scheduler.json"
        self.scheduler = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(file),
            ],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the file written whole
        self.address = json.loads(file.read_text())["address"]
        self.workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    self.address,
                    "--no-nanny",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                ],
                env=ENV,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(2)
        ]
        with distributed.Client(self.address, timeout=30) as probe:
            probe.wait_for_workers(2, timeout=60)

    def kill_workers(self) -> None:
        for worker in self.workers:
            worker.kill()

    def close(self) -> None:
        for process in [*self.workers, self.scheduler]:
            process.kill()
            process.wait()


@pytest.fixture
def external(tmp_path: Path) -> Iterator[External]:
    cluster = External(tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


def _earlier(out: Path) -> dict[str, bytes]:
    """An earlier result of the sweep in ``out``, byte for byte."""
    run_to_folder(parse_config(BIGGER, "cluster.toml"), out)
    return snapshot(out / "cluster")


def _run_cli(out: Path, address: str, config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sweeps",
            "run",
            str(config),
            "--out",
            str(out),
            "--force",
            "--scheduler",
            address,
            "--cluster-timeout",
            "3",
        ],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first_part(out: Path, deadline: float = 120.0) -> None:
    """Wait until a worker has written the run's first part into its staging folder."""
    end = time.monotonic() + deadline
    while not list((out / ".sweeps-staging").glob("*/decode/*/part-*.parquet")):
        assert time.monotonic() < end, "no part written"
        time.sleep(0.02)


@pytest.mark.parametrize("lost", ["workers", "scheduler"])
def test_a_lost_cluster_fails_in_one_line_and_keeps_the_earlier_result(
    lost: str, external: External, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    before = _earlier(out)
    config = tmp_path / "cluster.toml"
    config.write_text(BIGGER, "utf-8")
    run = _run_cli(out, external.address, config)
    _first_part(out)
    stopped = time.monotonic()
    if lost == "workers":
        external.kill_workers()
    else:
        external.scheduler.kill()
    _, err = run.communicate(timeout=60)
    took = time.monotonic() - stopped
    assert run.returncode == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    expected = "no worker for 3 s" if lost == "workers" else "the scheduler is gone"
    assert lines[0].startswith(f"Error: dask cluster at {external.address}: {expected}")
    assert took < 3 + 15  # the timeout, and the time to clean up
    assert snapshot(out / "cluster") == before
    assert not (out / ".sweeps-staging").exists()


def test_a_local_clusters_workers_are_warmed_and_unsampled() -> None:
    """``--workers``: the workers import their tasks' modules as they join, not at their
    first task, and sample no stacks (dask's profiler, for a dashboard not started)."""
    from sweeps.cli.cluster import cluster

    def state() -> tuple[bool, bool]:
        import dask

        loaded = "sweeps.grid.build" in sys.modules and "sweeps.export.parquet" in sys.modules
        return loaded, bool(dask.config.get("distributed.worker.profile.enabled"))

    with cluster(None, 2, 30.0) as client:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = set(client.run(state).values())
            if states == {(True, False)}:
                break
            time.sleep(0.2)
        assert states == {(True, False)}


class _Client:
    """What the watch reads of a dask client: its status and the scheduler's workers."""

    def __init__(self) -> None:
        self.status, self.workers = "running", {"w": {}}

    def scheduler_info(self) -> dict[str, Any]:
        return {"workers": self.workers}


def test_a_client_cut_off_from_its_scheduler_for_the_timeout_is_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dask's client retries a lost scheduler for its own connect timeout before it closes:
    the watch gives up after the cluster timeout, and a reconnection in time resets it."""
    from sweeps.pipeline import distributed as dist

    now = [100.0]
    monkeypatch.setattr(dist.time, "monotonic", lambda: now[0])
    client = _Client()
    watch = dist._Watch(client, timeout=3.0)
    watch.check(5)
    client.status = "connecting"
    watch.check(5)
    now[0] += 2.9
    watch.check(5)  # cut off for less than the timeout: not yet
    client.status = "running"
    watch.check(5)  # answered again: the clock starts over
    client.status = "connecting"
    now[0] += 1.0
    watch.check(5)
    now[0] += 3.0
    with pytest.raises(dist.ClusterLost, match=r"the scheduler is gone \(no answer for 3 s\); 5 "):
        watch.check(5)
