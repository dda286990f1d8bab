"""(n) small questions from Python: 1,000 single points, one ``sweeps.point`` call each, in a
plain loop, against the budget of issue 45 (0.5 s), and the same points in one
``sweeps.points`` call.

The points are seeded and distinct: ``PAIRS`` models on devices (each resolved once by the
loop, its validation and catalog records included in the time: the points' store is emptied
first), each at random batches and contexts. Wall and CPU seconds are both given (a busy
machine's wall is not the loop's own). The first call is warmed outside the time (imports).
"""

from __future__ import annotations

import random
import time
from typing import Any

from sweeps.bench.timing import timed

BUDGET_S = 0.5
"""What 1,000 single points from Python may take [s] (issue 45)."""

POINTS = 1_000
"""Points of the loop [1]."""

MODELS = ("llama-3-8b", "mixtral-8x7b", "deepseek-v3", "qwen2.5-72b")
DEVICES = ("h100-sxm", "mi300x", "b200", "l40s", "tpu-v5e")
PAIRS = len(MODELS) * len(DEVICES)
"""Model-device pairs the points are spread over [1]."""


def _rows(points: int, seed: int = 45) -> list[dict[str, Any]]:
    """``points`` seeded points over ``MODELS`` x ``DEVICES``, batches 1-1024, contexts
    128-131072."""
    rng = random.Random(seed)
    return [
        {
            "model": rng.choice(MODELS),
            "hardware": rng.choice(DEVICES),
            "batch": rng.randint(1, 1024),
            "context": rng.randint(128, 131072),
        }
        for _ in range(points)
    ]


def measure_points(points: int = POINTS) -> dict[str, Any]:
    """Seconds of ``points`` single ``sweeps.point`` calls in a loop (wall and CPU) and of one
    ``sweeps.points`` call over the same points [s]."""
    from sweeps.pipeline import points as store

    rows = _rows(points)
    store.point(**rows[0])  # the imports, outside the time

    def loop() -> list[dict[str, Any]]:
        store.clear()
        return [store.point(**row) for row in rows]

    cpu = time.process_time()
    wall, results = timed(loop)
    cpu = time.process_time() - cpu
    batched, _ = timed(lambda: store.points(rows))
    return {
        "points": len(results),
        "pairs": len({(row["model"], row["hardware"]) for row in rows}),
        "loop_s": wall,
        "loop_cpu_s": cpu,
        "per_point_s": wall / len(results),
        "points_s": batched,
        "budget_s": BUDGET_S * points / POINTS,
        "within_budget": wall <= BUDGET_S * points / POINTS,
    }


def format_points(result: dict[str, Any]) -> str:
    """The line ``sweeps bench`` prints for ``measure_points``."""
    met = "met" if result["within_budget"] else "MISSED"
    return (
        f"points: {result['points']:,} single sweeps.point calls ({result['pairs']} model-device "
        f"pairs) in {result['loop_s']:.3f} s ({result['loop_cpu_s']:.3f} s CPU, "
        f"{result['per_point_s'] * 1e6:,.0f} us a point); budget {result['budget_s']:.2f} s "
        f"{met}; one sweeps.points call {result['points_s']:.3f} s"
    )
