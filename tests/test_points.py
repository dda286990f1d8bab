"""``sweeps.point`` / ``sweeps.points``: the analyses on the points alone equal the grid's
numbers at those points, for dense and MoE models, several devices, dtypes and options."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

import sweeps
from sweeps.config import parse_config
from sweeps.grid import build_grid
from sweeps.pipeline import points as points_module

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
            at = {"prompt": row["context"], **row}  # a point prefills its own context
            variable = grid[name].sel({d: at[d] for d in grid[name].dims if d in at})
            expected = float(np.asarray(variable.values).reshape(-1)[0])
            assert _same(float(value[name]), expected), (row, name)
            compared += 1
    assert compared == len(NAMES) * len(rows)


def test_one_point_is_points_of_one() -> None:
    row = {"model": "mixtral-8x7b", "hardware": "mi300x", "batch": 8, "context": 4096}
    one, many = sweeps.point(**row), sweeps.points([row])[0]
    assert one.keys() == many.keys()
    assert all(one[k] == many[k] or one[k] != one[k] for k in one)  # NaN where no value
    assert all(type(one[k]) is type(many[k]) for k in one)
    assert sweeps.points([]) == []


def test_a_bad_point_names_the_key() -> None:
    with pytest.raises(sweeps.ConfigError, match="unknown model 'no-such-model'"):
        sweeps.point(model="no-such-model", hardware="h100-sxm")


def _grid(axes: dict[str, list[object]]):  # type: ignore[no-untyped-def]
    lines = [f"{key} = {json.dumps(values)}" for key, values in axes.items()]
    return build_grid(parse_config("[sweep]\nname = 'exact'\n[axes]\n" + "\n".join(lines)))


def _at(grid, row: dict[str, object], name: str) -> object:  # type: ignore[no-untyped-def]
    """The grid's value of ``name`` at ``row`` (its prompt is its context, as a config
    without axes.prompt has it), as a Python scalar."""
    at = {
        "prompt": row["context"],
        "kv_heads": "native",
        "kv_dtype": "bf16",
        "weight_dtype": "bf16",
        **row,
    }
    variable = grid[name]
    value = np.asarray(variable.sel({d: at[d] for d in variable.dims}).values).reshape(-1)[0]
    return value.item() if isinstance(value, np.generic) else value


def _identical(a: object, b: object) -> bool:
    return (a != a and b != b) or a == b  # NaN where no value, on both sides


SPREAD = {
    "model": ["llama-3-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "gpt-oss-20b"],
    "batch": [1, 3, 64, 1000],
    "context": [128, 4097, 131072],
    "tp": [1, 8],
}
"""Dense, MoE, MLA and sliding-window models; batches and contexts on both sides of the knees."""

# The grid takes its roof split between the GEMMs and attention (engine.split) where any of its
# devices splits, so a grid is compared where every point does or none does: bf16 everywhere
# (no split), or an fp8 cache on devices with fp8 attention under bf16 weights (every point).
UNSPLIT = {**SPREAD, "hardware": ["h100-sxm", "mi300x", "tpu-v5e", "m4-max"]}
SPLIT = {**SPREAD, "hardware": ["h100-sxm", "mi300x"], "kv_dtype": ["fp8"]}


@pytest.mark.parametrize("axes", [UNSPLIT, SPLIT], ids=["unsplit", "split"])
def test_point_and_points_equal_the_grid_bit_for_bit(axes: dict[str, list[object]]) -> None:
    grid = _grid(axes)
    rng = random.Random(45)
    rows = [{key: rng.choice(values) for key, values in axes.items()} for _ in range(40)]
    compared = 0
    for how, values in (
        ("point", [sweeps.point(**row) for row in rows]),
        ("points", sweeps.points(rows)),
    ):
        for row, value in zip(rows, values, strict=True):
            for name in set(value) & set(grid.data_vars):
                assert _identical(value[name], _at(grid, row, name)), (how, row, name)
                compared += 1
    assert compared > 2 * 40 * 40


def test_a_point_equals_its_own_grid_bit_for_bit() -> None:
    # any formats, split roof or not: a point is the grid of that point alone
    rng = random.Random(7)
    formats = {"kv_dtype": ["bf16", "fp8", "int4"], "weight_dtype": ["bf16", "fp8"]}
    hardware = {"hardware": ["h100-sxm", "mi300x", "tpu-v5e", "b200"]}
    for _ in range(4):
        row = {k: rng.choice(v) for k, v in {**SPREAD, **formats, **hardware}.items()}
        grid = _grid({key: [value] for key, value in row.items()})
        value = sweeps.point(**row)
        names = set(value) & set(grid.data_vars)
        assert len(names) > 40
        assert all(_identical(value[n], _at(grid, row, n)) for n in names), row


def test_points_take_each_points_own_prompt() -> None:
    # points over several contexts without a prompt: each prefills its own context (the
    # sweep they span has every context on its prompt axis; the first was taken before)
    rows = [
        {"model": "llama-3-8b", "hardware": "h100-sxm", "batch": 4, "context": c}
        for c in (512, 8192, 65536)
    ]
    many = sweeps.points(rows)
    for row, value in zip(rows, many, strict=True):
        assert value["ttft_s"] == sweeps.point(**row)["ttft_s"]
        assert value["ttft_s"] == sweeps.point(**row, prompt=row["context"])["ttft_s"]
    assert len({value["ttft_s"] for value in many}) == 3
    given = sweeps.points([{**rows[0], "prompt": 2048}, rows[1]])
    assert given[0]["ttft_s"] == sweeps.point(**rows[0], prompt=2048)["ttft_s"]
    assert given[1]["ttft_s"] == many[1]["ttft_s"]


def test_a_loop_resolves_each_model_and_device_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # batch, context and prompt change without a new resolution; anything else is resolved
    # anew, and every answer equals a cold one's
    resolved = []
    resolve = points_module._resolve
    monkeypatch.setattr(points_module, "_resolve", lambda *a: resolved.append(a) or resolve(*a))
    points_module.clear()
    base = {"model": "mixtral-8x7b", "hardware": "mi300x"}
    loop = [
        sweeps.point(**base, batch=b, context=c) for b in (1, 7, 512) for c in (100, 4096, 70000)
    ]
    assert len(resolved) == 1
    sweeps.point(**base, batch=3, context=100, prompt=900)  # gives a prompt: another point kind
    sweeps.point(**base, batch=3, context=100, kv_dtype="fp8")
    sweeps.point(**{**base, "hardware": "h100-sxm"}, batch=3, context=100)
    assert len(resolved) == 4
    cold = []
    for b in (1, 7, 512):
        for c in (100, 4096, 70000):
            points_module.clear()
            cold.append(sweeps.point(**base, batch=b, context=c))
    assert all(a.keys() == b.keys() for a, b in zip(loop, cold, strict=True))
    assert all(all(_identical(a[k], b[k]) for k in a) for a, b in zip(loop, cold, strict=True))


def test_the_kept_points_are_bounded() -> None:
    points_module.clear()
    for tp in range(1, points_module.CACHED + 10):
        points_module._resolved({"model": "llama-3-8b", "hardware": "l4", "tp": tp}, None)
    assert len(points_module._RESOLVED) == points_module.CACHED


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"batch": 0}, r"axes\.batch"),
        ({"batch": 2.5}, r"axes\.batch"),
        ({"context": True}, r"axes\.context"),
        ({"context": 10**12}, r"axes\.context"),
    ],
)
def test_a_bad_count_is_named_after_a_loop_has_begun(
    given: dict[str, object], message: str
) -> None:
    # the loop's fast check passes a bad value to the whole validation, which names it
    sweeps.point(model="llama-3-8b", hardware="h100-sxm", batch=1, context=1)
    with pytest.raises(sweeps.ConfigError, match=message):
        sweeps.point(**{"model": "llama-3-8b", "hardware": "h100-sxm", "batch": 1, **given})
