"""(f) The run path measured as users run it (issue 14, item 1).

``measure_run_path`` runs a cold ``sweeps run`` of a config in a fresh interpreter (the
command a user types, with the outputs the config asks for), reads its split from the
manifest it wrote (grid, each table, the grid file, the figures and report; import and
start-up are the rest of the wall time), then, in a second fresh interpreter, times Polars'
own ``write_parquet`` of the same tables (same row groups and statistics, no metadata) and,
for a grid in memory with a Zarr grid file, xarray's own ``to_zarr`` of the grid (the run's
encoding): the frames and the grid are built first and the frames made contiguous, so only
the libraries' writes of the same outputs are timed. A streamed run
(``memory_budget`` below the grid's need) is compared with Polars writing the same rows
chunk by chunk, each chunk's frame built first. ``sweeps bench`` reports both: the run grid
of issue 14 in memory, and the end-to-end grid of (e) streamed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUN = r"""
import sys
from sweeps.processes import end_process, set_environment, start_process

set_environment()
start_process()
from sweeps.config import load_config
from sweeps.charts.drawing import start

sweep = load_config(sys.argv[1])
start(sweep.formats if sweep.charts else ())  # as the command does, before the heavy imports
from sweeps.charts import output_hooks
from sweeps.pipeline import run_to_folder

result = run_to_folder(
    sweep,
    sys.argv[2],
    force=True,
    hooks=output_hooks(sweep),
    memory_budget=int(sys.argv[3]) or None,
    grid_format=sys.argv[4] or None,
)
result.summary()
end_process()
"""
"""What ``sweeps run CONFIG`` does, without the terminal: the run with the config's charts and
report, then the summary it prints, and the command's end of process."""

POLARS_WRITE = r"""
import json, sys, time
from sweeps.processes import set_environment, start_process

set_environment()
start_process()  # the command's process settings, as the run has them
from pathlib import Path
from sweeps.config import load_config
from sweeps.export.frame import frame, table_names
from sweeps.export.parquet import WRITE_OPTIONS
from sweeps.grid.analyses import tables
from sweeps.grid.build import build_grid

sweep = load_config(sys.argv[1])
scratch = Path(sys.argv[2])
budget = int(sys.argv[3])
seconds = {}

def write(name, table):
    table = table.rechunk()
    start = time.perf_counter()
    table.write_parquet(scratch / f"{name}.parquet", **WRITE_OPTIONS)
    seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start

if budget:
    from sweeps.axes import categories
    from sweeps.grid.chunks import plan_chunks
    from sweeps.pipeline.plan import chunk_budget
    from sweeps.pipeline.stream import chunk_tables

    enums = categories(sweep)
    names = [table.name for table in tables(sweep)]
    for chunk in plan_chunks(sweep, chunk_budget(budget)):
        for name, table in chunk_tables(chunk, names, enums).items():
            write(name, table)
else:
    ds = build_grid(sweep)
    for name in table_names(ds):
        write(name, frame(ds, name))
    grid = sys.argv[4] or sweep.grid_format
    if grid == "zarr":  # xarray's own to_zarr of the grid file, with the run's encoding
        from sweeps.export.grid import to_zarr

        start = time.perf_counter()
        to_zarr(ds, scratch / "grid.zarr")
        seconds["grid.zarr"] = time.perf_counter() - start
print(json.dumps(seconds))
"""


TARGET = 1.3
"""Issue 25's target: a cold run within 1.3x of the libraries' own writes of its outputs."""


