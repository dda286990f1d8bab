"""Speculation, prefix caching and energy physics: hand values, plain loops, invariants.

The verify step's FLOPs and bytes are rebuilt here token by token from the per-step decode
physics (``decode_flops_per_sequence`` at context ``S + j`` for each row, the union of the
rows' cache positions counted as a set); the break-even batch by a plain scan; the prefix
physics against the plain prefill.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps import physics
from tests.test_physics import check_duck_typed

H100_BF16, H100_FP8, H100_BW = 989.4e12, 1978.9e12, 3.35e12
LLAMA3_8B = 8_030_261_248


# --- expected tokens ------------------------------------------------------------------------


def test_expected_tokens_check_value() -> None:
    # beyond-the-step section 1: k = 4, alpha = 0.8
    assert physics.expected_tokens(4, 0.8) == pytest.approx(3.3616, abs=1e-12)
    assert physics.expected_tokens(4, 0.8) == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096)


def test_expected_tokens_edges() -> None:
    assert physics.expected_tokens(5, 0.0) == 1.0  # alpha = 0: one token a step
    assert physics.expected_tokens(0, 0.7) == 1.0  # k = 0: plain decode
    assert physics.expected_tokens(3, 1.0) == 4.0  # every draft accepted


def test_expected_tokens_duck_typed() -> None:
    check_duck_typed(physics.expected_tokens, (4, [0.0, 0.5, 0.8, 1.0]))
    check_duck_typed(physics.expected_tokens, ([0, 1, 4, 8], 0.6))


@settings(max_examples=30, deadline=None)
@given(k=st.integers(0, 16), alpha=st.floats(0, 1))
def test_expected_tokens_is_the_mean_of_a_plain_loop(k: int, alpha: float) -> None:
    # E = sum over j of P(first j drafts accepted), j = 0..k
    loop = sum(alpha**j for j in range(k + 1))
    e = physics.expected_tokens(k, alpha)
    assert e == pytest.approx(loop, rel=1e-9)
    assert 1 <= e <= k + 1 + 1e-12


# --- the verify step against a plain loop over its rows -------------------------------------


def _loop_attended(s: int, k: int, layers: int, local: int, window: float) -> float:
    rows = [physics.kv_cached_layer_tokens(s + j, layers, local, window) for j in range(k + 1)]
    return float(sum(rows))


def _loop_union(s: int, k: int, layers: int, local: int, window: float) -> int:
    """Cache positions the rows touch, counted as a set per layer kind."""
    full: set[int] = set()
    windowed: set[int] = set()
    for j in range(k + 1):
        last = s + j  # positions 1..S+j are cached when row j runs
        full.update(range(1, last + 1))
        seen = last if math.isinf(window) else min(last, int(window))
        windowed.update(range(last - seen + 1, last + 1))
    return (layers - local) * len(full) + local * len(windowed)


@settings(max_examples=30, deadline=None)
@given(
    s=st.integers(1, 300),
    k=st.integers(0, 8),
    layers=st.integers(1, 6),
    local=st.integers(0, 6),
    window=st.one_of(st.integers(1, 320).map(float), st.just(math.inf)),
)
def test_verify_layer_tokens_equal_a_loop(
    s: int, k: int, layers: int, local: int, window: float
) -> None:
    local = min(local, layers)
    attended = physics.verify_attended_layer_tokens(s, k, layers, local, window)
    assert attended == pytest.approx(_loop_attended(s, k, layers, local, window), rel=1e-12)
    cached = physics.verify_cached_layer_tokens(s, k, layers, local, window)
    assert cached == _loop_union(s, k, layers, local, window)


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 512),
    s=st.integers(1, 8192),
    k=st.integers(0, 8),
    attention_on=st.sampled_from([0.0, 1.0]),
)
def test_verify_flops_and_bytes_equal_a_loop_of_decode_rows(
    batch: int, s: int, k: int, attention_on: float
) -> None:
    # Llama-3 8B shapes; row j is a decode token at context S + j
    layers, heads, dim, kv_tok = 32, 32, 256, 131072 / 32
    lookup = physics.lookup_params(128256, 4096, False)
    flops_loop = 0.0
    for j in range(k + 1):
        lt = physics.kv_cached_layer_tokens(s + j, layers, 0, math.inf)
        attention = physics.attention_flops_per_token(heads, dim, lt)
        f_seq = physics.decode_flops_per_sequence(LLAMA3_8B, attention, attention_on, lookup)
        flops_loop += physics.decode_flops(batch, f_seq)
    linear = physics.decode_flops_per_sequence(LLAMA3_8B, 0.0, 0.0, lookup)
    attended = physics.verify_attended_layer_tokens(s, k, layers, 0, math.inf)
    attention = attention_on * physics.attention_flops_per_token(heads, dim, attended)
    flops = physics.decode_flops(batch, physics.verify_flops_per_sequence(k, linear, attention))
    assert flops == pytest.approx(flops_loop, rel=1e-12)
    # bytes: the weights once for B (k + 1) tokens, each cache once (the union of the rows)
    weights = physics.weights_read_with_gather(
        LLAMA3_8B * 2.0, 128256, 4096, False, 2.0, batch * (k + 1)
    )
    union = _loop_union(s, k, layers, 0, math.inf)
    nbytes = physics.verify_bytes(
        weights, batch, kv_tok * physics.verify_cached_layer_tokens(s, k, layers, 0, math.inf)
    )
    assert nbytes == pytest.approx(weights + batch * kv_tok * union, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(batch=st.integers(1, 1024), s=st.integers(1, 1 << 17), window=st.integers(1, 1 << 16))
def test_k0_is_plain_decode_exactly(batch: int, s: int, window: int) -> None:
    layers, local = 48, 40
    lt = physics.kv_cached_layer_tokens(s, layers, local, float(window))
    assert physics.verify_attended_layer_tokens(s, 0, layers, local, float(window)) == lt
    assert physics.verify_cached_layer_tokens(s, 0, layers, local, float(window)) == lt
    attention = physics.attention_flops_per_token(32, 256, lt)
    plain = physics.decode_flops_per_sequence(7e9, attention, 1.0, 5e8)
    linear = physics.decode_flops_per_sequence(7e9, 0.0, 0.0, 5e8)
    assert physics.verify_flops_per_sequence(0, linear, 1.0 * attention) == plain
    assert physics.expected_tokens(0, 0.3) == 1.0
    assert physics.speculative_speedup(0.02, 0.02, 0.0, 1.0) == 1.0


def test_speedup_at_batch_one_with_ngram_approaches_e() -> None:
    # beyond-the-step section 1: Llama-3 8B bf16 on an H100, S = 2048, k = 4, alpha = 0.8
    s, k, layers = 2048, 4, 32
    e = physics.expected_tokens(k, 0.8)
    lookup = physics.lookup_params(128256, 4096, False)
    weights = physics.weights_read_with_gather(LLAMA3_8B * 2.0, 128256, 4096, False, 2.0, 1)
    kv = 131072 * s
    f_seq = physics.decode_flops_per_sequence(
        LLAMA3_8B, physics.attention_flops_per_token(32, 256, layers * s), 1.0, lookup
    )
    t_d = physics.roofline_time(f_seq, weights + kv, H100_BF16, H100_BW)
    linear = physics.decode_flops_per_sequence(LLAMA3_8B, 0.0, 0.0, lookup)
    attended = physics.verify_attended_layer_tokens(s, k, layers, 0, math.inf)
    attention = physics.attention_flops_per_token(32, 256, attended)
    flops = physics.verify_flops_per_sequence(k, linear, attention)
    w5 = physics.weights_read_with_gather(LLAMA3_8B * 2.0, 128256, 4096, False, 2.0, 5)
    nbytes = physics.verify_bytes(w5, 1, 131072 * (s + k))
    t_v = physics.roofline_time(flops, nbytes, H100_BF16, H100_BW)
    assert flops / nbytes < H100_BF16 / H100_BW  # still memory-bound
    speedup = physics.speculative_speedup(t_d, t_v, 0.0, e)
    assert speedup == pytest.approx(e * t_d / t_v)
    assert e * 0.999 < speedup < e  # a few more cache rows and gathers, nothing else
    assert physics.speculative_time_per_token(t_v, 0.0, e) == pytest.approx(t_d / speedup)


def test_useful_share() -> None:
    assert physics.useful_share(3.3616, 4) == pytest.approx(0.67232)


# --- break-even batch -----------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.2, 3.0), min_size=1, max_size=12), st.integers(0, 3))
def test_break_even_batch_is_the_first_at_or_below_one(values: list[float], rows: int) -> None:
    batches = np.arange(1, len(values) + 1) * 4.0
    speedup = np.tile(values, (rows + 1, 1))
    got = physics.first_batch_at_most(speedup, batches, axis=1)
    expected = next((b for b, v in zip(batches, values, strict=True) if v <= 1), math.nan)
    np.testing.assert_array_equal(got, np.full(rows + 1, expected))


def test_break_even_batch_skips_nan() -> None:
    got = physics.first_batch_at_most(np.array([[np.nan, 1.5, 0.9]]), np.array([1, 2, 4]), 1)
    assert got.tolist() == [4.0]


# --- MTP --------------------------------------------------------------------------------------


def test_mtp_head_is_the_mean_layer() -> None:
    # DeepSeek-V3: 671B main model, 61 layers, 129280 x 7168 untied embeddings
    e = physics.embedding_params(129280, 7168, False)
    layer = physics.mtp_layer_params(671e9, e, 61)
    assert layer == pytest.approx((671e9 - 2 * 129280 * 7168) / 61)
    assert 10e9 < layer < 12e9  # the card's 14B MTP module holds its own embedding and head
    assert physics.mtp_pass_flops(2, 1e9, 1e8, 10.0) == 2 * (2 * 1.1e9 + 10.0)
    assert physics.mtp_pass_bytes(5.0, 3.0, 4, 2.0) == 16.0


# --- prefix caching ---------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(prompt=st.integers(1, 1 << 17), window=st.integers(1, 1 << 16), local=st.integers(0, 40))
def test_hit_rate_zero_is_plain_prefill(prompt: int, window: int, local: int) -> None:
    pairs = physics.prefill_attention_pairs(prompt, 40, local, float(window))
    assert physics.hit_attention_pairs(prompt, 0.0, 40, local, float(window)) == pairs
    assert physics.tokens_recomputed(prompt, 0.0) == prompt


def test_hit_rate_one_attends_to_nothing() -> None:
    assert physics.hit_attention_pairs(4096, 1.0, 80, 0, math.inf) == 0
    assert physics.tokens_recomputed(4096, 1.0) == 0


@settings(max_examples=30, deadline=None)
@given(prompt=st.integers(2, 400), h=st.integers(0, 100).map(lambda x: x / 100))
def test_hit_pairs_equal_a_loop_over_the_new_tokens(prompt: int, h: float) -> None:
    # positions p = c+1..N attend to p positions (continuous form: the integral of p dp)
    cached = h * prompt
    loop = (prompt**2 - cached**2) / 2
    assert physics.hit_attention_pairs(prompt, h, 1, 0, math.inf) == pytest.approx(loop)


def test_break_even_bandwidth_check_value() -> None:
    # Llama-3 70B, fp8 KV: 163,840 bytes a token; H100 at fp8, compute-bound, h -> 1
    kv_tok = 2 * 8 * 128 * 1 * 80
    assert kv_tok == 163_840
    prompt, params = 4096, 70.55e9
    recompute = physics.roofline_time(2 * params * prompt, params, H100_FP8, H100_BW)
    bw = physics.break_even_bandwidth(kv_tok * prompt, recompute)
    assert bw == pytest.approx(kv_tok * H100_FP8 / (2 * params))
    assert bw == pytest.approx(2.3e9, rel=0.01)


@settings(max_examples=30, deadline=None)
@given(nbytes=st.floats(1e3, 1e12), recompute=st.floats(1e-6, 10.0))
def test_break_even_makes_reload_and_recompute_equal(nbytes: float, recompute: float) -> None:
    bw = physics.break_even_bandwidth(nbytes, recompute)
    assert abs(physics.reload_time(nbytes, bw) - recompute) <= 1e-9 * recompute


def test_break_even_is_null_without_a_reload() -> None:
    assert math.isnan(physics.break_even_bandwidth(0.0, 1.0))
    assert physics.reload_time(1e9, math.inf) == 0.0
    assert physics.hit_time(0.5, 0.25) == 0.5


def test_prefixes_held() -> None:
    assert physics.prefixes_held(10e9, 3e9) == 3
    assert math.isnan(physics.prefixes_held(math.nan, 3e9))
    assert math.isnan(physics.prefixes_held(10e9, 0.0))
    check_duck_typed(physics.prefixes_held, ([1e9, 10e9, math.nan], 3e8))


# --- energy -------------------------------------------------------------------------------------


def test_energy_per_token() -> None:
    # 700 W, 8 devices, a 20 ms step for 64 tokens
    energy = physics.energy_per_token(700.0, 8, 0.02, 64)
    assert energy == pytest.approx(700 * 8 * 0.02 / 64)
    assert physics.tokens_per_joule(energy) == pytest.approx(64 / (700 * 8 * 0.02))
    assert math.isnan(physics.energy_per_token(math.nan, 1, 0.02, 64))


# --- verify steps of a request: the renewal count -----------------------------------------


def _tokens_distribution(k: int, alpha: float) -> dict[int, float]:
    """P(X = j) of the tokens one verification yields, by the definition."""
    out = {j: alpha ** (j - 1) * (1 - alpha) for j in range(1, k + 1)}
    out[k + 1] = alpha**k
    return out


@pytest.mark.parametrize(("k", "alpha"), [(0, 0.5), (1, 0.3), (3, 0.8), (4, 1.0), (6, 0.0)])
def test_expected_square_tokens_is_the_distributions_second_moment(k: int, alpha: float) -> None:
    p = _tokens_distribution(k, alpha)
    assert sum(p.values()) == pytest.approx(1.0, abs=1e-12)
    assert physics.expected_tokens(k, alpha) == pytest.approx(sum(j * q for j, q in p.items()))
    assert physics.expected_square_tokens(k, alpha) == pytest.approx(
        sum(j * j * q for j, q in p.items()), rel=1e-12
    )


def _steps_by_recursion(n: int, k: int, alpha: float) -> float:
    """E[N(n)]: the expected verify steps to produce ``n`` tokens, each step's tokens cut to
    what is left, by the plain recursion ``N(m) = 1 + sum_j P(X = j) N(m - j)``."""
    p = _tokens_distribution(k, alpha)
    steps = [0.0] * (n + 1)
    for m in range(1, n + 1):
        steps[m] = 1 + sum(q * steps[max(m - j, 0)] for j, q in p.items())
    return steps[n]


@pytest.mark.parametrize(("k", "alpha"), [(1, 0.5), (3, 0.8), (4, 0.6), (7, 0.9)])
@pytest.mark.parametrize("n", [64, 128, 511])
def test_verify_steps_is_the_renewal_count(n: int, k: int, alpha: float) -> None:
    # the lattice renewal theorem's overshoot: exact to geometric terms in n
    assert physics.verify_steps(n, k, alpha) == pytest.approx(
        _steps_by_recursion(n, k, alpha), rel=2e-3 if alpha == 0.9 else 1e-6
    )


def test_verify_steps_without_speculation_is_the_tokens() -> None:
    np.testing.assert_array_equal(physics.verify_steps(np.array([0, 1, 255]), 0, 0.7), [0, 1, 255])
    assert physics.verify_steps(128, 5, 0.0) == 128
    # alpha = 1: k + 1 tokens a step, the last cut: ceil(n / (k + 1)) at every n
    expected = [math.ceil(n / 4) for n in range(100, 140)]
    np.testing.assert_array_equal(physics.verify_steps(np.arange(100, 140), 3, 1.0), expected)


def test_random_stalls_hand_value() -> None:
    # B = 32 slots, n = 43.775 verify steps: 31 (1 - 1/(2n)) serial, 31 (1 - 1/n) batched
    assert physics.random_stalls(32, 43.775, 0.5) == pytest.approx(31 * (1 - 0.5 / 43.775))
    assert physics.random_stalls(32, 43.775, 0.0) == pytest.approx(31 * (1 - 1 / 43.775))
    assert physics.random_stalls(1, 10.0, 0.5) == 0
