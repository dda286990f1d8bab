"""``sweeps bench``: how fast the engine is, against the limits that matter, in one run.

A **point** is one cell of the decode grid or of the prefill grid (one row of ``decode`` or
``prefill`` Parquet) with every output variable of its phase evaluated: the full-rank ones
(bottleneck, attainable FLOP/s, utilization, feasible, step time / TTFT, tokens/s) written to
memory, the lower-rank ones (ceiling, knee, max batch, ...) held once per configuration, as
the Dataset stores them. Points/s counts decode plus prefill points per second of
``build_grid``, single-threaded, float64.

Measured on one grid (``grids``), in one process (except the end-to-end run):

a. engine points/s (``build_grid``; ``engine``);
b. the analyses' own compute functions on floats, in a plain Python loop over a sample of
   points (one index per axis), the ratio, and their largest difference from the grid on
   every variable the analyses declare (``scalar``);
c. this machine's write limit for the bytes the engine writes: ``numpy.ndarray.fill`` and
   ``numpy.copyto`` into freshly allocated arrays of the same shapes and dtypes, and the
   engine's share of it; (a) and (c) take turns, best of five each, so that both see the
   same moments of a machine whose speed moves; each call is timed as ``timeit`` does
   (garbage collector off), with nothing of the previous call still held (``timing``);
d. the export as ``run`` does it (``write_tables``: build each table's frame from the grid and
   write it) against Polars' own ``write_parquet`` (same settings, no metadata) of equal
   frames built beforehand, every column one contiguous array (``engine``);
e. an end-to-end ``run_to_folder`` of a larger grid, streamed under a memory budget, in a
   subprocess, with its peak RSS (``e2e``);
f. the run path as users run it: a cold run in a fresh interpreter, its split (start-up,
   grid, each table, grid file, report) and its ratio to the libraries' own writes of the same
   outputs (Polars' write_parquet of the tables, xarray's to_zarr of the grid file),
   for issue 14's grid in memory and for (e)'s grid streamed, each once or more (the spread of
   several runs' ratios beside the first run's figures; ``run_path``);
g. validating a config whose context range has 1e5 values, in process and as a cold
   ``sweeps validate`` (``validate``);
h. the Pareto front on 1e6 seeded points against its one-second budget (``pareto``);
i. the cold default run: the seed study with its default outputs, split into import, grid,
   export and figures, and its figures drawn again once warm (``seed``);
j. the simulator: 1e5 saturated requests (I 2048, O 256, B 256) per named scheduler against
   its one-second budget, and the same loop without numba (``simulated``);
k. ``sweeps calibrate`` on 48,000 generated measurements in a fresh interpreter: its time and
   peak RSS against their budgets (``calibrated``);
l. a generated 1e6-request trace read and described (3 s) and its exact LRU curve at 20
   capacities (10 s) (``traces``);
m. the expected pass (the ``measured`` extra): what an engine adds to the warm seed study
   (0.3 s), and the pass's points/s on grids of 1e6 and 1e7 points (the 1e7 grid's new
   shapes take about an hour), with every shape new and with the shapes known (``expected``);
n. 1,000 single points from Python, one ``sweeps.point`` call each in a loop, against 0.5 s,
   and the same points in one ``sweeps.points`` call (``points``);
o. a cold run of a 1e7-point grid of 945 model-device pairs with its default outputs
   against the same run with ``charts = []``, against 1.5x (``figures``);
p. a cold tables-only run of 9.44 M rows on two local dask workers against one process,
   the same chunks, against 1.5x, with the most two cores allow from the CPU (``cluster``;
   ``None`` without the dask extra).

``quick`` makes each cheap: small grids, 1e4 values to validate, 1e5 points for the front
(the seed run is small already and runs as it is, its figures drawn once warm), 1e4 simulated
requests, 1,000 measurements to calibrate, 1e4 trace requests, one expected grid of 1.5e3
points and the seed's overhead in one round, 27 model-device pairs for the default outputs; the
1,000 single points are cheap and run as they are.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeps.bench.lines import LINE, LINES, Session, chosen, format_report

POINT = (
    "one decode or prefill grid cell with all its outputs evaluated; points/s = "
    "(decode + prefill points) / seconds of build_grid, one thread, float64"
)


def run_bench(
    quick: bool = False,
    e2e_budget: int = 2 * 2**30,
    progress: Callable[[str], None] | None = None,
    runs: int = 1,
    only: str | None = None,
) -> dict[str, Any]:
    """Run the bench's lines (``sweeps.bench.lines.LINE``; ``only``: those of its letters,
    ``chosen``) in their order; a JSON-ready dict of figures (seconds, points, bytes), each
    line's under its key. ``runs``: the cold runs (f) makes of each of its grids (their spread
    beside the first's)."""
    import numpy as np

    want = chosen(only)
    say = progress or (lambda _: None)
    report: dict[str, Any] = {
        "point": POINT,
        "quick": quick,
        "lines": "".join(line.letter for line in LINE if line.letter in want),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory(prefix="sweeps-bench-") as tmp:
        session = Session(quick, e2e_budget, runs, Path(tmp))
        for line in LINE:
            if line.letter in want:
                say(line.title)
                report[line.key] = line.measure(session)
    return report


__all__ = ["LINES", "POINT", "chosen", "format_report", "run_bench"]
