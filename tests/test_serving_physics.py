"""Serving physics: closed forms against plain step-by-step loops and small simulations.

Static batches are summed step by step from the per-step physics; continuous batching, chunked
prefill and the M/D/1 queue are simulated here in plain Python (seeded, CPU-only, small), and the
Pareto front is checked against an O(n**2) reference.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps import physics
from tests.test_physics import check_duck_typed

H100_FLOPS, H100_BW = 989.4e12, 3.35e12


@dataclass(frozen=True)
class Model:
    """The shapes the per-step physics needs (plain attention, optional windowed layers)."""

    params: float
    active: float
    experts: int
    top_k: int
    layers: int
    local: int
    window: float
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    hidden: int
    tied: bool


LLAMA3_8B = Model(
    8_030_261_248, 8_030_261_248, 1, 1, 32, 0, np.inf, 32, 8, 128, 128_256, 4096, False
)
# Gemma-2 9B: half of 42 layers local, window 4096, tied embeddings
GEMMA2_9B = Model(9_241_705_984, 9_241_705_984, 1, 1, 42, 21, 4096, 16, 8, 256, 256_000, 3584, True)
# gpt-oss-20b: MoE 32 experts top-4, half of 24 layers local with window 128
GPT_OSS_20B = Model(
    20_914_757_184, 4_187_440_704, 32, 4, 24, 12, 128, 64, 8, 64, 201_088, 2880, False
)

WB = KB = 2.0  # bf16 weights and cache


def weights_read(m: Model, tokens: Any) -> Any:
    read = physics.params_read(m.params, m.active, m.experts, m.top_k, tokens) * WB
    return physics.weights_read_with_gather(read, m.vocab, m.hidden, m.tied, WB, tokens)


def decode_step(m: Model, batch: Any, context: Any, peak: float, bw: float) -> Any:
    """One decode step from the per-step physics (cost model section 3, corrected)."""
    tokens = physics.kv_cached_layer_tokens(context, m.layers, m.local, m.window)
    lookup = physics.lookup_params(m.vocab, m.hidden, m.tied)
    attention = physics.attention_flops_per_token(m.heads, 2 * m.head_dim, tokens)
    f_seq = physics.decode_flops_per_sequence(m.active, attention, 1.0, lookup)
    kv = physics.kv_bytes_per_sequence(2 * m.kv_heads * m.head_dim, KB, tokens)
    nbytes = physics.decode_bytes(weights_read(m, batch), batch, kv)
    return physics.roofline_time(physics.decode_flops(batch, f_seq), nbytes, peak, bw)


def prefill_time(m: Model, prompt: Any, peak: float, bw: float) -> Any:
    """``t_p(1, I)`` from the per-step physics (cost model section 4, corrected)."""
    pairs = physics.prefill_attention_pairs(prompt, m.layers, m.local, m.window)
    e = physics.embedding_params(m.vocab, m.hidden, m.tied)
    head = physics.logit_params(m.vocab, m.hidden)
    flops = physics.prefill_flops(1, prompt, m.active, m.heads, 2 * m.head_dim, pairs, 1.0, e, head)
    tokens = physics.kv_cached_layer_tokens(prompt, m.layers, m.local, m.window)
    kv = physics.kv_bytes_per_sequence(2 * m.kv_heads * m.head_dim, KB, tokens)
    return physics.roofline_time(
        flops, physics.prefill_bytes(weights_read(m, prompt), 1, kv), peak, bw
    )


def coefficients(m: Model, batch: Any) -> tuple[tuple[Any, Any, Any], tuple[Any, Any, Any]]:
    lookup = physics.lookup_params(m.vocab, m.hidden, m.tied)
    flops = physics.context_coefficients(
        batch, 0.0, 2 * (m.active - lookup), 2 * m.heads * 2 * m.head_dim, m.layers, m.local
    )
    per_token = 2 * m.kv_heads * m.head_dim * KB
    nbytes = physics.context_coefficients(
        batch, weights_read(m, batch), 0.0, per_token, m.layers, m.local
    )
    return flops, nbytes


# --- section 1: a static batch ----------------------------------------------------------


def test_affine_step_time_is_the_per_step_bound() -> None:
    batch = np.array([1, 16, 256, 4096])
    for m in (LLAMA3_8B, GEMMA2_9B, GPT_OSS_20B):
        flops, nbytes = coefficients(m, batch)
        for s in (100, 4096, 9000):
            local = np.minimum(s, m.window)
            expected = decode_step(m, batch, s, H100_FLOPS, H100_BW)
            got = physics.affine_step_time(s, local, flops, nbytes, H100_FLOPS, H100_BW)
            np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize(
    ("model", "batch", "prompt", "outputs", "peak", "bw"),
    [
        # a bandwidth-rich device (ridge 6.25): compute-bound early, memory-bound late, across 4096
        (GEMMA2_9B, [1, 4, 8, 16, 64], 2000, [1, 2, 3, 2097, 2098, 6000], 50e12, 8e12),
        # an H100, window 128 and the kink inside 17 .. 4015 at large batch
        (GPT_OSS_20B, [1, 256, 4096, 16384], 16, [1, 2, 100, 113, 114, 4000], H100_FLOPS, H100_BW),
    ],
)
def test_static_decode_time_equals_the_step_loop(
    model: Model, batch: list[int], prompt: int, outputs: list[int], peak: float, bw: float
) -> None:
    b = np.asarray(batch)[:, None]
    o = np.asarray(outputs)[None, :]
    flops, nbytes = coefficients(model, b)
    closed = physics.static_decode_time(prompt, o, flops, nbytes, model.window, peak, bw)
    loop = np.zeros(np.broadcast(b, o).shape)
    compute_bound = []
    for s in range(prompt + 1, prompt + max(outputs)):
        step = decode_step(model, b, s, peak, bw)
        loop += np.where(s <= prompt + o - 1, step, 0.0)
        tokens = physics.kv_cached_layer_tokens(s, model.layers, model.local, model.window)
        f_seq = physics.decode_flops_per_sequence(
            model.active,
            physics.attention_flops_per_token(model.heads, 2 * model.head_dim, tokens),
            1.0,
            physics.lookup_params(model.vocab, model.hidden, model.tied),
        )
        compute_bound.append(step[:, 0] == b[:, 0] * f_seq / peak)
    np.testing.assert_allclose(closed, loop, rtol=1e-9, atol=0)
    assert np.all(closed[:, 0] == 0)  # O = 1: no decode step
    # the grid really crosses the kink: some batch is compute-bound first, memory-bound last
    bound = np.array(compute_bound)
    assert np.any(bound[0] & ~bound[-1])
    assert max(outputs) + prompt > model.window


@settings(max_examples=30, deadline=None)
@given(
    coefs=st.lists(st.floats(0, 1e3), min_size=6, max_size=6),
    prompt=st.integers(0, 200),
    output=st.integers(1, 300),
    window=st.one_of(st.integers(1, 400), st.just(math.inf)),
)
def test_static_decode_time_random_coefficients(
    coefs: list[float], prompt: int, output: int, window: float
) -> None:
    f0, f_full, f_loc, q0, q_full, q_loc = coefs
    f_full, f_loc, q_full, q_loc = f_full / 50, f_loc / 50, q_full / 50, q_loc / 50
    closed = physics.static_decode_time(
        prompt, output, (f0, f_full, f_loc), (q0, q_full, q_loc), window, 1.0, 1.0
    )
    loop = 0.0
    for s in range(prompt + 1, prompt + output):
        local = min(s, window)
        loop += max(f0 + f_full * s + f_loc * local, q0 + q_full * s + q_loc * local)
    assert closed == pytest.approx(loop, rel=1e-9, abs=1e-12)


def test_latency_and_tpot() -> None:
    assert physics.request_latency(0.030, 2.5) == pytest.approx(2.53)
    assert physics.time_per_output_token(2.55, 256) == pytest.approx(0.01)
    tpot = physics.time_per_output_token(np.array([1.0, 0.0]), np.array([3, 1]))
    assert tpot[0] == 0.5
    assert math.isnan(tpot[1])  # O = 1: no decode step, no TPOT


# --- section 2: colocated continuous batching -------------------------------------------


def test_mean_contexts_against_a_loop() -> None:
    assert physics.mean_context(2048, 256) == 2176
    for prompt, output, window in [
        (2048, 256, 4096),
        (100, 300, 128),
        (10, 2, 128),
        (5000, 9, 128),
    ]:
        values = [min(prompt + j, window) for j in range(1, output)]
        assert physics.mean_local_context(prompt, output, window) == pytest.approx(np.mean(values))
        full = [prompt + j for j in range(1, output)]
        assert physics.mean_context(prompt, output) == pytest.approx(np.mean(full))
    assert physics.mean_local_context(2048, 256, np.inf) == 2176
    assert math.isnan(physics.mean_local_context(2048, 1, 128))
    layer_tokens = physics.mean_cached_layer_tokens(100, 300, 24, 12, 128)
    assert layer_tokens == pytest.approx(
        12 * 250 + 12 * np.mean([min(100 + j, 128) for j in range(1, 300)])
    )


def test_colocated_check_values_llama3_8b_h100() -> None:
    # serving.md: Llama-3 8B, H100 SXM, bf16, attention on, tp 1, B = 64, I = 2048, O = 256
    s_mean = physics.mean_context(2048, 256)
    assert s_mean == 2176
    # t_d(64, 2176) by hand: bytes 2P - V h wb + 64 h wb + 64 * 131072 * 2176, memory-bound
    step_bytes = 16_060_522_496 - 1_050_673_152 + 64 * 8192 + 64 * 131_072 * 2176
    assert step_bytes == 33_263_984_640
    step_flops = 64 * (2 * (8_030_261_248 - 525_336_576) + 4 * 32 * 32 * 128 * 2176)
    assert step_flops / H100_FLOPS < step_bytes / H100_BW
    t_steady = step_bytes / H100_BW
    assert t_steady == pytest.approx(9.92955e-3, rel=1e-6)
    assert decode_step(LLAMA3_8B, 64, 2176, H100_FLOPS, H100_BW) == pytest.approx(
        t_steady, rel=1e-12
    )
    # t_p(1, 2048): 2.9689e13 FLOP, compute-bound
    t_p = 29_688_955_142_144 / H100_FLOPS
    assert t_p == pytest.approx(30.00703e-3, rel=1e-6)
    assert prefill_time(LLAMA3_8B, 2048, H100_FLOPS, H100_BW) == pytest.approx(t_p, rel=1e-12)
    # r = 1 / (255 t / 64 + t_p), tpot = t + 63 t_p / 255 (B <= O - 1: the B - 1 other
    # slots' prefills, one at a time), share = r t_p
    r = physics.colocated_request_rate(64, 256, t_steady, t_p)
    assert r == pytest.approx(1 / (255 * t_steady / 64 + t_p), rel=1e-12)
    assert r == pytest.approx(14.3740, abs=1e-4)
    tpot = physics.serial_prefill_tpot(64, 256, t_steady, t_p)
    assert tpot == pytest.approx(t_steady + 63 * t_p / 255, rel=1e-12)
    assert tpot == pytest.approx(17.343e-3, abs=1e-6)
    assert physics.prefill_time_share(r, t_p) == pytest.approx(0.43132, abs=1e-5)
    assert physics.output_tokens_per_s_per_device(r, 256, 1) == pytest.approx(3679.74, abs=0.01)
    assert physics.tokens_per_s_per_user(tpot) == pytest.approx(57.660, abs=1e-3)
    # the static batch at the same point: memory-bound throughout, so 255 t_d(2176) exactly
    flops, nbytes = coefficients(LLAMA3_8B, 64)
    static = physics.static_decode_time(2048, 256, flops, nbytes, np.inf, H100_FLOPS, H100_BW)
    assert static == pytest.approx(255 * t_steady, rel=1e-12)


def test_colocated_single_token_requests() -> None:
    # O = 1: every request is a prefill; no TPOT
    assert physics.colocated_request_rate(64, 1, np.nan, 0.03) == pytest.approx(1 / 0.03)
    assert math.isnan(physics.serial_prefill_tpot(64, 1, 0.01, 0.03))


def simulate_colocated(
    m: Model, batch: int, prompt: int, output: int, peak: float, bw: float
) -> tuple[float, float]:
    """Output tokens/s of ``batch`` slots refilled as they finish, each prefill stalling all.

    Slots start at seeded random progress and run three whole cycles (each slot finishes three
    requests). Returns the throughput and the share of decode steps that were compute-bound.
    """
    steps = output - 1
    progress = np.random.default_rng(3).integers(1, output, batch)
    t_p = prefill_time(m, prompt, peak, bw)
    lookup = physics.lookup_params(m.vocab, m.hidden, m.tied)
    clock, done, compute_bound = 0.0, 0, 0
    for _ in range(3 * steps):
        context = prompt + progress
        tokens = physics.kv_cached_layer_tokens(context, m.layers, m.local, m.window)
        attention = physics.attention_flops_per_token(m.heads, 2 * m.head_dim, tokens)
        flops = np.sum(physics.decode_flops_per_sequence(m.active, attention, 1.0, lookup))
        kv = physics.kv_bytes_per_sequence(2 * m.kv_heads * m.head_dim, KB, tokens)
        nbytes = weights_read(m, batch) + np.sum(kv)
        compute_bound += flops / peak > nbytes / bw
        clock += float(physics.roofline_time(flops, nbytes, peak, bw))
        progress = progress + 1
        finished = progress > steps
        clock += int(np.sum(finished)) * t_p  # each new prompt prefilled alone
        done += int(np.sum(finished))
        progress = np.where(finished, 1, progress)
    return done * output / clock, compute_bound / (3 * steps)


@pytest.mark.parametrize(
    ("model", "batch", "prompt", "output", "peak", "bw", "compute_share"),
    [
        (LLAMA3_8B, 64, 2048, 256, H100_FLOPS, H100_BW, (0.0, 0.0)),
        # crosses the window and, step to step, the compute/memory kink
        (GEMMA2_9B, 8, 3000, 3000, 50e12, 8.7e12, (0.1, 0.9)),
        (LLAMA3_8B, 256, 128, 1000, H100_FLOPS, 10 * H100_BW, (1.0, 1.0)),
        (GPT_OSS_20B, 256, 64, 400, H100_FLOPS, H100_BW, (0.0, 0.0)),
    ],
)
def test_colocated_throughput_matches_a_slot_simulation(
    model: Model,
    batch: int,
    prompt: int,
    output: int,
    peak: float,
    bw: float,
    compute_share: tuple[float, float],
) -> None:
    tokens_mean = physics.mean_context(prompt, output)
    local_mean = physics.mean_local_context(prompt, output, model.window)
    flops, nbytes = coefficients(model, batch)
    t_steady = physics.affine_step_time(tokens_mean, local_mean, flops, nbytes, peak, bw)
    t_p = prefill_time(model, prompt, peak, bw)
    r = physics.colocated_request_rate(batch, output, t_steady, t_p)
    closed = physics.output_tokens_per_s_per_device(r, output, 1)
    simulated, share = simulate_colocated(model, batch, prompt, output, peak, bw)
    assert closed == pytest.approx(simulated, rel=0.01)
    assert compute_share[0] <= share <= compute_share[1]


# --- section 3: the named schedulers' algebra (their loops: tests/test_schedulers.py) ----------


def test_slot_groups_and_their_sums() -> None:
    # 64 slots over 255 steps: 64 groups of 1 (and 191 empty); 300 over 255: 45 of 2, 210 of 1
    assert physics.slot_groups(64, 255) == (0, 64)
    assert physics.slot_groups(300, 255) == (1, 45)
    total, own = physics.grouped(300, 255, 2.0, 1.0)
    assert total == 45 * 2 + 210 * 1
    assert own == pytest.approx((45 * 2 * 2 + 210 * 1 * 1) / 300)
    assert physics.slot_groups(8, 0) == (8, 0)  # O = 1: one group of every slot


def test_serial_prefill_stalls_by_hand() -> None:
    # B <= O - 1: B - 1 stalls; B = 300 over 255 groups: 300 - 1/2 - (45*4 + 210) / 600 = 298.85
    assert physics.serial_prefill_tpot(64, 256, 0.01, 0.03) == pytest.approx(0.01 + 63 * 0.03 / 255)
    assert physics.serial_prefill_tpot(1, 256, 0.01, 0.03) == pytest.approx(0.01)  # alone
    stalls = 300 - 0.5 - (45 * 4 + 210 * 1) / 600
    assert physics.serial_prefill_tpot(300, 256, 0.01, 0.03) == pytest.approx(
        0.01 + stalls * 0.03 / 255
    )


def test_batched_prefill_by_hand() -> None:
    # groups of 2 and 1 (45 and 210) over O - 1 = 255 steps, t_p(2) = 0.05, t_p(1) = 0.03
    prefills, own = physics.grouped(300, 255, 0.05, 0.03)
    assert prefills == pytest.approx(45 * 0.05 + 210 * 0.03)
    rate = physics.batched_prefill_rate(300, 256, 0.01, prefills)
    assert rate == pytest.approx(300 / (255 * 0.01 + prefills))
    tpot = physics.batched_prefill_tpot(256, 0.01, prefills, own)
    assert tpot == pytest.approx(0.01 + (prefills - own) / 255)
    assert math.isnan(physics.batched_prefill_tpot(1, 0.01, prefills, own))


def test_chunked_balance_and_the_budget() -> None:
    # B = 32, I = 2048, O = 257: c = 32 * 2048 / 256 = 256 prompt tokens a step, all 32 decode
    assert physics.balanced_decoders(32, 2048, 257, 2048) == 32
    assert physics.paced_chunk(32, 2048, 257, 2048) == 256
    assert not physics.budget_limited(32, 2048, 257, 2048)
    # a budget of 160: balanced at n_d = 160 * 256 / 2304 = 17.78 decoders, c = 160 - n_d
    decoders = physics.balanced_decoders(32, 2048, 257, 160)
    assert decoders == pytest.approx(160 * 256 / 2304)
    assert physics.paced_chunk(decoders, 2048, 257, 160) == pytest.approx(160 - decoders)
    assert physics.budget_limited(32, 2048, 257, 160)
    # O = 1: no decodes, the whole budget to the prompts
    assert physics.balanced_decoders(32, 2048, 1, 2048) == 0
    assert physics.paced_chunk(0, 2048, 1, 2048) == 2048
    # the prompts stream through: a prompt spans 1 + (I - 1) / c steps; r = c / (I t_mix)
    assert physics.chunked_ttft(2048, 300.0, 0.02) == pytest.approx((1 + 2047 / 300) * 0.02)
    assert physics.chunked_ttft(2048, 0.0, 0.02) == np.inf
    assert physics.chunked_request_rate(2048, 256, 0.02) == pytest.approx(32 / (256 * 0.02))


def test_greedy_regimes_by_hand() -> None:
    # 64 slots, I = 2048, tau = 2048: a prompt beside 63 decodes takes ceil(2048 / 1985) = 2
    # steps; 64 * 2 <= 255 + 2: one prompt at a time, paced by the slots
    assert physics.greedy_prefill_steps(64, 2048, 2048) == 2
    assert physics.greedy_slot_bound(64, 256, 2)
    assert not physics.greedy_slot_bound(256, 64, 2)
    rate, tpot, ttft = physics.greedy_cycle(64, 256, 3.8, 0.04)
    assert (rate, ttft) == (64 / 3.8, 0.04)
    assert tpot == pytest.approx(3.76 / 255)


def test_the_bound_by_hand() -> None:
    # n_steps = max(255 / 64, 2303 / 2048); dense: both chords are n_steps W
    steps = physics.steps_per_request(64, 2048, 256, 2048)
    assert steps == pytest.approx(255 / 64)
    assert physics.steps_per_request(64, 2048, 256, np.inf) == pytest.approx(255 / 64)
    assert physics.steps_per_request(512, 2048, 256, 2048) == pytest.approx(2303 / 2048)
    w = 1.6e10
    dense = physics.weights_per_request(64, 2048, 256, 2048, w, w, 2048, w, w, 2048)
    assert dense == pytest.approx(steps * w)
    # MoE, W(T) concave: W(0) = 4, W(64) = 10, W(64 + 2048) = 30, W(2048) = 29
    moe = physics.weights_per_request(64, 2048, 256, 2048, 10.0, 30.0, 2048, 4.0, 29.0, 2048)
    first = 255 / 64 * 10 + 2048 * 20 / 2048
    second = steps * 4 + 2303 * 25 / 2048
    assert moe == pytest.approx(max(first, second))
    assert physics.bound_request_time(2e13, 5e10, 1e10, 1e15, 3e12) == pytest.approx(0.02)


# --- sections 4 and 5: pools and cost -------------------------------------------------------


def lindley_waits(rate: float, service: float, count: int, seed: int) -> np.ndarray:
    """Waiting times of an M/D/1 queue, one customer after the other (Lindley's recursion)."""
    gaps = np.random.default_rng(seed).exponential(1 / rate, count)
    waits = np.zeros(count)
    for n in range(1, count):
        waits[n] = max(0.0, waits[n - 1] + service - gaps[n])
    return waits


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_wait_against_a_poisson_simulation(rho: float) -> None:
    service = 0.03
    waits = lindley_waits(rho / service, service, 40_000, seed=12)[2_000:]
    means = waits.reshape(38, -1).mean(axis=1)  # batch means: nearly independent
    half_width = 3.5 * means.std(ddof=1) / math.sqrt(means.size)  # 99.95 %
    assert abs(waits.mean() - physics.md1_waiting_time(rho, service)) < half_width
    # rho D / (2 (1 - rho)): 0.5 -> D / 2
    assert physics.md1_waiting_time(0.5, service) == pytest.approx(service / 2)
    assert physics.md1_waiting_time(1.0, service) == np.inf


def test_handoff_slack_and_utilization_bound() -> None:
    # Llama-3 8B prompt of 2048 tokens over 50 GB/s: 2048 * 131072 / 50e9 = 5.37 ms
    assert physics.kv_handoff_time(2048, 131_072, 50e9) == pytest.approx(5.3687e-3, rel=1e-4)
    x = physics.ttft_slack(0.5, 0.03, 0.005)
    assert x == pytest.approx(0.465)
    rho = physics.max_utilization(x, 0.03)
    assert rho == pytest.approx(0.93 / 0.96)
    assert physics.md1_waiting_time(rho, 0.03) == pytest.approx(x)
    assert math.isnan(physics.max_utilization(physics.ttft_slack(0.03, 0.03, 0.005), 0.03))
    assert math.isnan(physics.prefill_replicas(10.0, 0.03, np.nan))


@settings(max_examples=30, deadline=None)
@given(
    rate=st.floats(0.1, 500),
    service=st.floats(1e-3, 2.0),
    handoff=st.floats(0, 0.1),
    slo=st.floats(0.01, 10),
)
def test_prefill_replicas_are_the_fewest_that_meet_the_ttft(
    rate: float, service: float, handoff: float, slo: float
) -> None:
    rho_max = physics.max_utilization(physics.ttft_slack(slo, service, handoff), service)
    n = physics.prefill_replicas(rate, service, rho_max)
    if slo - service - handoff <= 0:
        assert math.isnan(n)
        return

    def ttft(replicas: float) -> float:
        return physics.md1_waiting_time(rate * service / replicas, service) + service + handoff

    assert n >= 1
    assert ttft(n) <= slo * (1 + 1e-9)
    assert n == 1 or ttft(n - 1) > slo * (1 - 1e-9)


@given(
    rate=st.floats(0.1, 1e4),
    batch=st.integers(1, 1024),
    output=st.integers(2, 4096),
    step=st.floats(1e-4, 0.1),
)
def test_decode_replicas_are_the_fewest_that_carry_the_rate(
    rate: float, batch: int, output: int, step: float
) -> None:
    mu = physics.decode_request_rate(batch, output, step)
    assert mu == pytest.approx(batch / ((output - 1) * step))
    n = physics.replicas_for_rate(rate, mu)
    assert n * mu >= rate * (1 - 1e-12)
    assert (n - 1) * mu < rate


def test_devices_goodput_and_queued_colocated_ttft() -> None:
    assert physics.decode_request_rate(64, 1, 0.01) == np.inf  # nothing to decode
    assert physics.replicas_for_rate(10.0, np.inf) == 0
    devices = physics.pool_devices(3, 2, 5, 4)
    assert devices == 26
    assert physics.goodput_per_device(10.0, 256, devices) == pytest.approx(2560 / 26)
    # colocated: 4 replicas at 10 req/s, t_p 30 ms: rho = 0.075, W_q = 0.075 * 0.03 / 1.85
    ttft = physics.colocated_queued_ttft(0.03, 0.01, 10.0, 4)
    assert ttft == pytest.approx(0.03 + 0.01 + 0.075 * 0.03 / (2 * 0.925))


def test_costs_and_unknown_prices() -> None:
    # saturated: $2.50 an hour at 3679.74 tokens/s -> 1e6 * 2.5 / (3600 * 3679.74) = $0.1887
    assert physics.cost_per_million_tokens(2.5, 3679.74) == pytest.approx(0.18872, abs=1e-5)
    # at a load: 3 prefill (tp 2, $3) and 5 decode (tp 4, $2) devices for 10 req/s of 256 tokens
    fleet = physics.fleet_price_per_hour(3, 2, 3.0) + physics.fleet_price_per_hour(5, 4, 2.0)
    assert fleet == 58.0
    assert physics.cost_per_million_tokens(fleet, 10.0 * 256) == pytest.approx(
        1e6 * 58 / (3600 * 2560)
    )
    # unknown prices: NaN, never zero
    assert math.isnan(physics.cost_per_million_tokens(np.nan, 1000.0))
    assert math.isnan(physics.cost_per_million_tokens(None, 1000.0))
    assert math.isnan(physics.fleet_price_per_hour(3, 2, None))
    prices = np.array([2.5, None], dtype=object)
    cost = physics.cost_per_million_tokens(prices, 1000.0)
    assert cost.dtype == float
    assert cost[0] == pytest.approx(1e6 * 2.5 / 3.6e6)
    assert math.isnan(cost[1])
    da = physics.cost_per_million_tokens(xr.DataArray(prices, dims="hardware"), 1000.0)
    assert da.dims == ("hardware",)
    assert math.isnan(float(da[1]))


# --- section 6: the Pareto front ---------------------------------------------------------


def dominated_reference(x: np.ndarray, y: np.ndarray, group: np.ndarray) -> np.ndarray:
    """O(n**2): a point is off the front if another of its group is >= in both and > in one."""
    off = np.zeros(x.size, dtype=bool)
    for i in range(x.size):
        for j in range(x.size):
            if group[i] != group[j] or np.isnan(x[j]) or np.isnan(y[j]):
                continue
            if x[j] >= x[i] and y[j] >= y[i] and (x[j] > x[i] or y[j] > y[i]):
                off[i] = True
    return ~off & ~np.isnan(x) & ~np.isnan(y)


def test_pareto_front_small_example() -> None:
    x = np.array([1.0, 2.0, 3.0, 2.0, 2.0, 3.0, 0.5, np.nan, 5.0])
    y = np.array([5.0, 4.0, 1.0, 4.0, 3.0, 1.0, 9.0, 100.0, 0.0])
    g = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1])
    front = physics.pareto_front(x, y, g)
    # (2, 4) twice: both kept (identical points do not dominate each other); (2, 3) is
    # dominated by (2, 4); (3, 1) twice kept; the NaN point is off and dominates nothing;
    # group 1's only point is its front
    np.testing.assert_array_equal(front, [True, True, True, True, False, True, True, False, True])
    assert physics.pareto_front(np.array([]), np.array([]), np.array([], dtype=int)).size == 0
    # a DataArray's values and a scalar group (one group) work too
    da = physics.pareto_front(xr.DataArray(x[:7]), xr.DataArray(y[:7]), 0)
    np.testing.assert_array_equal(da, front[:7])


