"""Numbers as the CLI writes them: whole sequences, separators, prefixes (issue 16 item 3)."""

from __future__ import annotations

import pytest

from sweeps.cli.numbers import binary, count, grouped, si, whole_batch


@pytest.mark.parametrize(
    ("value", "batch"),
    [(0.9, 1), (1.0, 1), (16.8, 17), (16.0, 16), (16.000000000001, 16), (2153.2, 2154)],
)
def test_a_batch_is_the_first_whole_batch_that_reaches(value: float, batch: int) -> None:
    assert whole_batch(value) == batch


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (13e9, "13 B"),
        (8.03e9, "8.03 B"),
        (671.0264192e9, "671 B"),
        (1.5e12, "1.5 T"),
        (350e6, "350 M"),
        (999, "999"),
    ],
)
def test_parameter_counts_read_b_m_t(value: float, text: str) -> None:
    assert count(value) == text


def test_units_prefixes_and_separators() -> None:
    assert si(989.4e12, "FLOP/s") == "989 TFLOP/s"
    assert si(3.35e12, "byte/s") == "3.35 Tbyte/s"
    assert si(0.5, "byte") == "0.5 byte"
    assert grouped(6772.871) == "6,772.87"
    assert binary(80 * 2**30) == "80.0 GiB"
    assert binary(448 * 2**20) == "448.0 MiB"
    assert binary(512) == "512 B"
