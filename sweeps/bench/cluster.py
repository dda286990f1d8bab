"""(p) past one machine (issue 45): a cold ``sweeps run --workers 2`` of a tables-only grid
against the same run in one process, under the same ``--memory-budget`` (the same chunks).

Both are the command in a fresh interpreter, timed from outside with their CPU (the
command's and its children's: the local cluster's workers). On two cores two workers cannot
be faster than ``2 x CPU(one) / CPU(workers)`` (``bound``): a run cannot end before half its
CPU time has passed, and the one process, CPU-bound, never takes longer than its CPU time
(``docs/distributed.md``). Skipped (``None``) without the ``dask`` extra.
"""

from __future__ import annotations

import os
import resource
import tempfile
from pathlib import Path
from typing import Any

TARGET = 1.5
"""Issue 45's aim for two local workers against one process [ratio]."""

BUDGET = 1 << 30
"""The memory budget of both runs [byte]: the same chunks in both."""

GRID = """[sweep]
name = "bench-cluster"
[axes]
model = ["llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b", "mistral-7b",
         "qwen2.5-7b", "qwen2.5-72b", "gemma-2-9b"]
hardware = ["a100-80gb", "h100-sxm", "h200", "b200"]
batch = {{ start = 1, stop = {batch} }}
context = {contexts}
kv_heads = ["native", 1]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = []
grid = "none"
layout = "partitioned"
"""
"""8 models x 4 devices x batch 1..1024 x 36 contexts x 2 x 2: 4,718,592 rows a table
(9.44 M in all); ``quick``: batch 1..64 x 4 contexts (32,768 a table)."""

RUN_ON = r"""
import sys
from sweeps.processes import end_process, set_environment, start_process

set_environment()
start_process()
from sweeps.config import load_config

sweep = load_config(sys.argv[1])
from sweeps.charts import output_hooks
from sweeps.cli.cluster import cluster
from sweeps.pipeline import run_to_folder

with cluster(None, int(sys.argv[4]) or None) as client:
    result = run_to_folder(
        sweep,
        sys.argv[2],
        force=True,
        hooks=output_hooks(sweep),
        memory_budget=int(sys.argv[3]),
        client=client,
    )
result.summary()
end_process()
"""
"""What ``sweeps run`` with a memory budget and N local workers does, without the terminal
(``run_path.RUN`` with the command's cluster): argv config, out, budget [byte], workers (0:
none)."""


def grid_text(quick: bool) -> str:
    """The config of the grid (``GRID``)."""
    contexts = [512 * i for i in range(1, 37)] if not quick else [512, 2048, 8192, 32768]
    return GRID.format(batch=64 if quick else 1024, contexts=contexts)


def _cold(config: Path, out: Path, workers: int) -> tuple[float, float]:
    """Wall and CPU seconds (with its children's: the workers) of a cold run of ``config``
    on ``workers`` local workers (0: in one process)."""
    from sweeps.bench.run_path import _python

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, _ = _python(["-c", RUN_ON, str(config), str(out), str(BUDGET), str(workers)])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def measure_cluster(quick: bool = False) -> dict[str, Any] | None:
    """Wall and CPU of one process and of two local workers, the speed-up, its bound on
    this machine and the target; ``None`` without ``distributed``."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(prefix="sweeps-bench-cluster-") as scratch:
        config = Path(scratch) / "cluster.toml"
        config.write_text(grid_text(quick), "utf-8")
        one_s, one_cpu = _cold(config, Path(scratch) / "one", 0)
        two_s, two_cpu = _cold(config, Path(scratch) / "two", 2)
    rows = 2 * 8 * 4 * (64 if quick else 1024) * (4 if quick else 36) * 4
    return {
        "rows": rows,
        "one_s": one_s,
        "one_cpu_s": one_cpu,
        "workers_s": two_s,
        "workers_cpu_s": two_cpu,
        "speedup": one_s / two_s,
        "bound": 2 * one_cpu / two_cpu,
        "target": TARGET,
        "cpus": os.cpu_count(),
    }


def format_cluster(result: dict[str, Any] | None) -> str:
    """The line ``sweeps bench`` prints for ``measure_cluster``."""
    if result is None:
        return "two local workers: skipped (no dask extra: pip install 'roofline-sweeps[dask]')"
    met = "met" if result["speedup"] >= result["target"] else "MISSED"
    return (
        f"two local workers: a cold tables-only run of {result['rows']:,} rows in a "
        f"{BUDGET / 2**30:g} GiB budget in {result['workers_s']:.1f} s "
        f"({result['workers_cpu_s']:.1f} CPU-s) against {result['one_s']:.1f} s "
        f"({result['one_cpu_s']:.1f} CPU-s) in one "
        f"process: {result['speedup']:.2f}x (target {result['target']:.1f}x {met}; at most "
        f"{result['bound']:.2f}x on {result['cpus']} cores from the CPU)"
    )
