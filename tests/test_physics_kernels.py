"""``sweeps.physics.kernels``: each kernel's own roofline bound, by hand and against a plain loop
that counts what a windowed attention layer does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.physics.kernels import attention_time

H100 = {"peak": 989e12, "bandwidth": 3.35e12}


def _loop(batch: int, length: int, window: int, heads: int, head_dim: int, prefill: bool) -> float:
    """FLOPs of one layer's attention counted key by key: each query attends to the keys
    before it (and itself) within the window (``window = 0``: all of them)."""
    reach = window or length
    if not prefill:
        return 4.0 * batch * heads * head_dim * min(length, reach)
    pairs = sum(min(i, reach) for i in range(1, length + 1))
    return 4.0 * batch * heads * head_dim * pairs


def test_by_hand_decode_and_prefill_with_and_without_a_window() -> None:
    # decode, 8 sequences at 4096 cached tokens, 8 heads and 1 KV head of 128, bf16:
    # bytes 8 * 4096 * 2 * 1 * 128 * 2 = 16,777,216 over 3.35e12 B/s
    full = attention_time(8, 4096, 8, 1, 128, 2.0, **H100, prefill=False)
    assert full == pytest.approx(16_777_216 / 3.35e12, rel=1e-15)
    # a 1024-token window keeps a quarter of the cache
    windowed = attention_time(8, 4096, 8, 1, 128, 2.0, **H100, prefill=False, window=1024)
    assert windowed == pytest.approx(full / 4, rel=1e-15)
    # prefill of one 4096-token prompt, 32 heads of 128: 2 * 32 * 128 * 4096**2 FLOPs
    prompt = attention_time(1, 4096, 32, 8, 128, 2.0, **H100, prefill=True)
    assert prompt == pytest.approx(2 * 32 * 128 * 4096**2 / 989e12, rel=1e-15)
    # window 128: 128 * (4096 - 64) pairs, 4 * 32 * 128 FLOPs each
    narrow = attention_time(1, 4096, 32, 8, 128, 2.0, **H100, prefill=True, window=128)
    flops = 4 * 32 * 128 * 128 * (4096 - 64)
    assert narrow == pytest.approx(max(flops / 989e12, 128 * 2 * 8 * 128 * 2 / 3.35e12))


def test_no_window_is_the_full_attention_bit_for_bit() -> None:
    batch, length = np.array([1, 3, 64])[:, None], np.array([1, 100, 8192, 131072])[None, :]
    args = (batch, length, 64, 8, 64, 1.0, 989e12, 3.35e12)
    for prefill in (False, True):
        plain = attention_time(*args, prefill)
        assert (attention_time(*args, prefill, 0) == plain).all()
        flops = (2.0 * length if prefill else 4.0) * batch * 64 * 64 * length
        bytes_ = batch * length * 2.0 * 8 * 64 * 1.0
        assert (plain == np.maximum(flops / 989e12, bytes_ / 3.35e12)).all()


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 64),
    length=st.integers(1, 600),
    window=st.integers(0, 700),
    heads=st.sampled_from([1, 8, 64]),
    prefill=st.booleans(),
)
def test_no_count_of_the_work_beats_the_windowed_bound(
    batch: int, length: int, window: int, heads: int, prefill: bool
) -> None:
    """The bound's FLOPs never exceed those a layer does key by key, and its bytes never
    exceed the window's cache: the time of the work counted is at least the bound."""
    bound = attention_time(batch, length, heads, 1, 64, 2.0, 1.0, 1e30, prefill, window)
    assert bound <= _loop(batch, length, window, heads, 64, prefill) * (1 + 1e-12)
    kept = min(length, window or length)
    cache = attention_time(batch, length, heads, 1, 64, 2.0, 1e30, 1.0, prefill, window)
    assert cache == pytest.approx(batch * kept * 2 * 64 * 2.0, rel=1e-12)


@pytest.mark.parametrize("window", [0, 100, 4096])
def test_the_verify_attention_reads_each_cache_once_against_a_loop(window: int) -> None:
    """``verify_attention_time``: at k 0 the decode attention's bound; at k 4 the ``k + 1``
    queries' FLOPs counted key by key (query j at the cache S + j) and the union of their
    windows read once: by hand, and never more bytes than k + 1 single-query reads."""
    from sweeps.physics.kernels import verify_attention_time

    b, s, h, kv, d = 3, 1000, 8, 2, 128
    args = (h, kv, d, 2.0, H100["peak"], H100["bandwidth"])
    plain = attention_time(b, s, *args, prefill=False, window=window)
    assert verify_attention_time(b, s, 0, *args, window) == pytest.approx(plain, rel=1e-15)
    k = 4
    flops = sum(_loop(b, s + j, window, h, d, False) for j in range(k + 1))
    reach = (window + k) if window else s + k
    nbytes = b * min(s + k, reach) * 2.0 * kv * d * 2.0
    expected = max(flops / H100["peak"], nbytes / H100["bandwidth"])
    got = verify_attention_time(b, s, k, *args, window)
    assert got == pytest.approx(expected, rel=1e-12)
    per_row = attention_time(b * (k + 1), s + k, *args, prefill=False, window=window)
    assert got <= per_row
    # FLOPs-bound at 512 queries a sequence: 4 h d (k + 1) S over the peak
    many = verify_attention_time(b, s, 511, *args, window)
    assert many > verify_attention_time(b, s, 0, *args, window) * 2