values = st.sampled_from([0.0, 1.0, 2.0, 2.5, 3.0, 7.0, np.nan])


@settings(max_examples=30, deadline=None)
@given(points=st.lists(st.tuples(values, values, st.integers(0, 2)), max_size=40))
def test_pareto_front_against_the_pairwise_reference(
    points: list[tuple[float, float, int]],
) -> None:
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    g = np.array([p[2] for p in points], dtype=int)
    front = physics.pareto_front(x, y, g)
    np.testing.assert_array_equal(front, dominated_reference(x, y, g))
    # no front point is dominated by another point of its group
    for i in np.flatnonzero(front):
        same = (g == g[i]) & ~np.isnan(x) & ~np.isnan(y)
        better = same & (x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i]))
        assert not better.any()


def test_pareto_front_continuous_values() -> None:
    rng = np.random.default_rng(6)
    x, y = rng.random(300), rng.random(300)
    g = rng.integers(0, 4, 300)
    np.testing.assert_array_equal(physics.pareto_front(x, y, g), dominated_reference(x, y, g))


def test_edges_give_nulls_without_warnings() -> None:
    # where() evaluates both branches: the unused one must not divide by zero either
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(physics.max_utilization(-0.015, 0.03))  # 2x + D = 0
        assert physics.md1_waiting_time(np.array([1.0, 2.0]), 0.03).tolist() == [np.inf, np.inf]
        assert math.isnan(physics.time_per_output_token(0.0, 1))
        assert math.isnan(physics.mean_local_context(100, 1, np.inf))
        assert physics.chunked_ttft(100, 0.0, 0.01) == np.inf
        assert physics.balanced_chunk(8, 100, 1) == np.inf
        assert physics.decode_request_rate(8, 1, 0.01) == np.inf
        # a near-flat line: its root overflows; steps 6 and 7 at 2 s each
        flat = ((2.0, 0.0, 0.0), (1.0, 1e-310, 0.0))
        assert physics.static_decode_time(5, 3, *flat, np.inf, 1.0, 1.0) == pytest.approx(4.0)


