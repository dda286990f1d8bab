"""Closed-loop rows (``concurrency``) held against the serving table's ``bound`` mode.

At most ``C`` requests are in the system, so a throughput is bounded by the ``bound`` mode at
``B = min(C, batch)`` slots (the memory wall for ``max``) and a latency by the request alone.
The adversary: the simulator in closed loop at ``C`` clients with ``B`` slots, every named
scheduler, on generated cases, read back through ``sweeps calibrate``, never beats its bound.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sweeps
from sweeps.calibrate import COLUMNS, calibrate
from sweeps.calibrate.bounds import _sweep
from sweeps.grid.scalar import point_inputs
from sweeps.studies.serving.simulate import SCHEDULERS, closed_loop, simulate

HEADER = ",".join([*COLUMNS, "gpus", "concurrency"])


def _row(
    batch: str = "max",
    metric: str = "output_tokens_per_s",
    value: float = 100.0,
    concurrency: object = "",
    tp: int = 1,
    basis: str = "device",
    gpus: str = "",
    prompt: int = 1024,
    output: int = 256,
    model: str = "llama-3-8b",
    hardware: str = "h100-sxm",
) -> str:
    return (
        f"{model},{hardware},{tp},bf16,bf16,auto,{batch},{prompt},{output},{metric},{value},"
        f"{basis},test,{gpus},{concurrency}"
    )


def _write(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "closed.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", "utf-8")
    return path


def _bound_mode(batch: int, prompt: int = 1024, output: int = 256, tp: int = 1) -> float:
    """The serving table's ``bound`` mode, output tokens/s per device, at efficiencies 1."""
    ds = sweeps.run({
        "sweep": {"name": "closed-loop"},
        "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"], "tp": [tp],
                 "batch": [batch], "context": [prompt], "kv_heads": ["native"],
                 "kv_dtype": ["bf16"], "weight_dtype": ["bf16"]},
        "options": {"attention_flops": True, "memory_reserve": 0.0,
                    "bandwidth_efficiency": 1.0, "compute_efficiency": 1.0},
        "serving": {"prompt_tokens": [prompt], "output_tokens": [output],
                    "arrival_rate": [1.0], "chunk_tokens": 0},
    })  # fmt: skip
    return float(ds["output_tokens_per_s_per_device"].sel(mode="bound").squeeze())


def test_a_closed_loop_throughput_is_the_bound_mode_at_its_concurrency(tmp_path: Path) -> None:
    frame = calibrate(
        _write(
            tmp_path,
            _row(concurrency=4),
            _row(concurrency=64),
            _row(concurrency=100_000),  # more clients than fit: the memory wall
            _row(),  # no concurrency: the static reading at the wall
            _row(batch="16", concurrency=64),  # 16 slots: 16 in flight at most
        )
    )
    wall = frame["batch"][3]
    assert frame["batch"].to_list() == [4, 64, wall, wall, 16]
    bounds = frame["bound"].to_list()
    for bound, slots in zip(bounds[:3] + bounds[4:], [4, 64, wall, 16], strict=True):
        assert bound == pytest.approx(_bound_mode(slots), rel=1e-12)
    assert bounds[0] < bounds[1] < bounds[2]  # fewer clients, fewer tokens a weight read
    assert (frame["reason"] == "").all()
    assert frame["status"].to_list() == ["ok"] * 5
    assert frame["in_medians"].all()  # a closed-loop throughput is an efficiency


def test_the_basis_scales_a_closed_loop_bound_by_replicas(tmp_path: Path) -> None:
    rows = [_row(tp=2, basis=b, gpus="8", concurrency=32) for b in ("device", "replica", "system")]
    device, replica, system = calibrate(_write(tmp_path, *rows))["bound"].to_list()
    assert device == pytest.approx(_bound_mode(32, tp=2), rel=1e-12)
    assert replica == pytest.approx(2 * device)
    assert system == pytest.approx(8 * device)  # every replica bounded at 32 slots


def test_a_closed_loop_latency_is_bounded_by_its_request_alone(tmp_path: Path) -> None:
    metrics = ("ttft_s", "itl_s", "request_latency_s")
    rows = [_row(metric=m, value=1.0, concurrency=64) for m in metrics]
    rows += [_row(batch="1", metric=m, value=1.0) for m in metrics]
    frame = calibrate(_write(tmp_path, *rows))
    assert frame["batch"].to_list() == [1] * 6
    closed, alone = frame["bound"].to_list()[:3], frame["bound"].to_list()[3:]
    assert closed == pytest.approx(alone, rel=1e-12)
    # measured beside 63 other clients: bounded, but no efficiency, so out of the medians
    assert frame["in_medians"].to_list() == [False] * 3 + [True] * 3


def _cases(n: int, seed: int = 23) -> list[tuple[str, str, int, int, int, int, str]]:
    """Generated (model, device, C, B, I, O, scheduler): clients below, at and above the
    slots; a dense model and a MoE (whose weight reads grow with a step's tokens)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        model, hardware = (("llama-3-8b", "h100-sxm"), ("mixtral-8x7b", "h200"))[k % 2]
        slots = (2, 8, 32, 96)[(k // 3) % 4]
        clients = max(1, int(slots * rng.choice([0.25, 0.5, 1.0, 2.0, 4.0])))
        prompt, output = int(rng.choice([16, 200, 1500])), int(rng.integers(2, 80))
        scheduler = SCHEDULERS[(k // 2) % len(SCHEDULERS)]
        out.append((model, hardware, clients, slots, prompt, output, scheduler))
    return out


def test_the_simulator_in_closed_loop_never_beats_the_bound(tmp_path: Path) -> None:
    rows = []
    for model, hardware, clients, slots, prompt, output, scheduler in _cases(12):
        key = (model, hardware, "1", "bf16", "bf16", "auto", "auto", "")  # "": tp
        point = point_inputs(_sweep(key, [1], [prompt], [prompt]))  # calibrate's own options
        budget = slots + max(1, slots * prompt // 2) if scheduler.startswith("chunked") else 0
        n = 3 * max(clients, slots) + 10
        tl = simulate(
            point, scheduler, slots, arrivals=closed_loop(clients), requests=n,
            prompt=prompt, output=output, budget=budget,
        )  # fmt: skip
        assert tl.concurrency == clients
        measured = float(tl.output.sum() / tl.makespan.max())  # output tokens/s, one replica
        rows.append(
            _row(str(slots), value=measured, concurrency=clients, prompt=prompt,
                 output=output, model=model, hardware=hardware, basis="replica")
        )  # fmt: skip
    frame = calibrate(_write(tmp_path, *rows))
    assert frame["bound"].null_count() == 0
    assert frame["ratio"].max() <= 1 + 1e-9, frame.select("batch", "concurrency", "ratio")
    assert set(frame["batch"]) >= {1, 8, 32, 96}  # the bound at min(C, B) over several sizes
    assert frame["ratio"].min() > 0.05  # the bound is near what a scheduler reaches


def test_serving_rows_beside_others_of_other_lengths_share_one_grid(tmp_path: Path) -> None:
    # the serving table holds the serving rows' lengths only: the others are not read from it
    rows = [
        _row(metric="request_latency_s", value=100.0, output=256),
        _row(value=1.0, output=128),
        _row(value=1.0, output=64, concurrency=8),
        _row(metric="ttft_s", value=100.0, output=32),
    ]
    frame = calibrate(_write(tmp_path, *rows))
    assert frame["bound"].null_count() == 0
    assert frame["status"].to_list() == ["ok"] * 4
    assert frame["bound"][2] == pytest.approx(_bound_mode(8, output=64), rel=1e-12)
