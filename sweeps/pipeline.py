"""One sweep end to end: config to grid to files. The CLI calls these; so can users."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import xarray as xr

from sweeps.config import Sweep, load_config
from sweeps.export import atomic_folder, check_target, column_info, frames, to_netcdf, write_frame
from sweeps.grid import build_grid

Hook = Callable[[xr.Dataset, Sweep, Path], list[str]]
"""Extra outputs (charts, report): given the grid, the sweep and the staging folder, write
files there and return their paths relative to it."""


def run(config: Sweep | str | Path) -> xr.Dataset:
    """The grid of a sweep: a ``Sweep``, or the path of a config file to load first."""
    sweep = config if isinstance(config, Sweep) else load_config(config)
    return build_grid(sweep)


@dataclass
class RunResult:
    """What ``run_to_folder`` wrote: the folder, the grid, row counts and timings [s]."""

    folder: Path
    dataset: xr.Dataset
    rows: dict[str, int]
    timings: dict[str, float] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def _version() -> str:
    from sweeps import __version__

    return __version__


def manifest(sweep: Sweep, rows: Mapping[str, int], columns: Mapping[str, object],
             timings: dict[str, float], files: list[str]) -> dict[str, object]:
    """The manifest of a result folder, as a JSON-ready dict."""
    return {
        "package": "sweeps",
        "version": _version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "sweep": {"name": sweep.name, "title": sweep.title},
        "config": {"path": sweep.path, "sha256": sweep.sha256, "text": sweep.text},
        "axes": {
            "model": [m.id for m in sweep.models],
            "hardware": [h.id for h in sweep.hardware],
            "tp": list(sweep.tp),
            "batch": list(sweep.batch),
            "context": list(sweep.context),
            "prompt": list(sweep.prompt),
            "kv_heads": list(sweep.kv_heads),
            "kv_dtype": [d.name for d in sweep.kv_dtype],
            "weight_dtype": [d.name for d in sweep.weight_dtype],
        },
        "options": vars(sweep.options),
        "rows": rows,
        "columns": columns,
        "timings_s": timings,
        "files": files,
    }


def run_to_folder(
    sweep: Sweep, out: str | Path = "outputs", force: bool = False, hooks: tuple[Hook, ...] = ()
) -> RunResult:
    """Compute ``sweep`` and write ``<out>/<name>/`` atomically (replaced only with ``force``).

    Writes the four Parquet tables, ``grid.nc`` (unless ``[outputs] grid = "none"``), whatever
    ``hooks`` add (charts, report), and ``manifest.json`` last.
    """
    target = Path(out) / sweep.name
    check_target(target, force)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    ds = build_grid(sweep)
    timings["grid"] = time.perf_counter() - start
    with atomic_folder(target, force) as staging:
        start = time.perf_counter()
        tables = frames(ds)
        files, rows, columns = [], {}, {}
        for name, frame in tables.items():
            write_frame(frame, staging / f"{name}.parquet", name)
            files.append(f"{name}.parquet")
            rows[name] = frame.height
            columns[name] = column_info(frame, name)
        if sweep.grid_format == "netcdf":
            to_netcdf(ds, staging / "grid.nc")
            files.append("grid.nc")
        timings["export"] = time.perf_counter() - start
        for hook in hooks:
            start = time.perf_counter()
            files += hook(ds, sweep, staging)
            timings[getattr(hook, "__name__", "hook")] = time.perf_counter() - start
        files.append("manifest.json")
        document = manifest(sweep, rows, columns, timings, files)
        (staging / "manifest.json").write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    return RunResult(target, ds, rows, timings, files)
