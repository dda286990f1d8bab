"""Prefix reuse under LRU at a cache's capacity: the blocks a memory holds, and the hit rate a
trace's exact LRU curve gives there (docs/workloads.md).

A trace's curve (``sweeps.traces.reuse.HitCurve``) is a step function of the capacity in
blocks; the capacity a device gives is the memory the weights leave over the KV bytes of one
block. Both are pure lookups on arrays.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def cache_blocks(free_bytes: Array, kv_bytes_per_token: Array, block_tokens: Array) -> Array:
    """Whole prefix blocks a memory holds, ``floor(free / (kv b))``, 0 where none fits.

    Parameters
    ----------
    free_bytes : Memory left to caches per device (negative: the weights do not fit) [byte]
    kv_bytes_per_token : KV-cache bytes of one token per device [byte/token]
    block_tokens : Tokens a block holds, ``b`` [token]

    Returns
    -------
    Blocks held [block]
    """
    return np.floor(np.maximum(free_bytes, 0) / (kv_bytes_per_token * block_tokens))


def lru_hit_rate(
    blocks: Array, thresholds: np.ndarray, hit_tokens: np.ndarray, prompt_tokens: float
) -> Array:
    """Share of prompt tokens an LRU cache of ``blocks`` blocks finds, from a trace's curve.

    A prefix block is found at capacity ``C`` exactly when its threshold ``M < C``
    (``sweeps.traces.reuse``), so the tokens found are ``hit_tokens[#{M < C}]``.

    Parameters
    ----------
    blocks : Cache capacity, any shape [block]
    thresholds : The curve's sorted thresholds ``M`` [block]
    hit_tokens : Tokens found with the first ``k`` thresholds met, ``k = 0..len`` [token]
    prompt_tokens : Every prompt token of the trace [token]

    Returns
    -------
    Hit rate, the shape of ``blocks`` [1]
    """
    held = np.searchsorted(thresholds, np.asarray(blocks), side="left")
    rate = hit_tokens[held] / prompt_tokens
    return where(np.asarray(blocks) >= 0, rate, 0.0)
