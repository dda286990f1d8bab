"""(m) The expected pass (issue 43): its speed over grids, and what an engine adds to the seed.

The pass is timed as a user meets it: ``build_grid`` of a grid with an engine against the same
grid without one (the difference is the expected and kernels tables' compute), twice: with
every shape new to the process (the database's tables and estimator loaded, no shape asked:
each distinct shape costs one call of aiconfigurator-core's compiled query, the floor of the
pass) and with every shape known (the same grid again, its shapes memoized), on a grid of 1e6
points (the target's 1e7 by hand: ``SIDES``). The seed study
(``configs/seed-llama3-8b-h100.toml``) is run as ``run`` runs it, its tables and grid file
without figures, warm (a first run of each beforehand), with ``engine = ["vllm"]`` and without:
its overhead against ``SEED_BUDGET_S``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Collection
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

SEED_BUDGET_S = 0.3
"""What an engine may add to the warm seed study [s]."""

TARGET_POINTS_PER_S = 20e6
"""The expected pass's target speed on a 1e7-point grid [point/s]."""

GRID = """
[sweep]
name = "bench-expected"
[axes]
model = ["llama-3.1-8b", "qwen3-32b"]
hardware = ["h100-sxm", "b200"]
tp = [1, 4]
batch = {{ start = 1, stop = {side} }}
context = {{ start = 128, stop = {stop}, step = 128 }}
kv_dtype = ["bf16", "fp8"]
weight_dtype = ["bf16", "fp8"]
{engine}
[outputs]
charts = []
grid = "none"
"""
"""The pass's grid: 96 configurations (2 models, 2 devices, tp 1 and 4, 2 KV and 2 weight
formats, 3 engines) of ``side`` batches by ``side`` contexts."""

ENGINES = 'engine = ["vllm", "trtllm", "sglang"]'

SIDES = (102,)
"""Batches and contexts a side of the full bench's grid: 998,784 points. The target's 1e7-point
grid (side 323: 10,015,584 points) is ``measure_pass(323)``, by hand: about 5 GB peak RSS and
about an hour of estimator calls with every shape new (7.7 M distinct shapes), too long for a
bench a user runs."""

QUICK_SIDES = (4,)
"""The quick bench's: 1,536 points."""


def grid_text(side: int, engine: bool = True) -> str:
    """The pass's grid of ``side`` batches by ``side`` contexts, with the three engines or none."""
    return GRID.format(side=side, stop=128 * side, engine=ENGINES if engine else "")


def _forget() -> int:
    """Forget every shape read so far; how many there were."""
    from sweeps.measured.kernels import loaded

    asked = sum(k.asked for k in loaded())
    for k in loaded():
        k.forget()
    return asked


def added_bytes(with_engine: Any, without: Collection[str]) -> int:
    """The bytes of the variables of the grid ``with_engine`` not named in ``without`` (the
    same grid's variables without an engine): the expected and kernels tables' outputs
    [byte]."""
    return int(
        sum(with_engine[name].nbytes for name in with_engine.data_vars if name not in without)
    )


