"""The run path measured as users run it (issue 14, item 1).

``measure_run_path`` runs a cold ``sweeps run`` of a config in a fresh interpreter (the
command a user types, with the outputs the config asks for), reads its split from the
manifest it wrote (grid, each table, the grid file, the figures and report; import and
start-up are the rest of the wall time), then, in a second fresh interpreter, times Polars'
own ``write_parquet`` of the same tables (same row groups and statistics, no metadata): the
frames are built first and made contiguous, so only the write is timed. A streamed run
(``memory_budget`` below the grid's need) is compared with Polars writing the same rows
chunk by chunk, each chunk's frame built first. ``sweeps bench`` reports the result as its
end-to-end line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUN = r"""
import sys
from sweeps.charts import output_hooks
from sweeps.config import load_config
from sweeps.pipeline import run_to_folder

sweep = load_config(sys.argv[1])
result = run_to_folder(
    sweep,
    sys.argv[2],
    force=True,
    hooks=output_hooks(sweep),
    memory_budget=int(sys.argv[3]) or None,
    grid_format=sys.argv[4] or None,
)
result.summary()
"""
"""What ``sweeps run CONFIG`` does, without the terminal: the run with the config's charts and
report, then the summary it prints."""

POLARS_WRITE = r"""
import json, sys, time
from pathlib import Path
from sweeps.config import load_config
from sweeps.export.frame import TABLE_NAMES, frame
from sweeps.export.parquet import WRITE_OPTIONS
from sweeps.grid import TABLES
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
    from sweeps.pipeline.stream import chunk_frame

    enums = categories(sweep)
    for chunk in plan_chunks(sweep, chunk_budget(budget)):
        for table in TABLES:
            write(table.name, chunk_frame(chunk, table.name, enums))
else:
    ds = build_grid(sweep)
    for name in TABLE_NAMES:
        write(name, frame(ds, name))
print(json.dumps(seconds))
"""


def _python(arguments: list[str]) -> tuple[float, str]:
    """Run ``python arguments`` to completion; its wall time [s] and standard output."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, check=False)
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
    ``total``), ``ratio`` (run over Polars' write), the rows and the bytes of each file.
    """
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
        arguments = [str(config), str(polars_folder), str(memory_budget or 0)]
        _, printed = _python(["-c", POLARS_WRITE, *arguments])
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
    }


def format_run_path(result: dict[str, Any]) -> str:
    """One line: the run, its ratio to Polars' write, and its split."""
    split = ", ".join(f"{name} {seconds:.2f}" for name, seconds in result["split_s"].items())
    return (
        f"cold sweeps run {result['run_s']:.2f} s = {result['ratio']:.2f}x Polars' write of "
        f"its tables ({result['polars_s']['total']:.2f} s); {result['layout']} layout, "
        f"{result['chunks']} chunk(s); split [s]: {split}"
    )
