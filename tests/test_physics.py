"""Physics: hand-computed reference values, duck typing, and hypothesis invariants."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
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
    # a token: every one of the 32 layers holds it once
    per_token = physics.kv_bytes_per_sequence(2 * 8 * 128, 2, 32)
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
    check_duck_typed(function, args)


def check_duck_typed(function: Any, args: tuple[Any, ...]) -> None:
    """The argument given as a list, as scalars, a numpy array and a DataArray: same values."""
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
    # increasing in batch; in floats, non-decreasing to the rounding of one division once
    # W / (B KV_seq) drops below resolution (a step of 1 ulp down was seen at B = 448,171)
    assert ai(batch + 1) >= ai(batch) * (1 - 4 * np.finfo(float).eps)
    if weights > 1e-9 * batch * kv:
        assert ai(2 * batch) > ai(batch)
    assert ai(batch) / ceiling == pytest.approx(physics.fraction_of_ceiling(batch, weights, kv))


# --- second round: what a step really touches of the embeddings (cost model 3-4) -----------

LLAMA3_P = 8_030_261_248
LLAMA3_V, LLAMA3_H = 128_256, 4096
# V h_m = 525,336,576 (one table), V h_m wb = 1,050,673,152 bytes in bf16
LLAMA3_TABLE = 525_336_576


def test_embedding_params_untied_and_tied() -> None:
    assert physics.logit_params(LLAMA3_V, LLAMA3_H) == LLAMA3_TABLE
    assert physics.embedding_params(LLAMA3_V, LLAMA3_H, False) == 2 * LLAMA3_TABLE
    assert physics.embedding_params(LLAMA3_V, LLAMA3_H, True) == LLAMA3_TABLE
    assert physics.lookup_params(LLAMA3_V, LLAMA3_H, False) == LLAMA3_TABLE
    assert physics.lookup_params(LLAMA3_V, LLAMA3_H, True) == 0


def test_decode_bytes_gather_the_input_embedding() -> None:
    # D1 gone: 2P - V h wb + B h wb + KV_seq at B = 1, 8k context (KV_seq = 2**30)
    read = physics.weights_read_with_gather(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, False, 2, 1)
    step = physics.decode_bytes(read, 1, 2**30)
    assert step == 16_060_522_496 - 1_050_673_152 + 8_192 + 2**30
    # tied: the one matrix is the lm_head, read whole; no vocabulary: today's value exactly
    assert (
        physics.weights_read_with_gather(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, True, 2, 1)
        == 2 * LLAMA3_P
    )
    assert physics.weights_read_with_gather(2 * LLAMA3_P, 0, LLAMA3_H, False, 2, 64) == 2 * LLAMA3_P
    # a gather never reads more than the table: a prefill of 1e6 tokens reads every row
    assert (
        physics.weights_read_with_gather(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, False, 2, 10**6)
        == 2 * LLAMA3_P
    )


def test_gathered_decode_bytes_split_into_fixed_and_per_sequence() -> None:
    # W_read(B) - V h wb + B h wb = fixed + B gather, for every B <= V
    batch = np.array([1, 7, 64, 4096])
    fixed = physics.fixed_weights_read(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, False, 2)
    gather = physics.gather_bytes_per_sequence(LLAMA3_V, LLAMA3_H, False, 2)
    assert fixed == 16_060_522_496 - 1_050_673_152
    assert gather == 8_192
    read = physics.weights_read_with_gather(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, False, 2, batch)
    np.testing.assert_array_equal(read, fixed + batch * gather)
    # tied or no vocabulary: nothing moves
    assert physics.fixed_weights_read(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, True, 2) == 2 * LLAMA3_P
    assert physics.gather_bytes_per_sequence(0, LLAMA3_H, False, 2) == 0


def test_ceiling_knee_and_ridge_batch_follow_the_gather() -> None:
    # the decode functions take (fixed, KV_seq + gather) in place of (W, KV_seq)
    kv = 0.064e9
    fixed = physics.fixed_weights_read(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, False, 2)
    per_seq = kv + physics.gather_bytes_per_sequence(LLAMA3_V, LLAMA3_H, False, 2)
    lookup = physics.lookup_params(LLAMA3_V, LLAMA3_H, False)
    f_seq = physics.decode_flops_per_sequence(LLAMA3_P, 0.0, 0.0, lookup)

    def ai(batch: Any) -> Any:
        read = physics.weights_read_with_gather(2 * LLAMA3_P, LLAMA3_V, LLAMA3_H, False, 2, batch)
        return physics.decode_flops(batch, f_seq) / physics.decode_bytes(read, batch, kv)

    ceiling = physics.asymptotic_ceiling(f_seq, per_seq)
    batch = np.array([1.0, 16.0, 256.0])
    np.testing.assert_allclose(
        ai(batch) / ceiling, physics.fraction_of_ceiling(batch, fixed, per_seq), rtol=1e-12
    )
    knee = physics.knee_batch(fixed, per_seq)
    assert ai(knee) == pytest.approx(ceiling / 2, rel=1e-12)
    ridge = 206.0
    assert ai(physics.ridge_batch(ridge, fixed, f_seq, per_seq)) == pytest.approx(ridge, rel=1e-12)


def test_llama3_8k_ceiling_without_the_lookup_flops() -> None:
    # D1/D2 in decode: 2 (P - V h) / 2**30 = 13.98 with attention off, +4 with it on
    lookup = physics.lookup_params(LLAMA3_V, LLAMA3_H, False)
    off = physics.decode_flops_per_sequence(LLAMA3_P, 0.0, 0.0, lookup)
    assert off == 2 * (LLAMA3_P - LLAMA3_TABLE)
    assert round(physics.asymptotic_ceiling(off, 2**30), 2) == 13.98
    tokens = physics.kv_cached_layer_tokens(8192, 32, 0, np.inf)
    attention = physics.attention_flops_per_token(32, 256, tokens)  # 4 L H d S = 2**32
    on = physics.decode_flops_per_sequence(LLAMA3_P, attention, 1.0, lookup)
    assert round(physics.asymptotic_ceiling(on, 2**30), 2) == 17.98
    # the note's abstract form (lookup counted as 2P does): 14.96, still the default
    assert (
        round(
            physics.asymptotic_ceiling(
                physics.decode_flops_per_sequence(LLAMA3_P, 0.0, 0.0), 2**30
            ),
            2,
        )
        == 14.96
    )


def test_prefill_flops_only_the_last_token_needs_logits() -> None:
    # today's attention term: pairs N**2/2 per layer at width 2d, i.e. 2 B L H d N**2
    n = 2048
    pairs = physics.prefill_attention_pairs(n, 32, 0, np.inf)
    attention = 2 * 32 * 32 * 128 * n**2
    assert attention == 1_099_511_627_776  # 1.0995e12, the same in both forms
    old = physics.prefill_flops(1, n, LLAMA3_P, 32, 256, pairs, 1.0)
    assert old == 2 * n * LLAMA3_P + attention
    assert old == pytest.approx(3.3991e13, rel=1e-4)
    e = physics.embedding_params(LLAMA3_V, LLAMA3_H, False)
    head = physics.logit_params(LLAMA3_V, LLAMA3_H)
    new = physics.prefill_flops(1, n, LLAMA3_P, 32, 256, pairs, 1.0, e, head)
    assert new == 2 * n * (LLAMA3_P - 2 * LLAMA3_TABLE) + 2 * LLAMA3_TABLE + attention
    assert new == pytest.approx(2.9689e13, rel=1e-4)
    # TTFT on an H100 in bf16: 34.35 ms reported, 30.0 ms minimum (issue 11, D2)
    assert old / H100_FLOPS == pytest.approx(34.355e-3, abs=1e-5)
    assert new / H100_FLOPS == pytest.approx(30.007e-3, abs=1e-5)
    # tied: E = V h, and the lm_head still runs once a sequence
    tied = physics.prefill_flops(2, n, LLAMA3_P, 32, 256, pairs, 1.0, LLAMA3_TABLE, head)
    assert tied == 2 * (2 * n * (LLAMA3_P - LLAMA3_TABLE) + 2 * LLAMA3_TABLE + attention)


# DeepSeek-V3 (catalog): H 128, kv_lora_rank 512, rope 64, nope 128, v 128, 61 layers
DSV3 = {"heads": 128, "rank": 512, "rope": 64, "nope": 128, "v": 128, "layers": 61}
DSV3_ACTIVE, DSV3_V, DSV3_H = 37_552_297_472, 129_280, 7168
H200_FP8 = 1978.9e12


def test_mla_each_phase_takes_the_smaller_form() -> None:
    absorbed = physics.mla_absorbed_attention_dim(DSV3["rank"], DSV3["rope"])
    expanded = physics.mla_expanded_attention_dim(DSV3["nope"], DSV3["rope"], DSV3["v"])
    assert (absorbed, expanded) == (1088, 320)
    # per query-key pair: 2 H (2 r + rho) = 278,528 against 2 H (d_qk + d_v) = 81,920: 3.4x
    assert 2 * DSV3["heads"] * absorbed == 278_528
    assert 2 * DSV3["heads"] * expanded == 81_920
    assert absorbed / expanded == 3.4

    def dim(queries: Any) -> Any:
        return physics.mla_attention_dim(
            DSV3["rank"], DSV3["rope"], DSV3["nope"], DSV3["v"], queries
        )

    # decode: one query per cached latent; expanding it costs r (nope + v) = 131,072 more a pair
    assert dim(1) == 1088
    # prefill of a fresh prompt: its keys are projected by the linear layers
    assert dim(np.inf) == 320
    # a 2048-token chunk against its cached prefix: 320 + 131072 / 2048 = 384
    assert dim(2048) == 384
    # the crossing: 320 + 131072 / q = 1088 at q = 170.67
    np.testing.assert_array_equal(dim(np.array([170, 171])), [1088, 320 + 131072 / 171])


def test_deepseek_v3_ttft_at_32k_non_absorbed() -> None:
    # 8 x H200, fp8 weights on fp8 tensor cores, prompt 32k: 0.732 s absorbed, 0.325 s not
    n, tp = 32768, 8
    pairs = physics.prefill_attention_pairs(n, DSV3["layers"], 0, np.inf)
    weights = physics.weight_bytes(671_026_419_200, 1.0)
    kv = physics.kv_bytes_per_sequence(576, 1.0, physics.kv_cached_layer_tokens(n, 61, 0, np.inf))

    def ttft(dim: float, embedding: float = 0.0, head: float = 0.0) -> float:
        flops = physics.prefill_flops(
            1, n, DSV3_ACTIVE, DSV3["heads"], dim, pairs, 1.0, embedding, head
        )
        return physics.roofline_time(
            flops / tp, physics.prefill_bytes(weights / tp, 1, kv), H200_FP8, H200_BW
        )

    absorbed = ttft(1088)
    expanded = ttft(physics.mla_attention_dim(512, 64, 128, 128, np.inf))
    assert absorbed == pytest.approx(0.7316, abs=1e-4)
    assert expanded == pytest.approx(0.3249, abs=1e-4)
    assert absorbed / expanded == pytest.approx(2.252, abs=1e-3)
    # with D2 as well (lookup free, logits for the last token only): 0.3172 s
    e, head = physics.embedding_params(DSV3_V, DSV3_H, False), physics.logit_params(DSV3_V, DSV3_H)
    assert ttft(320, e, head) == pytest.approx(0.3172, abs=1e-4)


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (physics.embedding_params, (128256, 4096, [True, False])),
        (physics.lookup_params, (128256, 4096, [True, False])),
        (physics.unread_lookup_params, (128256, 4096, False, [1, 10**6])),
        (physics.weights_read_with_gather, (16e9, 128256, 4096, False, 2, [1, 64])),
        (physics.fixed_weights_read, (16e9, [0, 128256], 4096, False, 2)),
        (physics.gather_bytes_per_sequence, ([0, 128256], 4096, False, 2)),
        (physics.mla_attention_dim, (512, 64, 128, 128, [1.0, np.inf])),
        (physics.decode_flops_per_sequence, (8e9, 4e9, 1.0, [0, 5e8])),
        (physics.prefill_flops, (1, 2048, 8e9, 32, 256, 2e6, 1.0, [0, 1e9], 5e8)),
    ],
)
def test_second_round_functions_on_scalars_numpy_and_xarray(
    function: Any, args: tuple[Any, ...]
) -> None:
    check_duck_typed(function, args)


@given(
    gemm=st.floats(0, 1e15),
    attention=st.floats(0, 1e15),
    nbytes=st.floats(1, 1e12),
    peak=st.floats(1e12, 1e16),
    attention_peak=st.floats(1e12, 1e16),
    bandwidth=st.floats(1e11, 1e13),
)
@settings(max_examples=30, deadline=None)
def test_split_roofline_time_against_a_step_by_step_run(
    gemm: float, attention: float, nbytes: float, peak: float, attention_peak: float,
    bandwidth: float,
) -> None:  # fmt: skip
    ratio = peak / attention_peak
    split = physics.split_roofline_time(gemm, attention, nbytes, peak, ratio, bandwidth)
    # a plain run: the GEMMs then attention in 100 slices each, every slice at its own peak,
    # the memory traffic streamed beside them; the step ends when both are done
    compute = 0.0
    for work, rate in ((gemm, peak), (attention, attention_peak)):
        for _ in range(100):
            compute += work / 100 / rate
    memory = nbytes / bandwidth
    assert split == pytest.approx(max(compute, memory), rel=1e-9)
    one_peak = physics.roofline_time(gemm + attention, nbytes, peak, bandwidth)
    if attention_peak <= peak:  # attention at a slower format: never below the one-peak bound
        assert split >= one_peak * (1 - 1e-12)
    flag = bool(physics.split_compute_bound(gemm, attention, nbytes, peak, ratio, bandwidth))
    if abs(compute - memory) > 1e-9 * max(compute, memory):  # away from a tie
        assert flag == (compute > memory)