def _python(arguments: list[str]) -> tuple[float, str]:
    """Run ``python arguments`` to completion under the command's process settings
    (``sweeps.processes.PROCESS_ENV``, where the environment does not set them); its wall time [s]
    and standard output.

    The files earlier processes wrote are flushed to disk first (``os.sync``), so that neither
    side of a ratio pays for the other's: a run leaves about 390 MB of dirty pages, which the
    kernel writes back 30 s later (``vm.dirty_expire_centisecs``), in the middle of the next
    process timed, and the end-to-end line before (e) leaves gigabytes. Each process still
    pays for its own writes into the page cache, as a user's does.
    """
    from sweeps.processes import PROCESS_ENV

    environment = {**PROCESS_ENV, **os.environ}
    if hasattr(os, "sync"):  # not on Windows
        os.sync()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, check=False, env=environment
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        msg = f"{' '.join(arguments[:3])} failed ({done.returncode}): {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    return wall, done.stdout


def measure_run_path(
    config: str | Path, memory_budget: int | None = None, grid_format: str | None = None
) -> dict[str, Any]:
    """One cold ``sweeps run`` of ``config`` and Polars' write of its tables; JSON-ready.

    ``memory_budget`` [byte] is passed to the run (and the Polars side writes the same
    chunks); ``grid_format`` overrides ``[outputs] grid``. Returns ``run_s`` (the run's wall
    time), ``split_s`` (``import`` and start-up,
    then each timing of the manifest: the grid, each table, the grid file and each hook,
    which overlap, and ``outputs``, their wall time together), ``polars_s`` (per table and
    ``grid.zarr``, xarray's write, and ``total``), ``ratio`` (the run over the libraries'
    writes of the same outputs), the rows, the bytes of each file and ``load``, the
    machine's one-minute load average before and after (the figures are worth as much).
    """
    load = [os.getloadavg()[0]]  # the machine's load beside the figures: others' work too
    with tempfile.TemporaryDirectory(prefix="sweeps-run-path-") as scratch:
        out = Path(scratch) / "out"
        command = ["-c", RUN, str(config), str(out), str(memory_budget or 0), grid_format or ""]
        run_s, _ = _python(command)
        (folder,) = (p for p in out.iterdir() if not p.name.startswith("."))
        document = json.loads((folder / "manifest.json").read_text("utf-8"))
        timings = {k: float(v) for k, v in document["timings_s"].items()}
        sizes = {
            name: sum(f.stat().st_size for f in (folder / name).rglob("*") if f.is_file())
            if (folder / name).is_dir()
            else (folder / name).stat().st_size
            for name in document["files"]
            if (folder / name).exists()
        }
        polars_folder = Path(scratch) / "polars"
        polars_folder.mkdir()
        arguments = [str(config), str(polars_folder), str(memory_budget or 0), grid_format or ""]
        _, printed = _python(["-c", POLARS_WRITE, *arguments])
    load.append(os.getloadavg()[0])
    polars = json.loads(printed)
    polars["total"] = sum(polars.values())
    # the tables, the grid file and the hooks overlap: "outputs" is their wall time together
    wall = timings.get("grid", 0.0) + timings.get("outputs", timings.get("grid_and_tables", 0.0))
    split = {"import_and_startup": run_s - wall, **timings}
    return {
        "run_s": run_s,
        "split_s": split,
        "polars_s": polars,
        "ratio": run_s / polars["total"],
        "rows": document["rows"],
        "layout": document["layout"]["kind"],
        "chunks": document["layout"].get("chunks", 1),
        "bytes": sizes,
        "load": load,
    }


