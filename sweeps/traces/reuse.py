"""Prefix reuse of a trace with block hashes: the exact LRU hit rate at every cache capacity,
from one replay.

The cache (docs/workloads.md): a request, in arrival order, finds the longest prefix of its
blocks held in the cache (its hit), then touches all its blocks, the last first and its first
block last, so that a prefix is always at least as recent as what extends it (the order in
which vLLM frees a sequence's blocks); a cache of ``C`` blocks holds the ``C`` most recently
touched distinct blocks (LRU). A block is held before request ``r`` exactly when fewer than
``C`` other distinct blocks were touched since its own last touch: its stack distance ``D``.
The prefix up to block ``j`` is a hit exactly when ``M_j = max(D_0..D_j) < C``. One replay
gives every ``M_j`` (a Fenwick tree over the touches, ``O(L log L)`` for ``L`` touches); the
hit tokens at any capacity are then a sorted lookup, so the whole curve costs one replay.

The replay is plain Python that numba compiles where it is installed (the ``fast`` extra);
without numba the same function runs interpreted (the same numbers, slower).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from sweeps.physics.prefix_lru import cache_blocks, lru_hit_rate
from sweeps.traces.trace import Trace

COLD = np.iinfo(np.int64).max
"""``M`` of a prefix holding a block never seen before: a miss at every capacity [block]."""


def replay(blocks: np.ndarray, offsets: np.ndarray, never: int, ids: int) -> np.ndarray:
    """``M_j`` of every hashed block, in ``blocks``' order (``never`` where the prefix holds a
    block not seen before, ``COLD``), then the count of distinct blocks: ``blocks`` ids in
    ``0..ids-1``, request ``i``'s at ``offsets[i]:offsets[i + 1]``, its first block first."""
    size = blocks.size
    tree = np.zeros(size + 1, np.int32)  # Fenwick tree over touch positions, 1-based
    last = np.full(ids, -1, np.int64)  # each block's last touch position, or -1
    out = np.empty(size + 1, np.int64)
    distinct = 0  # touches marked: one a distinct block seen
    for r in range(offsets.size - 1):
        start, end = offsets[r], offsets[r + 1]
        worst = 0
        for j in range(start, end):  # the lookups, against the cache before this request
            p = last[blocks[j]]
            if p < 0 or worst == never:  # never seen: this prefix and every longer one miss
                worst = never
            else:
                seen, i = 0, p + 1
                while i > 0:
                    seen += tree[i]
                    i -= i & -i
                worst = max(worst, distinct - seen)
            out[j] = worst
        for k in range(end - 1, start - 1, -1):  # the touches: last block first
            block, position = blocks[k], start + (end - 1 - k)
            p = last[block]
            if p >= 0:
                i = p + 1
                while i <= size:
                    tree[i] -= 1
                    i += i & -i
            else:
                distinct += 1
            i = position + 1
            while i <= size:
                tree[i] += 1
                i += i & -i
            last[block] = position
    out[size] = distinct
    return out


@cache
def compiled() -> Callable[..., Any] | None:
    """``replay`` compiled by numba (cached on disk), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(nogil=True, cache=True)(replay)


@dataclass(frozen=True)
class HitCurve:
    """Hit tokens as a function of cache capacity: a step function, exact.

    thresholds : Each hashed block's ``M_j`` sorted (``COLD``: never a hit) [block]
    hit_tokens : ``hit_tokens[k]``: tokens of the ``k`` blocks of least ``M``, ``k + 1``
        values from 0 [token]
    prompt_tokens : Every prompt's tokens, hashed or not, the denominator [token]
    block_tokens : Tokens a block holds [token]
    working_set : Distinct blocks in the trace: a cache this large never evicts [block]
    """

    thresholds: np.ndarray
    hit_tokens: np.ndarray
    prompt_tokens: int
    block_tokens: int
    working_set: int

    def tokens_at(self, capacity: Any) -> np.ndarray:
        """Prompt tokens found in a cache of ``capacity`` blocks (array-like) [token]."""
        held = np.searchsorted(self.thresholds, np.asarray(capacity), side="left")
        return self.hit_tokens[held]

    def rate_at(self, capacity: Any) -> np.ndarray:
        """Share of prompt tokens found in a cache of ``capacity`` blocks [1]."""
        rate = lru_hit_rate(capacity, self.thresholds, self.hit_tokens, self.prompt_tokens)
        return np.asarray(rate)

    def rate_for_memory(self, free_bytes: Any, kv_bytes_per_token: Any) -> np.ndarray:
        """Hit rate of a cache of the memory ``free_bytes`` [byte] at ``kv_bytes_per_token``
        [byte/token] (each device's own, at its KV format and tp) [1]."""
        blocks = cache_blocks(free_bytes, kv_bytes_per_token, self.block_tokens)
        return self.rate_at(blocks)

    @property
    def unbounded_rate(self) -> float:
        """Hit rate of a cache that never evicts [1]."""
        return float(self.rate_at(self.working_set))


def prefix_maxima(trace: Trace, use_numba: bool | None = None) -> np.ndarray:
    """``M_j`` of every hashed block of ``trace``, in its ``hashes``' order [block]."""
    return replayed(trace, use_numba)[:-1]


def _ids(hashes: np.ndarray) -> tuple[np.ndarray, int]:
    """The hashes as indices of an array of ``ids`` entries: themselves where they are small
    whole numbers (Mooncake's are remapped from 0), else their ranks."""
    small = hashes.size == 0 or (hashes.min() >= 0 and hashes.max() < 4 * hashes.size + 1024)
    if small:
        return hashes.astype(np.int64), int(hashes.max()) + 1 if hashes.size else 1
    import polars as pl  # its dense rank: multithreaded, three times numpy's unique here

    dense = pl.Series(hashes).rank("dense").to_numpy().astype(np.int64) - 1
    return dense, int(dense.max()) + 1


def replayed(trace: Trace, use_numba: bool | None = None) -> np.ndarray:
    """``replay``'s output: every ``M_j``, then the count of distinct blocks [block]."""
    if trace.hashes is None or trace.offsets is None:
        msg = f"{trace.source}: the trace has no prefix-block hashes (the mooncake format has)"
        from sweeps.errors import TraceError

        raise TraceError(msg)
    blocks, ids = _ids(trace.hashes)
    run = compiled() if use_numba is not False else None
    if run is None and use_numba:
        from sweeps.errors import MissingExtraError

        msg = "use_numba=True: the LRU replay's compiled loop needs numba (the fast extra)"
        raise MissingExtraError(msg)
    return (run or replay)(blocks, trace.offsets.astype(np.int64), COLD, ids)


def hit_curve(
    trace: Trace, use_numba: bool | None = None, replay_out: np.ndarray | None = None
) -> HitCurve:
    """The exact LRU hit curve of ``trace`` (module docstring): one replay (none where its
    ``replayed`` output is given)."""
    out = replayed(trace, use_numba) if replay_out is None else replay_out
    maxima, distinct = out[:-1], int(out[-1])
    order = np.argsort(maxima)  # ties found or missed together: their order is free
    tokens = trace.block_tokens_of()[order]
    return HitCurve(
        thresholds=maxima[order],
        hit_tokens=np.concatenate([[0], np.cumsum(tokens)]).astype(np.int64),
        prompt_tokens=int(trace.prompt.sum()),
        block_tokens=trace.block_tokens,
        working_set=distinct,
    )
