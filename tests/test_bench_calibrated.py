"""The calibrate bench line: generated measurements calibrated in a fresh interpreter, every
figure reported; the generated file itself read back. No timing asserts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweeps.bench.calibrated import (
    CONFIGURATIONS,
    format_calibration,
    measure_calibration,
    write_measurements,
)
from sweeps.calibrate import load_measurements


def test_the_generated_file_is_a_valid_measurements_file(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    assert write_measurements(path, 400) == len(CONFIGURATIONS)
    rows = load_measurements(path)
    assert len(rows) == 400
    assert {m.metric for m in rows} == {
        "output_tokens_per_s", "ttft_s", "itl_s", "request_latency_s"
    }  # fmt: skip
    closed = [m for m in rows if m.concurrency is not None]
    assert closed
    assert all(m.metric == "output_tokens_per_s" for m in closed)
    assert any(m.batch is None for m in rows)  # batch = max
    again = tmp_path / "again.csv"
    write_measurements(again, 400)  # seeded: the same file
    assert again.read_bytes() == path.read_bytes()


def test_measure_calibration_reports_every_figure() -> None:
    result = measure_calibration(rows=300)
    assert result["rows"] == 300
    assert result["bounded"] == 300  # every configuration fits: each row has a bound
    assert result["beats"] == 0
    assert result["seconds"] > 0
    assert result["cpu_seconds"] > 0
    assert result["peak_rss_bytes"] > 10**7
    assert result["budget_s"] == pytest.approx(30.0 * 300 / 48_000, rel=1e-12)
    text = format_calibration(result)
    assert text.startswith("calibrate: 300 generated measurements (8 configurations")
    assert ("met" in text.split("budget")[-1]) == result["within_budget"]
