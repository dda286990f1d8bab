"""The LRU hit curve against a plain LRU replayed request by request: equal to the token, on
the shipped Mooncake slice and on generated traces, at every capacity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.traces import Trace, read_trace
from sweeps.traces.data import shipped
from sweeps.traces.reuse import compiled, hit_curve


def plain_lru(blocks: list[list[int]], prompts: list[int], size: int, capacity: int) -> int:
    """Hit tokens of a dict-ordered LRU: each request's longest cached prefix, then its blocks
    touched last first (the first block most recent), the least recent evicted."""
    cache: dict[int, None] = {}
    hits = 0
    for ids, prompt in zip(blocks, prompts, strict=True):
        held = set(cache)
        for j, block in enumerate(ids):
            if block not in held:
                break
            hits += max(0, min(size, prompt - j * size))
        for block in reversed(ids):
            cache.pop(block, None)
            cache[block] = None
            if len(cache) > capacity:
                del cache[next(iter(cache))]
    return hits


def lists(trace: Trace) -> list[list[int]]:
    assert trace.hashes is not None
    assert trace.offsets is not None
    return [
        trace.hashes[a:b].tolist()
        for a, b in zip(trace.offsets[:-1], trace.offsets[1:], strict=True)
    ]


def made(blocks: list[list[int]], prompts: list[int], size: int) -> Trace:
    counts = [len(b) for b in blocks]
    return Trace(
        arrival=np.arange(len(blocks), dtype=float),
        prompt=np.array(prompts, np.int64),
        output=np.ones(len(blocks), np.int64),
        hashes=np.array([h for b in blocks for h in b], np.int64),
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        block_tokens=size,
        format="mooncake",
    )


def test_the_mooncake_slice_equals_a_plain_lru_to_the_token() -> None:
    trace = read_trace(shipped("mooncake-conversation.jsonl"))
    curve = hit_curve(trace)
    blocks, prompts = lists(trace), trace.prompt.tolist()
    for capacity in (0, 1, 2, 15, 160, 1500, 9000, curve.working_set):
        plain = plain_lru(blocks, prompts, trace.block_tokens, capacity)
        assert int(curve.tokens_at(capacity)) == plain, capacity
    # more capacity never finds fewer tokens, and a cache of every block never evicts
    steps = curve.tokens_at(np.arange(0, curve.working_set + 2, 97))
    assert (np.diff(steps) >= 0).all()
    assert curve.unbounded_rate == pytest.approx(
        plain_lru(blocks, prompts, 512, 10**9) / trace.prompt.sum()
    )


@st.composite
def traces(draw: st.DrawFn) -> tuple[list[list[int]], list[int], int]:
    size = draw(st.integers(1, 5))
    ids = st.lists(st.integers(0, 12), min_size=0, max_size=7)
    blocks = draw(st.lists(ids, min_size=1, max_size=30))
    # prompts of any length: partial last blocks, and blocks beyond the prompt (0 tokens)
    prompts = [draw(st.integers(1, size * (len(b) + 1))) for b in blocks]
    return blocks, prompts, size


@settings(max_examples=150, deadline=None)
@given(traces(), st.integers(0, 20))
def test_generated_traces_equal_a_plain_lru_to_the_token(case, capacity) -> None:  # type: ignore[no-untyped-def]
    blocks, prompts, size = case
    curve = hit_curve(made(blocks, prompts, size))
    assert int(curve.tokens_at(capacity)) == plain_lru(blocks, prompts, size, capacity)


@pytest.mark.skipif(compiled() is None, reason="numba is not installed: nothing to compare")
def test_compiled_and_interpreted_replays_agree() -> None:
    trace = read_trace(shipped("mooncake-conversation.jsonl"))
    fast, plain = hit_curve(trace, use_numba=True), hit_curve(trace, use_numba=False)
    np.testing.assert_array_equal(fast.thresholds, plain.thresholds)
    np.testing.assert_array_equal(fast.hit_tokens, plain.hit_tokens)


@settings(max_examples=40, deadline=None)
@given(traces())
def test_large_or_negative_hashes_give_the_curve_of_their_ranks(case) -> None:  # type: ignore[no-untyped-def]
    blocks, prompts, size = case
    small = hit_curve(made(blocks, prompts, size))
    large = hit_curve(made([[h * 10**12 - 7 for h in b] for b in blocks], prompts, size))
    np.testing.assert_array_equal(small.thresholds, large.thresholds)
    np.testing.assert_array_equal(small.hit_tokens, large.hit_tokens)
    assert small.working_set == large.working_set == len({h for b in blocks for h in b})
