"""The Pareto benchmark line: its keys and its points (never its speed: that is a measurement)."""

from __future__ import annotations

import numpy as np

from sweeps.bench.pareto import BUDGET_S, measure_pareto, pareto_points
from sweeps.physics import pareto_front


def test_measure_pareto_reports_every_key() -> None:
    result = measure_pareto(points=5_000, rounds=2)
    assert set(result) == {
        "points",
        "groups",
        "seconds",
        "points_per_s",
        "on_front",
        "budget_s",
        "within_budget",
    }
    assert result["points"] == 5_000
    assert result["groups"] == 64
    assert result["seconds"] > 0
    assert result["points_per_s"] == 5_000 / result["seconds"]
    assert result["budget_s"] == BUDGET_S * 5_000 / 1_000_000
    assert isinstance(result["within_budget"], bool)
    x, y, group = pareto_points(5_000)
    assert result["on_front"] == int(np.count_nonzero(pareto_front(x, y, group)))


def test_the_points_form_real_fronts() -> None:
    x, y, group = pareto_points(20_000, groups=8)
    assert 0.03 < np.isnan(x).mean() < 0.07
    front = pareto_front(x, y, group)
    per_group = np.bincount(group[front], minlength=8)
    assert (per_group >= 5).all()  # a curve in every group, not one dominant point
    assert front.sum() < 0.05 * x.size
    # seeded: the same points every time
    np.testing.assert_array_equal(pareto_points(100)[1], pareto_points(100)[1])
