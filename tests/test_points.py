"""``sweeps.point`` / ``sweeps.points``: the analyses on the points alone equal the grid's
numbers at those points, for dense and MoE models, several devices, dtypes and options."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sweeps
from sweeps.config import parse_config
from sweeps.grid import build_grid

CONFIG = """
[sweep]
name = "points"
[axes]
model = ["llama-3-8b", "mixtral-8x7b"]
hardware = ["h100-sxm", "mi300x"]
batch = [1, 8, 64]
context = [4096, 32768]
kv_dtype = ["bf16", "int4"]
"""

AXES = {
    "model": ["llama-3-8b", "mixtral-8x7b"],
    "hardware": ["h100-sxm", "mi300x"],
    "batch": [1, 8, 64],
    "context": [4096, 32768],
    "kv_dtype": ["bf16", "int4"],
}


NAMES = (
    "step_time_s",
    "tokens_per_s",
    "attainable_flops",
    "ceiling",
    "max_batch",
    "ttft_s",
    "fraction_of_ceiling",
    "weights_read_bytes",
)
"""Outputs of decode, prefill and the model compared (every one, but these cover the terms)."""


@pytest.fixture(scope="module")
def grid():  # type: ignore[no-untyped-def]
    return build_grid(parse_config(CONFIG))


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=0)


def test_points_equal_the_grid(grid) -> None:  # type: ignore[no-untyped-def]
    rows = [
        {"model": m, "hardware": h, "batch": b, "context": c, "kv_dtype": k}
        for m in AXES["model"]
        for h in AXES["hardware"]
        for b in AXES["batch"]
        for c in AXES["context"]
        for k in AXES["kv_dtype"]
    ][::5]  # a spread of them, every axis value among them
    values = sweeps.points(rows)
    assert len(values) == len(rows)
    compared = 0
    for row, value in zip(rows, values, strict=True):
        for name in NAMES:
            variable = grid[name].sel({d: row[d] for d in grid[name].dims if d in row})
            expected = float(np.asarray(variable.values).reshape(-1)[0])
            assert _same(float(value[name]), expected), (row, name)
            compared += 1
    assert compared == len(NAMES) * len(rows)


def test_one_point_is_points_of_one() -> None:
    row = {"model": "mixtral-8x7b", "hardware": "mi300x", "batch": 8, "context": 4096}
    one, many = sweeps.point(**row), sweeps.points([row])[0]
    assert one.keys() == many.keys()
    assert all(one[k] == many[k] or one[k] != one[k] for k in one)  # NaN where no value
    assert sweeps.points([]) == []


def test_a_bad_point_names_the_key() -> None:
    with pytest.raises(sweeps.ConfigError, match="unknown model 'no-such-model'"):
        sweeps.point(model="no-such-model", hardware="h100-sxm")
