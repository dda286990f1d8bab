"""The basis of an expected value is the coverage of the measured rows (issue 43 item 2).

A shape is ``measured`` where it is a row of the table, ``interpolated`` where every corner of
the cell of measured values around it is a row, ``extrapolated`` elsewhere: outside an axis's
range, and inside every axis's range but outside the rows measured together (the decode
attention tables cover batch 8 to 65,535 cached tokens, batch 512 only to 511). The
adversary reads the table's rows itself, as a plain set of tuples, and looks for the cell.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import bisect
import functools
import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweeps.catalog import load_catalog
from sweeps.measured.database import parse, systems_root
from sweeps.measured.kernels import MEMO_SIZE, NAMES, Reading, Readings, kernels
from sweeps.studies.expected.step import Config, step

pytest.importorskip("aiconfigurator_core")

SYSTEM, ENGINE, VERSION = "h100_sxm", "vllm", "0.24.0"
HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
"""Llama-3.1-8B's attention at tp 1: 32 heads, 8 KV heads of 128."""

GEMM_AXES = ("m", "n", "k")
ATTENTION_AXES = (
    "batch_size",
    "step",
    "num_heads",
    "num_key_value_heads",
    "head_dim",
    "window_size",
)


@functools.cache
def _rows(family: str, name: str, column: str, value: str, axes: tuple[str, ...]) -> frozenset:
    """The table's measured rows at one format, as tuples of ``axes``."""
    path = systems_root() / "data" / SYSTEM / family / ENGINE / VERSION / f"{name}.parquet"
    frame = pl.read_parquet(path).filter(pl.col(column) == value)
    return frozenset(frame.select(axes).iter_rows())


def _gemm_rows() -> frozenset:
    return _rows("gemm", "gemm_perf", "gemm_dtype", "bfloat16", GEMM_AXES)


def _attention_rows() -> frozenset:
    name = "generation_attention_perf"
    return _rows("attention", name, "kv_cache_dtype", "bfloat16", ATTENTION_AXES)


def _adversary(rows: frozenset, point: tuple[float, ...]) -> str:
    """The basis by a plain loop over the rows: the point itself a row; else, per axis, the
    nearest measured values below and above it, every combination of them a row."""
    if point in rows:
        return "measured"
    brackets = []
    for axis, value in enumerate(point):
        values = sorted({row[axis] for row in rows})
        if value < values[0] or value > values[-1]:
            return "extrapolated"
        at = bisect.bisect_left(values, value)
        brackets.append({values[at]} if values[at] == value else {values[at - 1], values[at]})
    corners = itertools.product(*brackets)
    return "interpolated" if all(corner in rows for corner in corners) else "extrapolated"


def _prefill_rows() -> frozenset:
    axes = ("batch_size", "isl", *ATTENTION_AXES[2:])
    name = "context_attention_perf"
    return _rows("attention", name, "kv_cache_dtype", "bfloat16", axes)


@pytest.mark.parametrize(
    ("batch", "prompt", "basis"),
    [
        (8, 4096, "measured"),
        (12, 3000, "interpolated"),  # batch 8 and 16 both measured past 4,096 tokens
        (12, 12_000, "extrapolated"),  # batch 8 measured to 16,384 tokens, batch 16 to 8,192
        (1, 100_000, "extrapolated"),  # beyond every prompt measured
    ],
)
def test_prefill_attention_is_labelled_by_the_rows_measured_together(
    batch: int, prompt: int, basis: str
) -> None:
    reading = kernels(SYSTEM, ENGINE, VERSION).attention(
        prefill=True, batch=batch, length=prompt, heads=HEADS, kv_heads=KV_HEADS,
        head_dim=HEAD_DIM, window=0, fmt="bf16",
    )  # fmt: skip
    assert reading.basis == basis
    assert _adversary(_prefill_rows(), (batch, prompt, HEADS, KV_HEADS, HEAD_DIM, 0)) == basis


def _attention(batch: int, context: int) -> Reading:
    k = kernels(SYSTEM, ENGINE, VERSION)
    return k.attention(
        prefill=False, batch=batch, length=context, heads=HEADS, kv_heads=KV_HEADS,
        head_dim=HEAD_DIM, window=0, fmt="bf16",
    )  # fmt: skip


def _config() -> Config:
    catalog = load_catalog()
    m, d = catalog.models["llama-3.1-8b"], catalog.hardware["h100-sxm"]
    peak = d.peak_flops["bf16"]
    return Config(m, d, 1, m.kv_heads, "bf16", "bf16", 2.0, 2.0, peak, peak, parse(ENGINE))


@pytest.mark.parametrize(
    ("batch", "context", "basis"),
    [
        (8, 1024, "measured"),  # step 1023, a row
        (8, 3000, "interpolated"),  # step 2999 between the rows 2047 and 4095 of batch 8
        (12, 3000, "interpolated"),  # batch 8 and 16 both measured to 4095 and beyond
        (300, 200, "interpolated"),  # batch 256 and 512 both measured to 255
        (512, 4096, "extrapolated"),  # each inside its range, batch 512 measured only to 511
        (300, 600, "extrapolated"),  # step 599: batch 256 has it, batch 512 not
        (8, 100_000, "extrapolated"),  # beyond every row of these heads (65,535)
        (4096, 300_000, "extrapolated"),  # outside both ranges
    ],
)
def test_decode_attention_is_labelled_by_the_rows_measured_together(
    batch: int, context: int, basis: str
) -> None:
    reading = _attention(batch, context)
    assert reading.basis == basis
    point = (batch, context - 1, HEADS, KV_HEADS, HEAD_DIM, 0)
    assert _adversary(_attention_rows(), point) == basis


