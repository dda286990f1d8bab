"""The blocks a memory holds and the LRU hit rate there, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sweeps.physics.prefix_lru import cache_blocks, lru_hit_rate


def test_blocks_held_by_hand() -> None:
    # Llama-3 70B, bf16 cache: 2 x 80 layers x 8 heads x 128 x 2 bytes = 327,680 B/token
    per_token = 2 * 80 * 8 * 128 * 2
    assert cache_blocks(10e9, per_token, 512) == 59  # 10e9 / 167,772,160 = 59.6
    assert cache_blocks(10e9, per_token / 2, 512) == 119  # fp8: twice the blocks
    np.testing.assert_array_equal(cache_blocks(np.array([-5e9, 0.0]), per_token, 512), [0, 0])


def test_hit_rate_is_a_step_at_the_thresholds() -> None:
    thresholds = np.array([0, 2, 2, 5, np.iinfo(np.int64).max])
    hit_tokens = np.array([0, 10, 30, 40, 60, 70])
    rates = lru_hit_rate(np.array([0, 1, 2, 3, 5, 6, 10**9]), thresholds, hit_tokens, 100.0)
    np.testing.assert_allclose(rates, [0.0, 0.1, 0.1, 0.4, 0.4, 0.6, 0.6])
    assert lru_hit_rate(4, thresholds, hit_tokens, 100.0) == pytest.approx(0.4)
