"""The serving table through the grid: each mode against the grid's own per-step bounds.

Every reference here is built from the decode and prefill tables of the same grid (or of a
second sweep whose context axis holds the steps of a request's life), summed or simulated in
plain Python: a static batch step by step, slots refilled as they finish, a chunked scheduler
step by step. Nothing is recomputed from the physics, so the test proves the serving analysis
wires the per-step bounds the way docs/serving.md says.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import xarray as xr

import sweeps


def sweep(axes: dict[str, Any], serving: dict[str, Any] | None = None) -> xr.Dataset:
    """The grid of one sweep given its ``[axes]`` (and ``[serving]``), attention FLOPs on."""
    tables: dict[str, Any] = {
        "sweep": {"name": "serving-test"},
        "axes": {"kv_heads": ["native"], "kv_dtype": ["bf16"], "weight_dtype": ["bf16"], **axes},
        "options": {"attention_flops": True},
    }
    if serving is not None:
        tables["serving"] = serving
    return sweeps.run(tables)


def at(ds: xr.Dataset, name: str, **where: Any) -> float:
    """One value of ``name`` at the labels ``where`` (every other dim of size 1)."""
    return float(ds[name].sel(where).squeeze())


def device(ds: xr.Dataset, hardware: str) -> tuple[float, float]:
    """Peak FLOP/s and bandwidth of ``hardware`` in ``ds`` (efficiencies are 1 here)."""
    return at(ds, "peak_flops", hardware=hardware), at(ds, "bandwidth", hardware=hardware)


# --- section 1: a static batch ----------------------------------------------------------

# gpt-oss-20b: 12 of its 24 layers have a 128-token window; from a 16-token prompt a request
# crosses the window at step 112 and, at large batch, the compute/memory kink
STATIC_BATCH = [1, 256, 4096, 16384]
STATIC_PROMPT = 16
STATIC_OUTPUTS = [1, 2, 100, 113, 114, 1500]


@pytest.fixture(scope="module")
def static_grids() -> tuple[xr.Dataset, xr.Dataset]:
    axes = {"model": ["gpt-oss-20b"], "hardware": ["h100-sxm"], "batch": STATIC_BATCH}
    serving = sweep(
        {**axes, "context": [1024]},
        {
            "prompt_tokens": [STATIC_PROMPT],
            "output_tokens": STATIC_OUTPUTS,
            "arrival_rate": [1.0],
            "chunk_tokens": 0,
        },
    )
    steps = sweep(
        {
            **axes,
            "context": list(range(STATIC_PROMPT + 1, STATIC_PROMPT + max(STATIC_OUTPUTS))),
            "prompt": [STATIC_PROMPT],
        }
    )
    return serving, steps


def test_static_latency_is_the_step_loop_of_the_grid(
    static_grids: tuple[xr.Dataset, xr.Dataset],
) -> None:
    serving, steps = static_grids
    step_time = steps["step_time_s"].squeeze()  # (batch, context)
    for batch in STATIC_BATCH:
        ttft = at(steps, "ttft_s", batch=batch, prompt=STATIC_PROMPT)
        times = step_time.sel(batch=batch).values.tolist()
        for output in STATIC_OUTPUTS:
            loop = ttft
            for j in range(1, output):  # decode step j runs at context I + j
                loop += times[j - 1]
            row = {"batch": batch, "output_tokens": output, "mode": "static"}
            assert at(serving, "request_latency_s", **row) == pytest.approx(loop, rel=1e-9)
            assert at(serving, "serving_ttft_s", **row) == ttft
            tpot = at(serving, "tpot_s", **row)
            if output == 1:
                assert math.isnan(tpot)
            else:
                assert tpot == pytest.approx((loop - ttft) / (output - 1), rel=1e-9)


def test_the_static_grid_crosses_the_kink_and_the_window(
    static_grids: tuple[xr.Dataset, xr.Dataset],
) -> None:
    _, steps = static_grids
    intensity = steps["arithmetic_intensity"].squeeze().sel(batch=16384).values
    compute = intensity >= float(steps["ridge_point"].squeeze())
    assert compute[0]  # compute-bound early
    assert not compute[-1]  # memory-bound late
    window = int(steps["sliding_window"].squeeze())
    assert STATIC_PROMPT < window < STATIC_PROMPT + max(STATIC_OUTPUTS) - 1


# --- section 2: colocated continuous batching -------------------------------------------

CHECK = {"model": ["llama-3-8b"], "hardware": ["h100-sxm"], "batch": [1, 16, 64, 256]}


@pytest.fixture(scope="module")
def check_grid() -> xr.Dataset:
    # serving.md's check values: Llama-3 8B, h100-sxm, bf16, attention on, tp 1, I 2048, O 256;
    # the decode table at S_mean = 2176 and the prefill table at 2048 in the same grid
    return sweep(
        {**CHECK, "context": [2176], "prompt": [2048]},
        {"prompt_tokens": [2048], "output_tokens": [256], "arrival_rate": [1.0]},
    )


def test_colocated_steady_step_is_the_decode_bound_at_the_mean_context(
    check_grid: xr.Dataset,
) -> None:
    ds = check_grid
    for batch in CHECK["batch"]:
        t = at(ds, "step_time_s", batch=batch, context=2176)
        t_p = at(ds, "ttft_s", batch=1, prompt=2048)
        row = {"batch": batch, "mode": "serial-prefill"}
        assert at(ds, "step_time_steady_s", **row) == pytest.approx(t, rel=1e-12)
        r = 1 / (255 * t / batch + t_p)
        # the slots free in 255 groups a cycle: one slot each up to B = 255 (a request sees the
        # B - 1 others' prefills); at B = 256 one group of 2: 256 - 1/2 - (4 + 254) / 512
        stalls = batch - 1 if batch <= 255 else 256 - 0.5 - 258 / 512
        assert at(ds, "tpot_s", **row) == pytest.approx(t + stalls * t_p / 255, rel=1e-12)
        assert at(ds, "output_tokens_per_s_per_device", **row) == pytest.approx(256 * r, rel=1e-12)
        assert at(ds, "prefill_time_share", **row) == pytest.approx(r * t_p, rel=1e-12)
        assert at(ds, "tokens_per_s_per_user", **row) == pytest.approx(
            1 / at(ds, "tpot_s", **row), rel=1e-15
        )


def test_colocated_check_values_through_the_grid(check_grid: xr.Dataset) -> None:
    ds = check_grid
    row = {"batch": 64, "mode": "serial-prefill"}
    assert at(ds, "step_time_s", batch=64, context=2176) == pytest.approx(9.92955e-3, rel=1e-6)
    assert at(ds, "step_time_steady_s", **row) == pytest.approx(9.92955e-3, rel=1e-6)
    t_p = at(ds, "ttft_s", batch=1, prompt=2048)
    assert t_p == pytest.approx(30.00703e-3, rel=1e-6)
    per_device = at(ds, "output_tokens_per_s_per_device", **row)
    assert per_device / 256 == pytest.approx(14.3740, abs=1e-4)  # r [request/s]
    assert at(ds, "tpot_s", **row) == pytest.approx(9.92955e-3 + 63 * t_p / 255, rel=1e-5)
    assert at(ds, "tpot_s", **row) == pytest.approx(17.343e-3, abs=1e-6)
    assert at(ds, "prefill_time_share", **row) == pytest.approx(0.43132, abs=1e-5)
    assert per_device == pytest.approx(3679.7, abs=0.05)
    # TTFT from admission: the prompt alone (a prompt starts at a step boundary)
    assert at(ds, "serving_ttft_s", **row) == pytest.approx(t_p, rel=1e-12)
    # the static batch: t_p(64, 2048) then 255 memory-bound steps, 4.4525 s
    static = {"batch": 64, "mode": "static"}
    t_static = at(ds, "ttft_s", batch=64, prompt=2048)
    assert at(ds, "request_latency_s", **static) == pytest.approx(
        t_static + 255 * 9.92955e-3, rel=1e-5
    )
    assert at(ds, "request_latency_s", **static) == pytest.approx(4.4525, abs=1e-4)
    # chunked-paced, tau = 2048, not budget-limited: c = 64 * 2048 / 255 = 514.0, t_mix 9.98 ms
    paced = {"batch": 64, "mode": "chunked-paced"}
    assert at(ds, "chunk_tokens", **paced) == pytest.approx(514.0, abs=0.05)
    assert not bool(ds["budget_limited"].sel(paced).squeeze())
    # t_mix by hand, memory-bound: the weights for 64 + c tokens (the lm_head and c + 64
    # embedding rows of 8192 bf16 values), 64 caches at 2176 tokens, the prefix a step's first
    # piece re-reads (I / 2 = 1024 tokens) and the chunk's own KV writes (c tokens), 131,072
    # bytes a token; serving.md's "about 9.97 ms" leaves the writes out
    c = 64 * 2048 / 255
    weights = 16_060_522_496 - 1_050_673_152 + (64 + c) * 8192
    nbytes = weights + 131_072 * (64 * 2176 + 1024 + c)
    t_mix = at(ds, "step_time_steady_s", **paced)
    assert t_mix == pytest.approx(nbytes / 3.35e12, rel=1e-9)
    assert t_mix == pytest.approx(9.991e-3, abs=0.001e-3)


def simulate_slots(
    batch: int, prompt: int, output: int, steps: xr.Dataset, t_p: float
) -> tuple[float, float]:
    """Output tokens/s of ``batch`` slots refilled as they finish, from the grid's bounds.

    A step over slots at different contexts costs the sum of their FLOPs (the decode table's
    ``flops`` at batch 1, per context) and the weights read at ``batch`` plus the sum of their
    caches (``kv_bytes_per_sequence_device``); each new prompt stalls all for ``t_p``. Slots
    start at seeded random progress and run three cycles. Returns the throughput and the share
    of steps that were compute-bound.
    """
    hardware = str(steps["hardware"].values[0])
    peak, bandwidth = device(steps, hardware)
    flops = steps["flops"].squeeze().sel(batch=1).values  # by context I + 1 .. I + O - 1
    caches = steps["kv_bytes_per_sequence_device"].squeeze().values
    weights = at(steps, "weights_read_bytes", batch=batch)
    n = output - 1
    progress = np.random.default_rng(3).integers(1, output, batch)
    clock, done, compute_bound = 0.0, 0, 0
    for _ in range(3 * n):
        work = float(np.sum(flops[progress - 1]))
        traffic = weights + float(np.sum(caches[progress - 1]))
        compute_bound += work / peak > traffic / bandwidth
        clock += max(work / peak, traffic / bandwidth)
        progress = progress + 1
        finished = progress > n
        clock += int(np.sum(finished)) * t_p
        done += int(np.sum(finished))
        progress = np.where(finished, 1, progress)
    return done * output / clock, compute_bound / (3 * n)


@pytest.mark.parametrize(
    ("model", "batch", "prompt", "output", "compute_share"),
    [
        ("llama-3-8b", 64, 2048, 256, (0.0, 0.0)),
        # 12 layers with a 128-token window: every request crosses it
        ("gpt-oss-20b", 256, 64, 400, (0.0, 0.0)),
        # short prompts at a large batch: compute-bound steps
        ("llama-3-8b", 1024, 16, 200, (1.0, 1.0)),
    ],
)
def test_colocated_throughput_matches_a_slot_simulation_on_the_grid(
    model: str, batch: int, prompt: int, output: int, compute_share: tuple[float, float]
) -> None:
    axes = {"model": [model], "hardware": ["h100-sxm"], "batch": sorted({1, batch})}
    serving = sweep(
        {**axes, "context": [prompt + output]},
        {"prompt_tokens": [prompt], "output_tokens": [output], "arrival_rate": [1.0]},
    )
    steps = sweep({**axes, "context": list(range(prompt + 1, prompt + output)), "prompt": [prompt]})
    t_p = at(steps, "ttft_s", batch=1, prompt=prompt)
    closed = at(serving, "output_tokens_per_s_per_device", batch=batch, mode="serial-prefill")
    simulated, share = simulate_slots(batch, prompt, output, steps, t_p)
    assert closed == pytest.approx(simulated, rel=0.01)
    assert compute_share[0] <= share <= compute_share[1]


def test_single_token_requests_have_no_decode() -> None:
    ds = sweep(
        {**CHECK, "context": [2048], "prompt": [2048]},
        {"prompt_tokens": [2048], "output_tokens": [1], "arrival_rate": [1.0]},
    )
    t_p = at(ds, "ttft_s", batch=1, prompt=2048)
    row = {"batch": 64, "mode": "serial-prefill"}
    assert at(ds, "serving_ttft_s", **row) == pytest.approx(t_p, rel=1e-12)  # nothing in flight
    assert at(ds, "request_latency_s", **row) == pytest.approx(t_p, rel=1e-12)
    assert at(ds, "output_tokens_per_s_per_device", **row) == pytest.approx(1 / t_p, rel=1e-12)
    assert math.isnan(at(ds, "tpot_s", **row))
    assert bool(ds["meets_slo"].sel(row).squeeze())
    chunked = {"batch": 64, "mode": "chunked-paced"}
    assert math.isnan(at(ds, "tpot_s", **chunked))
    assert np.isfinite(at(ds, "serving_ttft_s", **chunked))
    assert bool(ds["budget_limited"].sel(chunked).squeeze())
