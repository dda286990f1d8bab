"""The Pareto front's benchmark line: ``sweeps.physics.pareto_front`` on a million points.

docs/serving.md section 6 asks for an O(n log n) front (a sort and a running maximum, never a
pairwise loop) that takes under a second on 1e6 points. The points are seeded and shaped as
the serving table's are: throughput per device and speed per user that trade against each
other along a noisy curve, in groups (a model and workload each), with a share of NaN (points
that miss the objectives). Best of a few calls, each timed as ``timeit`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps.bench.timing import timed
from sweeps.physics import pareto_front

BUDGET_S = 1.0
"""What the front may take on a million points [s] (docs/serving.md section 6)."""


def pareto_points(points: int, groups: int = 64, seed: int = 12) -> tuple[np.ndarray, ...]:
    """Seeded ``(x, y, group)``: ``points`` points in ``groups`` groups, 5 % of them NaN.

    ``x`` (per-device throughput) grows with a hidden batch while ``y`` (per-user speed) falls,
    with multiplicative noise, so that a real front of many points forms in every group.
    """
    rng = np.random.default_rng(seed)
    batch = rng.uniform(0.0, 10.0, points)
    x = np.exp(batch) * rng.lognormal(0.0, 0.3, points)
    y = np.exp(-0.5 * batch) * rng.lognormal(0.0, 0.3, points)
    x[rng.random(points) < 0.05] = np.nan
    return x, y, rng.integers(0, groups, points)


def measure_pareto(points: int = 1_000_000, rounds: int = 3) -> dict[str, Any]:
    """Time ``pareto_front`` on ``points`` seeded points, best of ``rounds`` calls.

    Returns ``points`` [1], ``groups`` [1], ``seconds`` (best call) [s], ``points_per_s``
    [1/s], ``on_front`` (points on their group's front) [1], ``budget_s`` [s] and
    ``within_budget`` (``seconds <= budget_s``, scaled to the points asked for).
    """
    x, y, group = pareto_points(points)
    best, front = np.inf, np.zeros(0, dtype=bool)
    for _ in range(max(rounds, 1)):
        seconds, front = timed(lambda: pareto_front(x, y, group))
        best = min(best, seconds)
    budget = BUDGET_S * points / 1_000_000
    return {
        "points": points,
        "groups": int(np.unique(group).size),
        "seconds": best,
        "points_per_s": points / best if best > 0 else np.inf,
        "on_front": int(np.count_nonzero(front)),
        "budget_s": budget,
        "within_budget": bool(best <= budget),
    }
