"""sweeps.physics.moe: the batches of a mixture of experts against plain loops, the dense closed
forms bit for bit, and numpy / xarray duck typing."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps import physics

# DeepSeek-V3-like, bytes at fp8 on one device: 37 GB read by one token, 671 GB by all experts
DEEPSEEK = (37e9, 671e9, 256, 8)


def _read(b: float, active: float, full: float, e: int, k: int) -> float:
    """The weights a step of ``b`` tokens reads, written from cost-model.md section 3: the
    expected distinct experts of ``b`` uniformly routed tokens, each k of E."""
    if e <= k:
        return full
    touched = e * (1 - (1 - k / e) ** b)
    return active + (full - active) * (touched - k) / (e - k)


def _root(slope: float, active: float, full: float, e: int, k: int) -> float:
    """The batch with ``slope b = W(b)``, by a plain bisection over [0, F / slope]."""
    lo, hi = 0.0, full / slope
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if slope * mid >= _read(mid, active, full, e, k) else (mid, hi)
    return (lo + hi) / 2


def _first_batch_at(fraction: float, kv: float, moe: tuple[float, float, int, int]) -> float:
    """The share of the ceiling ``b KV / (W(b) + b KV)``, walked batch by batch (a step of
    1/64 sequence) to the first that reaches ``fraction``."""
    b = 0.0
    while True:
        b += 1 / 64
        if b * kv / (_read(b, *moe) + b * kv) >= fraction:
            return b


def test_the_deepseek_knee_comes_before_the_dense_formula_says() -> None:
    # a 10 MB cache a sequence (a short MLA context on 8 devices): W(B) is far below 671 GB at the
    # knee of the dense formula (67,100), so the MoE knee is where B KV meets W(B)
    kv = 1e7
    knee = float(physics.moe_knee_batch(*DEEPSEEK, kv))
    assert knee == pytest.approx(_root(kv, *DEEPSEEK), rel=1e-12)
    assert float(physics.moe_weights_read(*DEEPSEEK, knee)) == pytest.approx(knee * kv, rel=1e-12)
    # by batch 67,100 every expert is touched: the knee is the dense one within rounding
    assert knee == pytest.approx(671e9 / kv, rel=1e-9)
    # a large cache a sequence: the knee is at a small batch, where few experts are touched
    kv = 4e9
    small = float(physics.moe_knee_batch(*DEEPSEEK, kv))
    assert small < 671e9 / kv
    assert small == pytest.approx(_root(kv, *DEEPSEEK), rel=1e-12)


def test_the_share_at_a_small_wall_is_what_the_cells_read() -> None:
    # at batch 2 a DeepSeek step reads ~ 37 + 634 * (2 * 8 - 8 - 0.25) / 248 GB: far less than all
    kv = 7.2e8
    share = float(physics.moe_fraction_of_ceiling(2.0, *DEEPSEEK, kv))
    read = _read(2.0, *DEEPSEEK)
    assert share == pytest.approx(2 * kv / (read + 2 * kv), rel=1e-14)
    dense = float(physics.fraction_of_ceiling(2.0, 671e9, kv))
    assert share > 5 * dense  # the dense formula's 0.2 % against the MoE's 2 %


@settings(max_examples=30, deadline=None)
@given(
    active=st.floats(1e8, 5e10),
    extra=st.floats(0.0, 20.0),
    e=st.sampled_from([1, 8, 16, 64, 128, 256]),
    k=st.sampled_from([1, 2, 4, 8]),
    kv=st.floats(1e5, 1e10),
    fraction=st.floats(0.05, 0.95),
)
def test_every_batch_is_the_plain_loops_root(
    active: float, extra: float, e: int, k: int, kv: float, fraction: float
) -> None:
    k = min(k, e)
    if e > k:  # every MoE holds weights no routed expert does (attention, embeddings): W(0) > 0
        extra = min(extra, 0.9 * (e - k) / k)
    full = active * (1 + extra)
    moe = (active, full, e, k)
    knee = float(physics.moe_knee_batch(*moe, kv))
    assert knee == pytest.approx(_root(kv, *moe), rel=1e-10)
    at = float(physics.moe_batch_for_fraction(fraction, *moe, kv))
    assert at == pytest.approx(_root((1 - fraction) / fraction * kv, *moe), rel=1e-10)
    # the share of the ceiling there is the fraction, and the formula is the plain one
    share = float(physics.moe_fraction_of_ceiling(at, *moe, kv))
    assert share == pytest.approx(fraction, rel=1e-9)


def test_the_fraction_batch_is_where_a_walk_first_reaches_it() -> None:
    kv = 4e9  # knees of a few hundred sequences, where W(B) still grows
    for fraction in (0.1, 0.5, 0.75):
        walked = _first_batch_at(fraction, kv, DEEPSEEK)
        found = float(physics.moe_batch_for_fraction(fraction, *DEEPSEEK, kv))
        assert walked - 1 / 64 < found <= walked * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(
    ridge=st.floats(50.0, 2000.0),
    flops=st.floats(1e9, 1e12),
    kv=st.floats(1e5, 1e9),
    e=st.sampled_from([8, 64, 256]),
)
def test_the_ridge_batch_is_where_intensity_meets_the_ridge(
    ridge: float, flops: float, kv: float, e: int
) -> None:
    moe = (3e10, 4e11, e, 8)
    found = float(physics.moe_ridge_batch(ridge, *moe, flops, kv))
    if flops <= ridge * kv:  # the ceiling is below the ridge: never compute-bound
        assert math.isnan(found)
        return
    intensity = found * flops / (_read(found, *moe) + found * kv)
    assert intensity == pytest.approx(ridge, rel=1e-9)


def test_a_dense_model_gets_the_closed_forms_bit_for_bit() -> None:
    w, kv, f_seq, ridge = 16.06e9, np.array([6.7e7, 1.07e9]), 1.6e10, 295.3
    dense = (w, w, 1, 1)
    assert np.array_equal(physics.moe_knee_batch(*dense, kv), physics.knee_batch(w, kv))
    assert np.array_equal(
        physics.moe_batch_for_fraction(0.9, *dense, kv), physics.batch_for_fraction(0.9, w, kv)
    )
    assert np.array_equal(
        physics.moe_ridge_batch(ridge, *dense, f_seq, kv),
        physics.ridge_batch(ridge, w, f_seq, kv),
        equal_nan=True,
    )
    assert np.array_equal(
        physics.moe_fraction_of_ceiling(57.0, *dense, kv), physics.fraction_of_ceiling(57.0, w, kv)
    )


def test_xarray_in_xarray_out() -> None:
    kv = xr.DataArray([1e7, 4e9], dims="context")
    experts = xr.DataArray([1, 256], dims="model")
    knee = physics.moe_knee_batch(37e9, 671e9, experts, xr.DataArray([1, 8], dims="model"), kv)
    assert isinstance(knee, xr.DataArray)
    assert set(knee.dims) == {"context", "model"}
    assert float(knee.isel(model=0, context=0)) == 671e9 / 1e7  # dense: every weight read
    assert float(knee.isel(model=1, context=1)) < 671e9 / 4e9


def _every_step(slope, active, full, e, k):  # type: ignore[no-untyped-def]
    """``batch_at_slope`` as it was written before it stopped early: all ``NEWTON_STEPS``
    Newton steps from ``F / s``, the same operations in the same order."""
    routes = e > k
    spare = np.where(routes, e - k, 1.0)
    log_keep = np.log(np.where(routes, 1 - k / np.where(routes, e, 1.0), 0.5))
    routed = np.where(routes, full - active, 0.0)
    batch = full / slope
    for _ in range(physics.moe.NEWTON_STEPS):
        touched = e * (1 - np.exp(batch * log_keep))
        read = active + (full - active) * np.where(routes, (touched - k) / spare, 1.0)
        gap = slope * batch - read
        rise = routed * e * -log_keep * np.exp(batch * log_keep) / spare
        descent = slope - rise
        step = np.where(descent > 0, gap / np.where(descent > 0, descent, 1.0), 0.0)
        batch = batch - np.maximum(step, 0.0)
    return batch


def test_stopping_at_the_fixed_point_gives_every_steps_bits(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the iteration stops where a step changed no batch; each later step would repeat it, so
    # the result is that of all NEWTON_STEPS, bit for bit, on scalars and on arrays (NaN and
    # dense models among them), while it takes far fewer steps
    rng = np.random.default_rng(45)
    slope = 10 ** rng.uniform(3, 11, 400)
    active = 10 ** rng.uniform(8, 10.5, 400)
    full = active * 10 ** rng.uniform(0, 1.5, 400)
    e = rng.choice([1, 8, 16, 64, 128, 256], 400)
    k = np.minimum(rng.choice([1, 2, 4, 8], 400), e)
    slope[:3] = np.nan
    reference = _every_step(slope, active, full, e, k)
    got = physics.batch_at_slope(slope, active, full, e, k)
    assert got.tobytes() == reference.tobytes()
    for i in range(0, 400, 37):
        one = physics.batch_at_slope(slope[i], active[i], full[i], int(e[i]), int(k[i]))
        assert np.float64(one).tobytes() == reference[i].tobytes()
    steps = []
    read = physics.moe.moe_weights_read
    monkeypatch.setattr(physics.moe, "moe_weights_read", lambda *a: steps.append(1) or read(*a))
    physics.batch_at_slope(1e7, *DEEPSEEK)
    assert 0 < len(steps) < physics.moe.NEWTON_STEPS
