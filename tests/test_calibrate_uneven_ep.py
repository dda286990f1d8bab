"""Calibration of expert parallelism that does not divide the routed experts (issue 44 item 5).

DeepSeek-V3's 256 routed experts decode on 72 H100s and on 48 GB200s as published, with
redundant experts placed by a load balancer: such a row got no bound. It is now bounded at its
busiest rank's share, every rank holding ``ceil(E / ep)`` experts
(``sweeps.calibrate.bounds.redundant_experts``); an adversary routes tokens over real
placements of the 256 experts and finds no rank that does less than the bound assumes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sweeps import physics
from sweeps.calibrate import COLUMNS, calibrate
from sweeps.calibrate.bounds import _sweep, redundant_experts
from sweeps.catalog import load_catalog
from sweeps.grid import build_grid

HEADER = ",".join([*COLUMNS, "gpus", "parallel", "load", "concurrency"])
ROW = "deepseek-v3,{hardware},1,fp8,bf16,auto,{batch},2000,100,{metric},{value},device,test,{gpus},ep+dp,,"


def _write(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "uneven.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", "utf-8")
    return path


def _key(ranks: int, hardware: str = "h100-sxm") -> tuple[str, ...]:
    layout = f"ep = [{ranks}]\ndp_attention = [true]\n"
    return ("deepseek-v3", hardware, "1", "fp8", "bf16", "auto", "auto", layout)


@pytest.mark.parametrize(("ranks", "per_rank"), [(72, 4), (48, 6), (64, 4), (256, 1)])
def test_the_experts_are_padded_to_the_busiest_ranks_share(ranks: int, per_rank: int) -> None:
    model = load_catalog().lookup_model("deepseek-v3")
    padded = redundant_experts(model, ranks)
    assert padded.experts == ranks * per_rank == ranks * math.ceil(model.experts / ranks)
    assert padded.experts_per_token == model.experts_per_token
    assert padded.active_params == model.active_params
    # P - P_act is E - k experts; the padding adds whole experts of the same size
    expert = (model.params - model.active_params) / (model.experts - model.experts_per_token)
    added = (padded.params - model.params) / expert
    assert added == pytest.approx(padded.experts - model.experts, rel=1e-12)
    if model.experts % ranks == 0:
        assert padded is model


def test_each_rank_holds_the_busiest_ranks_weights() -> None:
    """ep 72 and ep 64 both hold 4 experts a rank: the same weights per device and the same
    room for sequences a rank; ep 48 holds 6, two experts more a device than ep 72."""
    grids = {
        r: build_grid(_sweep(_key(r), [1], [2050], [2000]), skip=("pools",)) for r in (72, 64, 48)
    }
    weights = {r: float(ds["weight_bytes"].squeeze()) for r, ds in grids.items()}
    walls = {r: int(ds["max_batch"].squeeze()) for r, ds in grids.items()}
    assert weights[72] == pytest.approx(weights[64], rel=1e-12)
    assert abs(walls[72] / 72 - walls[64] / 64) < 1  # whole sequences a rank
    model = load_catalog().lookup_model("deepseek-v3")
    expert = (model.params - model.active_params) / (model.experts - model.experts_per_token)
    assert weights[48] - weights[72] == pytest.approx(2 * expert * 1.0, rel=1e-6)  # fp8: 1 B


def test_the_published_layouts_get_a_bound(tmp_path: Path) -> None:
    """72 H100s and 48 GB200s: a throughput at max and a given batch, an ITL; each bounded,
    none beating it at a modest value, the reason empty."""
    rows = [
        ROW.format(hardware=h, batch=b, metric=m, value=v, gpus=g)
        for h, g in (("h100-sxm", 72), ("gb200", 48))
        for b, m, v in (("max", "output_tokens_per_s", 100.0), (4096, "output_tokens_per_s", 100.0),
                        (4096, "itl_s", 1.0))
    ]  # fmt: skip
    frame = calibrate(_write(tmp_path, *rows))
    assert frame["status"].to_list() == ["ok"] * 6
    assert frame["bound"].is_null().sum() == 0
    assert all(not r for r in frame["reason"].to_list())
    h100 = frame.filter(pl.col("hardware") == "h100-sxm")
    # the throughput at max is bounded at the wall: more than at 4096 sequences
    at_max, at_4096 = h100["bound"].to_list()[:2]
    assert h100["batch"].to_list()[0] > 4096
    assert at_max > at_4096


def test_the_bound_is_close_to_the_even_layout_of_the_same_share(tmp_path: Path) -> None:
    """Per device at the same sequences a rank, ep 72 (4 experts a rank, padded) and ep 64
    (4 a rank, dividing) differ only by what more ranks exchange and touch: within 5 %."""
    rows = [
        ROW.format(hardware="h100-sxm", batch=64 * r, metric="output_tokens_per_s", value=1.0,
                   gpus=r)
        for r in (72, 64)
    ]  # fmt: skip
    seventy_two, sixty_four = calibrate(_write(tmp_path, *rows))["bound"].to_list()
    assert seventy_two == pytest.approx(sixty_four, rel=0.05)


def _placement(experts: int, ranks: int, redundant: bool, rng: np.random.Generator) -> list:
    """Each rank's slots as expert ids: round-robin, then (``redundant``) the busiest experts'
    copies filling every rank to ``ceil(E / ranks)`` slots, as a load balancer places them."""
    slots = math.ceil(experts / ranks)
    ranks_of: list[list[int]] = [[] for _ in range(ranks)]
    for e in range(experts):
        ranks_of[e % ranks].append(e)
    if redundant:
        spare = [r for r in range(ranks) for _ in range(slots - len(ranks_of[r]))]
        for rank, e in zip(spare, rng.permutation(experts), strict=False):
            ranks_of[rank].append(int(e))
    return ranks_of


def test_no_placement_routes_less_to_its_busiest_rank_than_the_bound_assumes() -> None:
    """The adversary: tokens routed uniformly to k = 8 of 256 experts, over 72 and 48 ranks,
    with and without redundant copies (a token to a copied expert goes to one copy at random).
    The busiest rank touches at least the distinct experts the bound reads a rank
    (``experts_touched_per_rank`` of the padded model) and computes at least its tokens a rank
    (``T k / ep``)."""
    rng = np.random.default_rng(44)
    experts, k = 256, 8
    for ranks in (72, 48):
        padded = ranks * math.ceil(experts / ranks)
        for redundant in (False, True):
            ranks_of = _placement(experts, ranks, redundant, rng)
            where: list[list[int]] = [[] for _ in range(experts)]
            for rank, held in enumerate(ranks_of):
                for e in held:
                    where[e].append(rank)
            count = np.array([len(w) for w in where])
            table = np.array([w + [w[0]] * (count.max() - len(w)) for w in where])
            for tokens in (1, 16, 256, 4096):
                touched_max, work_max = [], []
                for _ in range(10):
                    routed = np.argpartition(rng.random((tokens, experts)), k, axis=1)[:, :k]
                    copy = (rng.random(routed.shape) * count[routed]).astype(int)
                    rank = table[routed, copy]
                    work_max.append(np.bincount(rank.ravel(), minlength=ranks).max())
                    pairs = np.unique(routed.ravel() * ranks + rank.ravel())
                    touched_max.append(np.bincount(pairs % ranks, minlength=ranks).max())
                bound_touched = float(physics.experts_touched_per_rank(padded, k, tokens, ranks))
                assert np.mean(touched_max) >= bound_touched * (1 - 1e-9), (ranks, tokens)
                assert np.mean(work_max) >= tokens * k / ranks * (1 - 1e-9), (ranks, tokens)