def format_run_path(result: dict[str, Any]) -> str:
    """One line: the run, its ratio to Polars' write, and its split; then, where the run was
    measured more than once (``spread``), every run's ratio."""
    split = ", ".join(f"{name} {seconds:.2f}" for name, seconds in result["split_s"].items())
    points = sum(result["rows"].values())
    how = f"{result['chunks']} chunk(s)"
    if result["chunks"] == 1:  # held in memory: in one piece, or model by model into the writers
        pieces = "grid_and_tables" in result["split_s"]
        how = "in memory, model by model into the writers" if pieces else "in memory, one piece"
    verdict = "met" if result["ratio"] <= TARGET else "missed"
    libraries = "Polars' write of its tables"
    if "grid.zarr" in result["polars_s"]:
        zarr = result["polars_s"]["grid.zarr"]
        libraries += f" + xarray's to_zarr of its grid ({zarr:.2f} s)"
    load = "-".join(f"{value:.1f}" for value in result.get("load", []))
    line = (
        f"cold sweeps run of {points:,} rows {result['run_s']:.2f} s = {result['ratio']:.2f}x "
        f"{libraries} ({result['polars_s']['total']:.2f} s), target {TARGET}x {verdict}; "
        f"{result['layout']} layout, {how}; load {load or '?'}; split [s]: {split}"
    )
    if "spread" in result:
        spread = result["spread"]
        ratios = ", ".join(f"{r:.2f}x" for r in spread["ratios"])
        line += (
            f"; {len(spread['ratios'])} cold runs: {ratios} (median {spread['median']:.2f}x, "
            f"within {TARGET}x in {spread['met']} of {len(spread['ratios'])})"
        )
    return line


def measure_spread(
    config: str | Path, runs: int, memory_budget: int | None = None
) -> dict[str, Any]:
    """``measure_run_path`` of ``config`` ``runs`` times, one after the other: the first run's
    figures, with ``spread`` (every run's ``ratios``, their ``median``, and how many ``met``
    the target) where ``runs`` is more than one. One run's ratio says how the run compares
    with the libraries' writes beside it; on a noisy machine only the spread says how far
    that holds."""
    results = [measure_run_path(config, memory_budget) for _ in range(runs)]
    first = dict(results[0])
    if runs > 1:
        ratios = [r["ratio"] for r in results]
        first["spread"] = {
            "ratios": ratios,
            "median": statistics.median(ratios),
            "met": sum(r <= TARGET for r in ratios),
        }
    return first


RUN_GRID = """[sweep]
name = "bench-run-path"
[axes]
model = {models}
hardware = {hardware}
batch = {{ start = 1, stop = {batch} }}
context = {{ start = 1024, stop = {context}, step = 1024 }}
kv_heads = ["native", 1, 2, 4]
kv_dtype = ["bf16", "fp8"]
weight_dtype = ["bf16", "fp8"]
[outputs]
charts = []
grid = "zarr"
"""
"""Issue 14's grid: 8 models x 4 devices x batch 1..1024 x 32 contexts x 4 KV-head settings x
2 x 2 dtypes (16.8 M decode + 16.8 M prefill rows), the report and the Zarr grid file."""

RUN_MODELS = ["llama-3-8b", "llama-3-70b", "mixtral-8x7b", "qwen2.5-7b", "gemma-2-9b",
              "mistral-7b", "llama-3.1-405b", "qwen2.5-72b"]  # fmt: skip
RUN_HARDWARE = ["h100-sxm", "b200", "l4", "mi300x"]


def measure_run_paths(
    e2e_text: str, quick: bool, budget: int, folder: Path, runs: int = 1
) -> dict[str, Any]:
    """(f): ``measure_run_path`` of issue 14's grid in memory and of (e)'s grid streamed under
    ``budget`` [byte] (quick: small grids, the streamed one just over the minimum budget),
    each ``runs`` times (``measure_spread``)."""
    from sweeps.bench.e2e import QUICK_HEADROOM
    from sweeps.grid.memory import BASE_BYTES

    models, hardware = (RUN_MODELS[:2], RUN_HARDWARE[:2]) if quick else (RUN_MODELS, RUN_HARDWARE)
    text = RUN_GRID.format(
        models=json.dumps(models),
        hardware=json.dumps(hardware),
        batch=32 if quick else 1024,
        context=4096 if quick else 32768,
    )
    in_memory = folder / "run-path.toml"
    in_memory.write_text(text, "utf-8")
    streamed = folder / "run-path-streamed.toml"
    streamed.write_text(e2e_text, "utf-8")
    return {
        "in_memory": measure_spread(in_memory, runs),
        "streamed": measure_spread(
            streamed, runs, BASE_BYTES + QUICK_HEADROOM if quick else budget
        ),
    }
