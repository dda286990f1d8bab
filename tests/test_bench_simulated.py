"""The simulator's bench line: every scheduler timed, the interpreted ratio, the budget."""

from __future__ import annotations

import pytest

from sweeps.bench.simulated import format_simulated, measure_simulated
from sweeps.studies.serving.simulate import SCHEDULERS


def test_measure_simulated_reports_every_scheduler() -> None:
    result = measure_simulated(requests=1_000, interpreted=50, rounds=1)
    assert result["requests"] == 1_000
    assert set(result["seconds"]) == set(SCHEDULERS)
    assert all(rate > 0 for rate in result["requests_per_s"].values())
    assert result["slowest"] in SCHEDULERS
    assert result["interpreted_requests_per_s"] > 0
    assert result["budget_s"] == pytest.approx(0.01, rel=1e-12)
    text = format_simulated(result)
    assert text.startswith("simulator: 1,000 saturated requests (I 2048, O 256, B 256)")
    assert ("budget 0.01 s met" in text) == result["within_budget"]