# --- duck typing --------------------------------------------------------------------------


def context_coefficients_sum(*args: Any) -> Any:
    """The three coefficients of ``context_coefficients`` at ``S = 1000``, local ``min(S, 128)``."""
    fixed, full, local = physics.context_coefficients(*args)
    return fixed + full * 1000 + local * 128


def affine_step_time_at(context: Any) -> Any:
    flops, nbytes = coefficients(GPT_OSS_20B, 4096)
    local = np.minimum(context, 128)
    return physics.affine_step_time(context, local, flops, nbytes, H100_FLOPS, H100_BW)


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (physics.time_per_output_token, (2.55, [1, 256])),
        (physics.mean_local_context, (100, 300, [128, np.inf])),
        (physics.mean_local_context, (100, [1, 300], 128)),
        (physics.mean_cached_layer_tokens, (100, [2, 300], 24, 12, 128)),
        (physics.colocated_request_rate, (64, [1, 256], 0.01, 0.03)),
        (physics.serial_prefill_tpot, (64, [1, 256], 0.01, 0.03)),
        (physics.balanced_decoders, (32, 2048, [1, 257], 160)),
        (physics.paced_chunk, ([0.0, 17.0], 2048, 257, 160)),
        (physics.batched_prefill_rate, (64, [1, 256], 0.01, 0.5)),
        (physics.batched_prefill_tpot, ([1, 256], 0.01, 0.5, 0.03)),
        (physics.greedy_prefill_steps, ([64, 256], 2048, 2048)),
        (physics.greedy_slot_bound, ([64, 256], 256, 2)),
        (physics.steps_per_request, ([64, 512], 2048, 256, 2048)),
        (physics.bound_request_time, ([2e13, 2e15], 5e10, 1e10, 1e15, 3e12)),
        (physics.budget_limited, (32, 2048, 257, [160, 4096])),
        (physics.chunked_ttft, (2048, [0.0, 300.0], 0.02)),
        (physics.md1_waiting_time, ([0.5, 1.0], 0.03)),
        (physics.max_utilization, ([-0.1, 0.4], 0.03)),
        (physics.prefill_replicas, (10.0, 0.03, [np.nan, 0.9])),
        (physics.decode_request_rate, (64, [1, 256], 0.01)),
        (physics.cost_per_million_tokens, ([np.nan, 2.5], 1000.0)),
        (physics.request_latency, (0.03, [0.0, 2.5])),
        (physics.mean_context, (2048, [1, 256])),
        (physics.output_tokens_per_s_per_device, (14.37, 256, [1, 8])),
        (physics.tokens_per_s_per_user, ([0.01, 0.02],)),
        (physics.prefill_time_share, ([1.0, 14.37], 0.03)),
        (physics.balanced_chunk, (32, 2048, [1, 257])),
        (physics.chunked_request_rate, (2048, [0.0, 256.0], 0.02)),
        (physics.kv_handoff_time, ([512, 2048], 131_072, 50e9)),
        (physics.ttft_slack, (0.5, [0.03, 0.6], 0.005)),
        (physics.replicas_for_rate, ([0.5, 100.0], 14.37)),
        (physics.pool_devices, ([1, 3], 2, 5, 4)),
        (physics.goodput_per_device, (10.0, 256, [1, 26])),
        (physics.colocated_queued_ttft, (0.03, 0.01, [1.0, 10.0], 4)),
        (physics.fleet_price_per_hour, ([1, 3], 8, 2.5)),
        (physics.logit_params, ([0, 128_256], 4096)),
        (physics.mla_absorbed_attention_dim, ([512, 256], 64)),
        (physics.mla_expanded_attention_dim, ([128, 64], 64, 128)),
        (context_coefficients_sum, (16, 0.0, 2e9, 4096, 24, [0, 12])),
        (affine_step_time_at, ([100, 5000],)),
    ],
)
def test_serving_functions_on_scalars_numpy_and_xarray(
    function: Any, args: tuple[Any, ...]
) -> None:
    check_duck_typed(function, args)


def test_static_decode_time_on_scalars_numpy_and_xarray() -> None:
    flops, nbytes = coefficients(GPT_OSS_20B, 4096)
    outputs = [1, 2, 113, 4000]

    def call(output: Any) -> Any:
        return physics.static_decode_time(16, output, flops, nbytes, 128, H100_FLOPS, H100_BW)

    scalars = [call(o) for o in outputs]
    da = call(xr.DataArray(outputs, dims="output_tokens"))
    assert da.dims == ("output_tokens",)
    np.testing.assert_array_equal(call(np.asarray(outputs)), scalars)
    np.testing.assert_array_equal(da.values, scalars)
    # coefficients on a batch axis (as the grid has them), outputs on another: a 2-D result
    batch = xr.DataArray([1, 256, 4096], dims="batch")
    grid_flops, grid_bytes = coefficients(GPT_OSS_20B, batch)
    out = xr.DataArray(outputs, dims="output_tokens")
    both = physics.static_decode_time(16, out, grid_flops, grid_bytes, 128, H100_FLOPS, H100_BW)
    assert set(both.dims) == {"batch", "output_tokens"}
    np.testing.assert_array_equal(both.isel(batch=2).transpose("output_tokens").values, scalars)
