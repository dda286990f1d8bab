"""The FP4 split (analyses/split.py) on the verify step and the hit prefill.

Llama-3.1 70B with NVFP4 weights and an fp8 cache on a B200: the GEMMs run at the FP4 peak,
attention at fp8's (half of it). The verify step's and the hit prefill's times, in their own
tables and in the serving table, must be the split roofline: at least the one-peak time
(``attention_dtype = "gemm"``), and equal to a plain loop over the verify step's rows (the
decode table's steps at ``S .. S + k``, GEMMs and attention apart) and over the hit prefill's
terms.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
import xarray as xr

import sweeps

S, K, PROMPT, OUTPUT = 1088, 3, 1024, 128
BATCHES = [1, 64, 512]


@cache
def grid(attention: str = "auto", flops: bool = True, weight: str = "nvfp4") -> xr.Dataset:
    return sweeps.run({
        "sweep": {"name": "fp4-split"},
        "axes": {"model": ["llama-3.1-70b"], "hardware": ["b200"], "tp": [1],
                 "batch": BATCHES, "context": [S + j for j in range(K + 1)], "prompt": [PROMPT],
                 "kv_dtype": ["fp8"], "weight_dtype": [weight], "spec_tokens": [K],
                 "spec_acceptance": [0.8], "spec_draft": ["ngram"],
                 "prefix_hit_rate": [0.0, 0.5], "kv_tier": ["hbm"]},
        "options": {"attention_flops": flops, "attention_dtype": attention},
        "serving": {"prompt_tokens": [PROMPT], "output_tokens": [OUTPUT], "arrival_rate": [1.0],
                    "chunk_tokens": 4096},
    })  # fmt: skip


def one(ds: xr.Dataset, name: str, **at: Any) -> float:
    """``name`` at ``at``, the dims it lacks left out (it is the same along them)."""
    value = ds[name]
    return float(value.sel({d: v for d, v in at.items() if d in value.dims}).squeeze())


def peaks() -> tuple[float, float, float]:
    """The GEMM (FP4) and attention (fp8) peaks and the bandwidth of the B200 [FLOP/s, byte/s]."""
    fp4, fp8 = grid(), grid(weight="fp8")
    # a batch-1 decode step is memory-bound: its bytes over its time are the bandwidth
    at = {"batch": 1, "context": S}
    bandwidth = one(fp4, "bytes", **at) / one(fp4, "step_time_s", **at)
    return float(fp4["peak_flops"].max()), float(fp8["peak_flops"].max()), bandwidth


def test_the_devices_run_attention_at_half_the_gemm_peak() -> None:
    gemm, attention, _ = peaks()
    assert gemm == pytest.approx(2 * attention, rel=1e-12)


@pytest.mark.parametrize("batch", BATCHES)
def test_the_verify_step_is_split_and_equals_a_loop_over_its_rows(batch: int) -> None:
    split, whole, off = grid(), grid("gemm"), grid(flops=False)
    gemm_peak, attention_peak, bandwidth = peaks()
    at = {"batch": batch, "context": S, "spec_tokens": K, "spec_draft": "ngram"}
    rows = [{"batch": batch, "context": S + j} for j in range(K + 1)]
    gemm = sum(one(off, "flops", **r) for r in rows)
    attention = sum(one(split, "flops", **r) for r in rows) - gemm
    nbytes = one(split, "verify_bytes", **at)
    expected = max(gemm / gemm_peak + attention / attention_peak, nbytes / bandwidth)
    got = one(split, "verify_time_s", **at)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got >= one(whole, "verify_time_s", **at) * (1 - 1e-12)
    # the speedup and the time per token follow the split step
    per_token = one(split, "spec_time_per_output_token_s", **at, spec_acceptance=0.8)
    assert per_token == pytest.approx(got / ((1 - 0.8**4) / 0.2), rel=1e-12)


@pytest.mark.parametrize("batch", BATCHES)
def test_the_hit_prefill_is_split_and_equals_a_loop(batch: int) -> None:
    split, whole, off = grid(), grid("gemm"), grid(flops=False)
    gemm_peak, attention_peak, bandwidth = peaks()
    at = {"batch": batch, "prompt": PROMPT, "prefix_hit_rate": 0.5, "kv_tier": "hbm"}
    gemm = one(off, "hit_flops", **at)
    attention = one(split, "hit_flops", **at) - gemm
    expected = max(
        gemm / gemm_peak + attention / attention_peak, one(split, "hit_bytes", **at) / bandwidth
    )
    got = one(split, "hit_compute_time_s", **at)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got >= one(whole, "hit_compute_time_s", **at) * (1 - 1e-12)
    assert got > one(whole, "hit_compute_time_s", **at) or batch == 1


def test_serving_prices_the_split_verify_step_and_hit_prefill() -> None:
    split, whole = grid(), grid("gemm")
    serving = {"prompt_tokens": PROMPT, "output_tokens": OUTPUT, "spec_tokens": K, "spec_draft": "ngram",
               "spec_acceptance": 0.8, "kv_tier": "hbm", "batch": 64}  # fmt: skip
    # TTFT of serial-prefill: the hit prefill of one prompt (on HBM: no reload), split
    ttft = one(split, "serving_ttft_s", mode="serial-prefill", prefix_hit_rate=0.5, **serving)
    hit = one(split, "hit_time_s", batch=1, prompt=PROMPT, prefix_hit_rate=0.5, kv_tier="hbm")
    assert ttft == pytest.approx(min(hit, one(split, "ttft_s", batch=1, prompt=PROMPT)), rel=1e-12)
    # the bound's TPOT: the fluid step of B n / (n + 1) verifies at the mean context
    # I + O/2 = S (a slot spends one step of its n + 1 on its prompt), times the verify steps
    # a token (n / (O - 1), the last step's drafts cut); the step is affine in its slots, so
    # it lies between the split verify step of B slots scaled by n / (n + 1) and that step
    tpot = one(split, "tpot_s", mode="bound", prefix_hit_rate=0.0, **serving)
    verify = one(split, "verify_time_s", batch=64, context=S, spec_tokens=K, spec_draft="ngram")
    steps = float(sweeps.physics.verify_steps(OUTPUT - 1, K, 0.8))
    per_token = verify * steps / (OUTPUT - 1)
    assert per_token * steps / (steps + 1) <= tpot <= per_token * (1 + 1e-12)
    for mode in ("bound", "serial-prefill", "chunked-paced"):
        for name in ("tpot_s", "serving_ttft_s"):
            got = split[name].sel(mode=mode).values
            assert np.all(got >= whole[name].sel(mode=mode).values * (1 - 1e-12)), (mode, name)