def fill_seconds(nbytes: int, rounds: int = 3) -> float:
    """The best seconds of writing ``nbytes`` into memory already faulted in (``fill`` of an
    array allocated once): this machine's write bandwidth, so the physical floor of producing
    that many bytes of output (fresh pages, as the pass's new arrays are, only add) [s]."""
    from sweeps.bench.timing import timed

    words = np.ones(max(nbytes // 8, 1))
    return min(timed(lambda: words.fill(2.0))[0] for _ in range(rounds))


def measure_pass(side: int) -> dict[str, Any]:
    """The pass on the grid of ``side`` (``grid_text``): its points, seconds and points/s with
    every shape new and with every shape known (the same grid again), the estimator's calls,
    and beside them the physical floor of the pass: its output bytes written into fresh memory
    at this machine's measured fill speed, in the same run (``fill_seconds``)."""
    from sweeps.bench.timing import timed
    from sweeps.config import parse_config
    from sweeps.grid import build_grid
    from sweeps.measured.kernels import loaded

    with_engine = parse_config(grid_text(side), "<bench-expected>")
    without = parse_config(grid_text(side, engine=False), "<bench-expected>")
    build_grid(parse_config(grid_text(2), "<bench-expected>"))  # the tables and estimators
    bare = min(timed(lambda: build_grid(without))[0] for _ in range(2))
    names = {str(name) for name in build_grid(without).data_vars}
    _forget()
    new, ds = timed(lambda: build_grid(with_engine))
    points = int(ds["expected_step_time_s"].size)
    nbytes = added_bytes(ds, names)
    del ds
    calls = sum(k.asked for k in loaded())  # each asked once: the new run's distinct shapes
    known = timed(lambda: build_grid(with_engine))[0]
    new_s, known_s = max(new - bare, 1e-9), max(known - bare, 1e-9)
    floor = fill_seconds(nbytes)
    return {
        "points": points,
        "without_engine_s": bare,
        "new_shapes_s": new_s,
        "known_shapes_s": known_s,
        "new_points_per_s": points / new_s,
        "known_points_per_s": points / known_s,
        "estimator_calls": calls,
        "output_bytes": nbytes,
        "floor_s": floor,
        "floor_points_per_s": points / max(floor, 1e-9),
    }


def measure_seed_overhead(rounds: int = 5) -> dict[str, Any]:
    """The warm seed study's seconds without and with an engine (best of ``rounds``, taking
    turns, after a first run of each), the difference, and the difference of its grids alone
    (``build_grid``: the pass's compute, without the writes, whose noise on a busy machine
    is larger than the pass)."""
    from sweeps.bench.seed import SEED
    from sweeps.bench.timing import interleaved
    from sweeps.config import parse_config
    from sweeps.grid import build_grid
    from sweeps.pipeline.execute import run_to_folder

    seed = (resources.files("sweeps") / "examples" / SEED).read_text(encoding="utf-8")
    engine = seed.replace("\n[options]", '\nengine = ["vllm"]\n\n[options]', 1)
    sweeps = {"without": parse_config(seed, "<seed>"), "with": parse_config(engine, "<seed>")}
    with tempfile.TemporaryDirectory(prefix="sweeps-bench-seed-") as tmp:
        runs = {
            name: lambda s=sweep, f=Path(tmp) / name: run_to_folder(s, f, force=True)
            for name, sweep in sweeps.items()
        }
        grids = {f"grid_{name}": lambda s=sweep: build_grid(s) for name, sweep in sweeps.items()}
        for run in runs.values():
            run()  # the warm-up: imports, the database's tables and estimator
        best = interleaved({**runs, **grids}, rounds)
    without, with_engine = best["without"][0], best["with"][0]
    overhead = with_engine - without
    return {
        "without_s": without,
        "with_engine_s": with_engine,
        "overhead_s": overhead,
        "grid_overhead_s": best["grid_with"][0] - best["grid_without"][0],
        "budget_s": SEED_BUDGET_S,
        "within_budget": overhead < SEED_BUDGET_S,
    }


def measure_expected(sides: tuple[int, ...] = SIDES, rounds: int = 5) -> dict[str, Any]:
    """(m): the seed study's overhead with an engine (best of ``rounds``) and the pass on each
    grid of ``sides``; ``None`` where the ``measured`` extra is not installed."""
    from sweeps.measured.database import installed

    if not installed():
        return {"installed": False}
    return {
        "installed": True,
        "seed": measure_seed_overhead(rounds),
        "grids": [measure_pass(side) for side in sides],
        "target_points_per_s": TARGET_POINTS_PER_S,
    }


def _rate(points_per_s: float) -> str:
    """A speed in k or M points/s."""
    if points_per_s >= 1e6:
        return f"{points_per_s / 1e6:,.2f} M points/s"
    return f"{points_per_s / 1e3:,.1f} k points/s"


def format_expected(result: dict[str, Any]) -> str:
    """The line of (m)."""
    if not result["installed"]:
        return "expected pass: not measured (the measured extra is not installed)"
    seed = result["seed"]
    grids = "; ".join(
        f"{g['points']:,} points: {_rate(g['new_points_per_s'])} with every shape new "
        f"({g['estimator_calls']:,} estimator calls, {g['new_shapes_s']:.2f} s), "
        f"{_rate(g['known_points_per_s'])} with the shapes known ({g['known_shapes_s']:.2f} s); "
        f"the physical floor, its {g['output_bytes'] / 1e9:,.2f} GB of outputs written at "
        f"{g['output_bytes'] / max(g['floor_s'], 1e-9) / 1e9:,.1f} GB/s: "
        f"{_rate(g['floor_points_per_s'])} ({g['floor_s']:.2f} s)"
        for g in result["grids"]
    )
    target = result["target_points_per_s"]
    best = max((g["known_points_per_s"] for g in result["grids"]), default=0.0)
    return (
        f"expected pass: the seed study with an engine takes {seed['overhead_s']:+.3f} s warm "
        f"({seed['with_engine_s']:.3f} s against {seed['without_s']:.3f} s, the grid alone "
        f"{seed['grid_overhead_s']:+.3f} s; budget "
        f"{seed['budget_s']:.1f} s {'met' if seed['within_budget'] else 'MISSED'}); {grids}; "
        f"target {target / 1e6:.0f} M points/s {'met' if best >= target else 'MISSED'}"
        f"{_beyond(result['grids'], target)}"
    )


def _beyond(grids: list[dict[str, Any]], target: float) -> str:
    """Where the target is above the physical floor of a grid's outputs, says so."""
    floor = max((g["floor_points_per_s"] for g in grids), default=float("inf"))
    return f" (above the floor of writing its outputs, {_rate(floor)})" if floor < target else ""