def test_inside_each_range_the_extrapolated_value_is_the_estimators_own() -> None:
    """A shape inside every axis's range is read where it is asked (no clamping): its value
    does not move with its label, only a shape clamped into the range is scaled."""
    k = kernels(SYSTEM, ENGINE, VERSION)
    readings = k.attention_many(
        prefill=False, batch=np.array([512, 4096]), length=np.array([4096, 300_000]),
        heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM, window=0, fmt="bf16",
    )  # fmt: skip
    assert readings.moved is not None
    assert readings.moved.tolist() == [False, True]
    config = _config()
    joint = step(config, np.array([512]), np.array([4096]))
    assert joint.basis["attention"][0, 0] == 2  # extrapolated
    assert joint.expected["attention"][0, 0] == readings.latency_s[0] * config.model.layers


@pytest.mark.parametrize(
    ("m", "n", "k", "basis"),
    [
        (256, 8192, 4096, "measured"),
        (300, 8192, 4096, "interpolated"),  # m between 257 and 512
        (300, 6000, 4096, "interpolated"),  # m and n between measured values
        (100_000, 8192, 4096, "extrapolated"),  # m beyond 32,768
        (8, 100_000, 100_000, "extrapolated"),
    ],
)
def test_gemm_is_labelled_by_the_rows_measured_together(m: int, n: int, k: int, basis: str) -> None:
    assert kernels(SYSTEM, ENGINE, VERSION).gemm(m, n, k, "bf16").basis == basis
    assert _adversary(_gemm_rows(), (m, n, k)) == basis


def test_a_gemm_cell_with_a_missing_row_is_extrapolated() -> None:
    """The GEMM table is a full m x n x k grid less a few rows: a shape inside every range
    next to a missing row is outside the rows measured together."""
    rows = _gemm_rows()
    values = [sorted({row[a] for row in rows}) for a in range(3)]
    missing = next(p for p in itertools.product(*values) if p not in rows)
    at = [values[a].index(missing[a]) for a in range(3)]
    inside = tuple(
        v[i] + 1 if i + 1 < len(v) and v[i + 1] > v[i] + 1 else v[i]
        for v, i in zip(values, at, strict=True)
    )
    reading = kernels(SYSTEM, ENGINE, VERSION).gemm(*inside, "bf16")
    assert reading.basis == "extrapolated"
    assert _adversary(rows, inside) == "extrapolated"
    assert kernels(SYSTEM, ENGINE, VERSION).gemm(*missing, "bf16").basis == "extrapolated"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=st.integers(1, 4096),
    context=st.integers(2, 300_000),
)
def test_an_interpolated_attention_has_measured_neighbours_bracketing_it(
    batch: int, context: int
) -> None:
    reading = _attention(batch, context)
    point = (batch, context - 1, HEADS, KV_HEADS, HEAD_DIM, 0)
    assert reading.basis == _adversary(_attention_rows(), point)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 40_000),
    n=st.sampled_from([128, 1000, 4096, 6000, 14336, 51200, 70000]),
    k=st.sampled_from([64, 2048, 4096, 5000, 16384]),
)
def test_an_interpolated_gemm_has_measured_neighbours_bracketing_it(m: int, n: int, k: int) -> None:
    reading = kernels(SYSTEM, ENGINE, VERSION).gemm(m, n, k, "bf16")
    assert reading.basis == _adversary(_gemm_rows(), (m, n, k))


def test_a_large_grid_is_placed_as_its_small_pieces_are() -> None:
    """Placements of up to ``MEMO_SIZE`` values are memoized, larger ones placed anew: both
    give each shape the basis, clamped shape and latency it has alone."""
    rng = np.random.default_rng(43)
    pairs = rng.choice(
        [(8, 1024), (8, 3000), (300, 200), (512, 4096), (300, 600), (4096, 300_000)],
        size=MEMO_SIZE + 7,
    )
    k = kernels(SYSTEM, ENGINE, VERSION)

    def read(batch: np.ndarray, length: np.ndarray) -> Readings:
        return k.attention_many(
            prefill=False, batch=batch, length=length, heads=HEADS, kv_heads=KV_HEADS,
            head_dim=HEAD_DIM, window=0, fmt="bf16",
        )  # fmt: skip

    large = read(pairs[:, 0], pairs[:, 1])
    for index in range(0, len(pairs), 4099):
        alone = _attention(int(pairs[index, 0]), int(pairs[index, 1]))
        small = read(pairs[index : index + 3, 0], pairs[index : index + 3, 1])
        assert str(NAMES[large.basis[index]]) == alone.basis
        assert small.basis[0] == large.basis[index]
        assert large.latency_s[index] == alone.latency_s
        assert large.at["step"][index] == alone.at["step"]
        assert large.moved is not None
        assert small.moved is not None
        assert small.moved[0] == large.moved[index]


def test_a_table_without_a_window_column_reads_as_full_attention() -> None:
    # A100 vLLM 0.14.0's decode attention has no window_size column (it measured no sliding
    # window): read as window 0, the row at batch 8 and step 1023 is measured, as on H100
    path = systems_root() / "data" / "a100_sxm" / "attention" / "vllm" / "0.14.0"
    frame = pl.read_parquet(path / "generation_attention_perf.parquet")
    assert "window_size" not in frame.columns
    reading = kernels("a100_sxm", "vllm", "0.14.0").attention(
        prefill=False, batch=8, length=1024, heads=HEADS, kv_heads=KV_HEADS,
        head_dim=HEAD_DIM, window=0, fmt="bf16",
    )  # fmt: skip
    assert reading.latency_s is not None
    assert reading.basis == "measured"  # batch 8 is measured at steps 1, 3, ..., 1023, ...
