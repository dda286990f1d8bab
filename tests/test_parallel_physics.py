"""sweeps.physics.parallel: per-rank terms of a tp x ep x pp replica, against hand values, plain
loops over tokens, experts and ranks, and today's tensor-parallel terms at one rank."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps import physics

DEEPSEEK_V3 = {"params": 671026419200, "active": 37552297472, "experts": 256, "k": 8}
"""The catalog's DeepSeek-V3 (params counted from its config's shapes)."""


def test_routed_params_of_deepseek_v3_are_its_config_shapes() -> None:
    # 58 MoE layers (61 less the first 3 dense) x 256 experts x gate, up, down of 7168 x 2048
    by_hand = 58 * 256 * 3 * 7168 * 2048
    got = physics.routed_params(
        DEEPSEEK_V3["params"], DEEPSEEK_V3["active"], DEEPSEEK_V3["experts"], DEEPSEEK_V3["k"]
    )
    assert got == by_hand == 653_908_770_816


def test_a_dense_model_has_no_routed_params() -> None:
    assert physics.routed_params(8e9, 8e9, 1, 1) == 0.0
    assert physics.routed_params_read(8e9, 8e9, 1, 1, 64) == 0.0


@settings(max_examples=30, deadline=None)
@given(
    total=st.floats(1e6, 1e13),
    share=st.floats(0, 1),
    tp=st.sampled_from([1, 2, 3, 4, 8, 16]),
)
def test_at_one_rank_the_share_is_tensor_parallel_bit_for_bit(
    total: float, share: float, tp: int
) -> None:
    routed = total * share
    assert physics.rank_share(total, routed, tp, 1, 0) == total / tp
    assert physics.rank_share(total, routed, tp, 1, 1) == total / tp
    assert physics.dense_shards(tp, 1, 0) == tp
    assert physics.attention_replicas(1, 0) == 1
    assert physics.all_to_all_bytes(64, 8, 7168, 2, 58, tp, 1) == 0


@pytest.mark.parametrize(("dp", "dense", "replicas"), [(1, 8 * 1, 8), (0, 8 * 8, 1)])
def test_dp_attention_keeps_the_dense_part_whole_per_rank(
    dp: int, dense: int, replicas: int
) -> None:
    tp, ep = 8, 8
    assert physics.dense_shards(tp, ep, dp) == dense
    assert physics.attention_replicas(ep, dp) == replicas
    # 100 units of which 60 routed: the routed 1/(tp ep), the rest 1/d
    assert physics.rank_share(100.0, 60.0, tp, ep, dp) == pytest.approx(40 / dense + 60 / 64)


def _loop_all_to_all(
    batch: int, experts: int, k: int, hidden: int, act: float, layers: int, tp: int, ep: int
) -> float:
    """The busiest device's all-to-all bytes of a step, counted token by token: the batch's
    tokens dealt to the ranks, each token sending its hidden state to each expert with the
    routing probability k / E and taking it back, the experts dealt E / ep to a rank."""
    owner = [e // (experts // ep) for e in range(experts)]
    sent = [0.0] * ep
    for token in range(batch):
        rank = token % ep
        for expert in range(experts):
            if owner[expert] != rank:
                sent[rank] += 2 * hidden * act * k / experts
    return max(sent) * layers / tp


@settings(max_examples=30, deadline=None)
@given(
    ep=st.sampled_from([1, 2, 4, 8]),
    per_rank=st.integers(1, 6),
    experts_per_rank=st.integers(1, 4),
    k=st.integers(1, 4),
    tp=st.sampled_from([1, 2, 4]),
    layers=st.integers(1, 5),
)
def test_the_all_to_all_bytes_are_a_loop_over_tokens_experts_and_ranks(
    ep: int, per_rank: int, experts_per_rank: int, k: int, tp: int, layers: int
) -> None:
    experts = ep * experts_per_rank
    k = min(k, experts)
    batch = ep * per_rank
    closed = physics.all_to_all_bytes(batch, k, 64, 2.0, layers, tp, ep)
    loop = _loop_all_to_all(batch, experts, k, 64, 2.0, layers, tp, ep)
    assert closed == pytest.approx(loop, rel=1e-12, abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(
    ep=st.sampled_from([1, 2, 3]),
    per_rank=st.integers(1, 2),
    k=st.integers(1, 3),
    tokens=st.integers(1, 3),
)
def test_experts_touched_per_rank_is_a_count_over_every_routing(
    ep: int, per_rank: int, k: int, tokens: int
) -> None:
    # every token routes to k distinct experts, each k-subset alike: the mean over every
    # routing of the batch of the distinct experts among rank 0's own
    experts = ep * per_rank
    k = min(k, experts)
    own = set(range(experts // ep))
    subsets = list(itertools.combinations(range(experts), k))
    counts = [
        len(own & set().union(*routing)) for routing in itertools.product(subsets, repeat=tokens)
    ]
    exact = sum(counts) / len(counts)
    got = physics.experts_touched_per_rank(experts, k, tokens, ep)
    assert got == pytest.approx(exact, rel=1e-12, abs=1e-12)


def test_the_pipeline_latency_crosses_every_stage_and_the_hand_offs() -> None:
    stage, handoff = 0.010, 0.001
    assert physics.pipeline_latency(4 * stage, handoff, 4) == pytest.approx(4 * stage + 3 * handoff)
    assert physics.pipeline_prefill_time(stage, handoff, 1) == stage
    assert physics.handoff_bytes(8, 4096, 2, 1, 1, 2) == 4 * 4096 * 2


def test_an_unknown_link_bounds_nothing() -> None:
    unknown = physics.link_time(np.array([0.0, 1e6]), np.nan)
    assert unknown[0] == 0.0
    assert np.isnan(unknown[1])
    assert list(physics.known(unknown)) == [0.0, 0.0]
    assert physics.step_bound(0.02, physics.known(unknown[1])) == 0.02
