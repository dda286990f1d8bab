"""(e) An end-to-end ``run_to_folder`` of a larger grid, streamed, in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from sweeps.config import parse_config
from sweeps.grid.chunks import table_points

_CHILD = """
import json, resource, sys, time
from sweeps.config import parse_config
from sweeps.pipeline import run_to_folder
sweep = parse_config(open(sys.argv[1]).read(), sys.argv[1])
start = time.perf_counter()
result = run_to_folder(sweep, sys.argv[2], force=True, memory_budget=int(sys.argv[3]))
seconds = time.perf_counter() - start
# VmHWM is this process's own high-water mark; ru_maxrss would also count the parent's pages
# shared at fork time (Linux folds them in across execve).
try:
    status = open("/proc/self/status").read().split("VmHWM:")[1]
    peak = int(status.split()[0]) * 1024
except (OSError, IndexError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "chunks": result.chunks, "layout": result.layout,
                  "rows": result.rows, "peak_rss_bytes": peak}))
"""

QUICK_HEADROOM = 8 * 2**20
"""Bytes over the minimum budget for the quick grid: small, so it is still cut into chunks."""


def end_to_end(text: str, budget: int, folder: Path) -> dict[str, Any]:
    """Run ``text`` through ``run_to_folder`` in a fresh interpreter; its time and peak RSS."""
    config = folder / "e2e.toml"
    config.write_text(text, "utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(config), str(folder / "out"), str(budget)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        msg = f"end-to-end run failed: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure_end_to_end(text: str, quick: bool, budget: int, folder: Path) -> dict[str, Any]:
    """(e): the run's figures, its points and points/s, under ``budget`` [byte] (quick: just
    over the minimum budget instead)."""
    from sweeps.grid.memory import BASE_BYTES

    sweep = parse_config(text, "<bench-e2e>")
    if quick:
        budget = BASE_BYTES + QUICK_HEADROOM
    result = end_to_end(text, budget, folder)
    points = table_points(sweep)
    return {
        **result,
        "points": points,
        "memory_budget_bytes": budget,
        "points_per_s": points / result["seconds"],
    }
