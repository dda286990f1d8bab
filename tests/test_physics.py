"""Physics: hand-computed reference values, duck typing, and hypothesis invariants."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from sweeps import physics

H100_FLOPS, H100_BW = 989.4e12, 3.35e12
H200_BW = 4.8e12


# --- section 1: roofline --------------------------------------------------------------------


def test_ridge_points_of_the_cost_model() -> None:
    # 989.4e12 / 3.35e12 = 295.34; 989.4e12 / 4.8e12 = 206.13
    assert physics.ridge_point(H100_FLOPS, H100_BW) == pytest.approx(295.343, abs=1e-3)
    assert physics.ridge_point(H100_FLOPS, H200_BW) == pytest.approx(206.125, abs=1e-3)


def test_tie_is_compute_bound() -> None:
    ridge = physics.ridge_point(H100_FLOPS, H100_BW)
    assert bool(physics.is_compute_bound(ridge, ridge))
    assert not bool(physics.is_compute_bound(np.nextafter(ridge, 0), ridge))


def test_attainable_and_roofline_time() -> None:
    # AI 8 on an H100: 8 * 3.35e12 = 26.8e12 FLOP/s, 2.709 % of peak
    assert physics.attainable_flops(8.0, H100_FLOPS, H100_BW) == pytest.approx(26.8e12)
    assert physics.utilization(26.8e12, H100_FLOPS) == pytest.approx(0.027087, abs=1e-6)
    # 1e12 FLOP and 1e9 bytes: compute 1.0107 ms vs memory 0.2985 ms -> compute wins
    assert physics.roofline_time(1e12, 1e9, H100_FLOPS, H100_BW) == pytest.approx(1e12 / H100_FLOPS)


# --- section 2: bytes -----------------------------------------------------------------------


def test_llama3_8b_kv_bytes() -> None:
    # 2 * 8 * 128 * 2 * 32 = 131072 bytes per token; 8192 tokens = 2**30 bytes (1 GiB)
    per_token = physics.kv_bytes_per_token(32, 8, 128, 2)
    assert per_token == 131072
    layer_tokens = physics.kv_cached_layer_tokens(8192, 32, 0, np.inf)
    assert physics.kv_bytes_per_sequence(2 * 8 * 128, 2, layer_tokens) == 2**30


def test_sliding_window_caps_local_layers() -> None:
    # Mistral 7B: window 4096 on all 32 layers -> at most 32 * 4096 token-layers
    assert physics.kv_cached_layer_tokens(32768, 32, 32, 4096) == 32 * 4096
    # half the layers local: 16 * 8192 + 16 * 4096
    assert physics.kv_cached_layer_tokens(8192, 32, 16, 4096) == 16 * 8192 + 16 * 4096


def test_weight_bytes_with_group_scales() -> None:
    # int4 with group 128 and a 2-byte scale: 0.5 + 2/128 = 0.515625 bytes per weight
    assert physics.weight_bytes(8e9, 0.5 + 2 / 128) == pytest.approx(4.125e9)


def test_moe_experts_touched_and_params_read() -> None:
    # Mixtral-like: 8 experts, top-2. One token touches 2; 64 tokens touch 8*(1-0.75**64).
    assert physics.expected_experts_touched(8, 2, 1) == pytest.approx(2.0)
    assert physics.expected_experts_touched(8, 2, 64) == pytest.approx(8 * (1 - 0.75**64))
    assert physics.params_read(46.7e9, 12.9e9, 8, 2, 1) == pytest.approx(12.9e9)
    assert physics.params_read(46.7e9, 12.9e9, 8, 2, 10**6) == pytest.approx(46.7e9)
    # dense: params read is params whatever the batch
    assert physics.params_read(8e9, 8e9, 1, 1, 64) == pytest.approx(8e9)


# --- section 3: decode, the note's worked example -------------------------------------------

W_NOTE = 16e9  # 2P bytes, P = 8e9 at 2 bytes


@pytest.mark.parametrize(
    ("kv_seq", "expected", "ceiling"),
    [
        (1e9, [0.94, 8.0, 12.8, 15.06], 16.0),
        (0.064e9, [1.0, 15.04, 50.96, 126.48], 250.0),
    ],
)
def test_note_table(kv_seq: float, expected: list[float], ceiling: float) -> None:
    batch = np.array([1, 16, 64, 256])
    f_seq = physics.decode_flops_per_sequence(8e9, 0.0, 0.0)
    ai = physics.arithmetic_intensity(
        physics.decode_flops(batch, f_seq), physics.decode_bytes(W_NOTE, batch, kv_seq)
    )
    np.testing.assert_array_equal(np.round(ai, 2), expected)
    assert round(physics.asymptotic_ceiling(f_seq, kv_seq), 2) == ceiling


def test_fraction_knee_and_ridge_batch() -> None:
    # knee: W / KV = 16 at 8k; there AI is exactly half the ceiling
    assert physics.knee_batch(W_NOTE, 1e9) == 16
    assert physics.fraction_of_ceiling(16, W_NOTE, 1e9) == pytest.approx(0.5)
    # 90 %: 0.9/0.1 * 16 = 144
    assert physics.batch_for_fraction(0.9, W_NOTE, 1e9) == pytest.approx(144)
    # ceiling 16 < ridge 295: never compute-bound -> NaN
    assert math.isnan(physics.ridge_batch(295.0, W_NOTE, 16e9, 1e9))
    # ceiling 250 vs ridge 206 (H200): B_R = 206 * 16e9 / (16e9 - 206 * 0.064e9) = 1198.0...
    expected = 206.0 * 16e9 / (16e9 - 206.0 * 0.064e9)
    assert physics.ridge_batch(206.0, W_NOTE, 16e9, 0.064e9) == pytest.approx(expected)
    ai = 2 * expected * 8e9 / (W_NOTE + expected * 0.064e9)
    assert ai == pytest.approx(206.0)


def test_memory_wall() -> None:
    # Llama-3 8B on "80 GB" = 80e9 bytes, no reserve: (80e9 - 16.06e9) / 2**30 = 59.5 -> 59
    assert physics.max_batch(80e9, 0.0, 2 * 8.030261248e9, 2**30) == 59
    # a model bigger than the device: 0, never negative
    assert physics.max_batch(80e9, 0.1, 141e9, 2**30) == 0


def test_tile_fill() -> None:
    # 1 row of 16, 16 of 16, 17 of 32
    np.testing.assert_allclose(physics.tile_fill(np.array([1, 16, 17])), [1 / 16, 1.0, 17 / 32])


def test_prefill_simple_form_and_threshold() -> None:
    # attention off: AI = 2 N P / (P wb) = N at 2 bytes
    flops = physics.prefill_flops(1, 1000, 8e9, 32, 256, 0.0, 0.0)
    assert physics.arithmetic_intensity(flops, physics.prefill_bytes(16e9, 1, 0.0)) == 1000
    # N* = R wb / 2 = 295.3 tokens on an H100 in bf16
    assert physics.prefill_memory_bound_prompt(H100_FLOPS / H100_BW, 2) == pytest.approx(
        295.34, abs=0.01
    )
    # causal attention, no window: 2 B L H d N^2 (pairs N^2/2 per layer, attention_dim 2d)
    pairs = physics.prefill_attention_pairs(512, 32, 0, np.inf)
    assert physics.prefill_flops(1, 512, 0.0, 32, 256, pairs, 1.0) == 2 * 32 * 32 * 128 * 512**2


def test_decode_attention_flops() -> None:
    # 4 * L * H * d * S for plain attention: Llama-3 8B at 8k = 4.295e9 FLOP per token
    layer_tokens = physics.kv_cached_layer_tokens(8192, 32, 0, np.inf)
    assert physics.attention_flops_per_token(32, 256, layer_tokens) == 4 * 32 * 32 * 128 * 8192


def test_allreduce_zero_without_tp() -> None:
    assert physics.allreduce_bytes(32, 8, 4096, 2, 1) == 0
    # tp 2: 2 all-reduces/layer * 32 layers * 8 * 4096 * 2 bytes * 2 * (1/2)
    assert physics.allreduce_bytes(32, 8, 4096, 2, 2) == 2 * 32 * 8 * 4096 * 2


# --- duck typing: one function, three array types -------------------------------------------


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (physics.ridge_batch, (206.0, 16e9, 16e9, [0.064e9, 1e9])),
        (physics.max_batch, (80e9, 0.1, 16e9, [0.064e9, 1e9])),
        (physics.params_read, (46.7e9, 12.9e9, 8, 2, [1, 64])),
        (physics.attainable_flops, ([8.0, 400.0], H100_FLOPS, H100_BW)),
        (physics.kv_cached_layer_tokens, ([512, 8192], 42, 21, 4096)),
        (physics.causal_attention_pairs, ([100, 8192], 4096)),
    ],
)
def test_same_function_on_scalars_numpy_and_xarray(function: Any, args: tuple[Any, ...]) -> None:
    at = next(i for i, a in enumerate(args) if isinstance(a, list))
    varying = args[at]

    def call(value: Any) -> Any:
        return function(*args[:at], value, *args[at + 1 :])

    scalars = [call(v) for v in varying]
    array = call(np.asarray(varying))
    da = call(xr.DataArray(varying, dims="x"))
    assert isinstance(da, xr.DataArray)
    assert da.dims == ("x",)
    np.testing.assert_allclose(array, scalars, rtol=0, atol=0, equal_nan=True)
    np.testing.assert_allclose(da.values, scalars, rtol=0, atol=0, equal_nan=True)


# --- invariants -----------------------------------------------------------------------------

positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)
sizes = st.integers(min_value=1, max_value=2**20)


@given(ai=st.floats(min_value=0, max_value=1e9), peak=st.floats(1e9, 1e18), bw=st.floats(1e9, 1e14))
def test_attainable_never_above_peak(ai: float, peak: float, bw: float) -> None:
    attainable = physics.attainable_flops(ai, peak, bw)
    assert attainable <= peak
    assert physics.utilization(attainable, peak) <= 1.0


@given(
    layers=st.integers(1, 200),
    heads=st.integers(1, 128),
    dim=st.integers(1, 512),
    context=sizes,
    k=st.integers(2, 16),
)
def test_kv_bytes_linear_in_context_and_heads(
    layers: int, heads: int, dim: int, context: int, k: int
) -> None:
    def kv(h: int, s: int) -> float:
        tokens = physics.kv_cached_layer_tokens(s, layers, 0, np.inf)
        return physics.kv_bytes_per_sequence(2 * h * dim, 2, tokens)

    assert kv(heads, k * context) == k * kv(heads, context)
    assert kv(k * heads, context) == k * kv(heads, context)


@given(
    weights=st.floats(1e6, 1e13),
    kv=st.floats(1e3, 1e11),
    batch=st.integers(1, 10**6),
    params=st.floats(1e6, 1e12),
    attention=st.floats(0, 1e12),
)
def test_ai_below_ceiling_and_increasing_in_batch(
    weights: float, kv: float, batch: int, params: float, attention: float
) -> None:
    f_seq = physics.decode_flops_per_sequence(params, attention, 1.0)

    def ai(b: int) -> float:
        return physics.arithmetic_intensity(
            physics.decode_flops(b, f_seq), physics.decode_bytes(weights, b, kv)
        )

    ceiling = physics.asymptotic_ceiling(f_seq, kv)
    assert ai(batch) < ceiling
    # increasing in batch; in floats, non-decreasing once W / (B KV_seq) drops below resolution
    assert ai(batch + 1) >= ai(batch)
    if weights > 1e-9 * batch * kv:
        assert ai(2 * batch) > ai(batch)
    assert ai(batch) / ceiling == pytest.approx(physics.fraction_of_ceiling(batch, weights, kv))
