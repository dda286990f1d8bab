"""(k) ``sweeps calibrate`` at scale (issue 23): 48,000 measurements, their time and peak memory.

A measurements file of ``rows`` generated rows (seeded): eight configurations (dense and MoE
models, five devices, tp 1-4, bf16 and fp8), each with 96 distinct workloads (12 prompt x 8
output lengths: 768 in all, each configuration's grid of bounds within the reader's cap),
batches ``max`` and 1-256, all four metrics, a quarter of the throughputs closed-loop
(``concurrency``: the serving table's ``bound`` mode). Each value is far inside its bound, so
the file is read, bounded and tabled in full. ``calibrate`` runs in a fresh interpreter, timed
from the call (imports excluded), with its own peak RSS (``VmHWM``), against ``BUDGET_S`` per
48,000 rows and ``MEMORY_BUDGET`` bytes.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROWS = 48_000
"""Rows of the full measurement (the issue's file: 124 s before the shared grids)."""

BUDGET_S = 30.0
"""What 48,000 rows may take on the 2-core development machine [s] ("in seconds")."""

MEMORY_BUDGET = 2 * 2**30
"""Peak RSS a calibration of 48,000 rows may reach [byte] (300 workloads once took 8 GB)."""

CONFIGURATIONS = (  # model, device, tp, weight and KV format
    ("llama-3-8b", "h100-sxm", 1, "bf16"),
    ("llama-3-8b", "l40s", 1, "fp8"),
    ("llama-3.1-70b", "h200", 2, "fp8"),
    ("llama-3.1-70b", "h100-sxm", 4, "bf16"),
    ("mixtral-8x7b", "h200", 1, "bf16"),
    ("mixtral-8x7b", "b200", 2, "fp8"),
    ("qwen3-32b", "b200", 1, "bf16"),
    ("gemma-2-9b", "mi300x", 1, "bf16"),
)
PROMPTS = tuple(256 * (k + 1) for k in range(12))
OUTPUTS = (2, 16, 64, 128, 256, 512, 1024, 2048)
BATCHES = ("max", "1", "8", "64", "256")
METRICS = ("output_tokens_per_s", "ttft_s", "itl_s", "request_latency_s")

_CHILD = """
import json, resource, sys, time
from sweeps.calibrate import calibrate
start, cpu = time.perf_counter(), time.process_time()
frame = calibrate(sys.argv[1])
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
try:
    peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
except (OSError, IndexError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "rows": frame.height,
                  "peak_rss_bytes": peak,
                  "bounded": int(frame["bound"].is_not_null().sum()),
                  "beats": int(frame["beats_bound"].fill_null(False).sum())}))
"""


def write_measurements(path: Path, rows: int = ROWS, seed: int = 23) -> int:
    """Write ``rows`` generated measurements to ``path``; the distinct configurations [1]."""
    import numpy as np

    rng = np.random.default_rng(seed)
    header = [
        "model", "hardware", "tp", "weight_dtype", "kv_dtype", "compute_dtype", "batch",
        "prompt_tokens", "output_tokens", "metric", "value", "basis", "concurrency", "source",
    ]  # fmt: skip
    config = rng.integers(0, len(CONFIGURATIONS), rows)
    prompt, output = rng.integers(0, len(PROMPTS), rows), rng.integers(0, len(OUTPUTS), rows)
    batch, metric = rng.integers(0, len(BATCHES), rows), rng.integers(0, len(METRICS), rows)
    closed = rng.random(rows) < 0.25
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for i in range(rows):
            model, hardware, tp, dtype = CONFIGURATIONS[config[i]]
            name = METRICS[metric[i]]
            throughput = name == "output_tokens_per_s"
            concurrency = str(4 * (1 + batch[i])) if throughput and closed[i] else ""
            writer.writerow([
                model, hardware, tp, dtype, dtype, "auto", BATCHES[batch[i]],
                PROMPTS[prompt[i]], OUTPUTS[output[i]], name, 1.0 if throughput else 1e4,
                "device", concurrency, "generated (sweeps bench)",
            ])  # fmt: skip
    return len({CONFIGURATIONS[c] for c in set(config.tolist())})


def measure_calibration(rows: int = ROWS, folder: Path | None = None) -> dict[str, Any]:
    """Calibrate ``rows`` generated measurements in a fresh interpreter.

    Returns ``rows`` [1], ``configurations`` [1], ``workloads`` (distinct prompt and output
    pairs per configuration) [1], ``seconds`` (wall) and ``cpu_seconds`` (the process's CPU
    time: on a shared machine the steadier figure) [s], ``rows_per_s`` [1/s], ``peak_rss_bytes``
    [byte], ``bounded`` and ``beats`` (rows with a bound, rows beating it) [1], ``budget_s``
    (scaled to ``rows``) [s], ``memory_budget_bytes`` [byte] and ``within_budget``.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sweeps-bench-calibrate-") as tmp:
        path = Path(folder or tmp) / "measurements.csv"
        configurations = write_measurements(path, rows)
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=False
        )
    if done.returncode != 0:
        msg = f"calibrate bench failed: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    result = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    budget = BUDGET_S * rows / ROWS
    return {
        **result,
        "configurations": configurations,
        "workloads": len(PROMPTS) * len(OUTPUTS),
        "rows_per_s": result["rows"] / result["seconds"],
        "budget_s": budget,
        "memory_budget_bytes": MEMORY_BUDGET,
        "within_budget": bool(
            result["seconds"] <= budget and result["peak_rss_bytes"] <= MEMORY_BUDGET
        ),
    }


def format_calibration(result: dict[str, Any]) -> str:
    """The line ``sweeps bench`` prints for ``measure_calibration``."""
    return (
        f"calibrate: {result['rows']:,} generated measurements ({result['configurations']} "
        f"configurations x up to {result['workloads']} workloads; {result['bounded']:,} "
        f"bounded, {result['beats']} beating) in {result['seconds']:.1f} s "
        f"({result['cpu_seconds']:.1f} s of CPU; "
        f"{result['rows_per_s']:,.0f} rows/s), peak RSS {result['peak_rss_bytes'] / 1e9:.2f} GB; "
        f"budget {result['budget_s']:.1f} s and {result['memory_budget_bytes'] / 2**30:.0f} GiB "
        f"{'met' if result['within_budget'] else 'MISSED'}"
    )
