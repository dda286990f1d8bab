"""The pools table's plans: one per named scheduler, each the fewest devices over its usable
batches (more batches never make one bigger), and the batched prefill pool by hand."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sweeps
from sweeps import physics
from sweeps.schedulers import SCHEDULERS

BATCHES = (8, 16, 32, 64, 128, 256)


@cache
def plans(batches: tuple[int, ...], prompt: int = 2048, output: int = 256) -> pl.DataFrame:
    """Llama-3 8B on an H200 at 100 requests/s and a 50 ms TTFT: the pools table."""
    ds = sweeps.run(
        {
            "sweep": {"name": "pool-plans"},
            "axes": {"model": ["llama-3-8b"], "hardware": ["h200"], "batch": list(batches)},
            "serving": {
                "prompt_tokens": [prompt],
                "output_tokens": [output],
                "arrival_rate": [100.0],
                "ttft_slo_s": 0.05,
                "tpot_slo_s": 0.05,
            },
        }
    )
    return sweeps.export.frames(ds)["pools"]


def devices(frame: pl.DataFrame) -> dict[str, float]:
    """Each plan's devices by its mode (inf where none meets the objectives)."""
    return {
        str(row["pool_mode"]): math.inf if row["devices"] is None else row["devices"]
        for row in frame.iter_rows(named=True)
    }


def test_one_row_per_scheduler_and_a_smaller_batch_wins() -> None:
    frame = plans(BATCHES)
    assert frame["pool_mode"].cast(pl.String).to_list() == [*SCHEDULERS, "disaggregated"]
    one_pool = frame.filter(pl.col("pool_mode") != "disaggregated")
    assert (one_pool["scheduler"] == one_pool["pool_mode"].cast(pl.String)).all()
    # issue 19's case: the largest usable batch took 31 devices where a smaller one needs 7
    best = one_pool.filter(pl.col("feasible")).sort("devices").row(0, named=True)
    assert best["decode_batch"] < 64
    assert best["devices"] <= plans((64,)).filter(pl.col("feasible"))["devices"].min()


@settings(max_examples=8, deadline=None)
@given(st.sets(st.sampled_from(BATCHES), min_size=1, max_size=4))
def test_adding_batches_never_makes_a_plan_bigger(chosen: set[int]) -> None:
    wide, narrow = devices(plans(BATCHES)), devices(plans(tuple(sorted(chosen))))
    assert wide.keys() == narrow.keys()
    for mode, count in wide.items():
        assert count <= narrow[mode], mode


def test_the_batched_prefill_pool_by_hand() -> None:
    """Short prompts (I = 128, O = 16) at 100 requests/s: one prompt's prefill is
    memory-bound, so prefilling the waiting prompts together serves more with fewer
    replicas. By hand from the prefill table: the best ``m / t_p(m, I)`` over the batches whose
    ``(1 + 0.9) t_p(m, I) + t_kv`` meets TTFT, the pool at most 0.9 busy."""
    prompt, rate, slo, link = 128, 2000.0, 0.05, 50e9
    ds = sweeps.run(
        {
            "sweep": {"name": "batched-pool"},
            "axes": {
                "model": ["llama-3-8b"],
                "hardware": ["h100-sxm"],
                "batch": list(BATCHES),
                "prompt": [prompt],
                "context": [prompt],
            },
            "serving": {
                "prompt_tokens": [prompt],
                "output_tokens": [16],
                "arrival_rate": [rate],
                "ttft_slo_s": slo,
                "tpot_slo_s": 0.05,
                "kv_link_bandwidth": link,
            },
        }
    )
    row = (
        sweeps.export.frames(ds)["pools"]
        .filter(pl.col("pool_mode") == "disaggregated")
        .row(0, named=True)
    )
    assert row["scheduler"] == "batched-prefill"
    prefill = ds["ttft_s"].sel(hardware="h100-sxm", tp=1, prompt=prompt).squeeze()
    t_kv = row["kv_handoff_s"]
    each = {int(b): float(prefill.sel(batch=b)) for b in BATCHES}
    usable = {m: t for m, t in each.items() if 1.9 * t + t_kv <= slo}
    best = max(usable, key=lambda m: m / usable[m])
    replicas = math.ceil(rate / (0.9 * best / usable[best]))
    assert row["prefill_replicas"] == replicas
    # a single-prompt M/D/1 pool needs more: at least lambda t_p(1, I) replicas
    alone = float(ds["serving_ttft_s"].sel(mode="bound").squeeze()[0])
    assert replicas < rate * alone
    # the cycle of the gated batches at the rate one replica sees, on the chord to the best m
    slope = (usable[best] - alone) / (best - 1)
    cycle = float(physics.gated_cycle(rate / replicas, alone, slope))
    assert cycle <= usable[best] * (1 + 1e-9)
    assert row["ttft_p90_s"] == pytest.approx(1.9 * cycle + t_kv)
    assert row["ttft_s"] == pytest.approx(1.5 * cycle + t_kv)
    assert row["ttft_p90_s"] <= slo


def test_the_gated_cycle_against_a_plain_iteration() -> None:
    first, slope = 0.010, 0.002
    for rate in (10.0, 80.0, 200.0, 450.0):
        t = first
        for _ in range(10_000):  # T = t_p(max(1, lambda T)) on the chord, iterated
            t = first + (max(1.0, rate * t) - 1) * slope
        assert float(physics.gated_cycle(rate, first, slope)) == pytest.approx(t, rel=1e-9)
    assert np.isinf(physics.gated_cycle(600.0, first, slope))
