"""The split compute roof's entry point (``sweeps.engine.split.roofline``).

Where some device runs attention at another peak than the GEMMs, the roofline pass's time,
bottleneck, attained FLOP/s, utilization and tokens/s are all replaced by the split ones, so
the pass is not run and feasibility is computed on its own (``Engine.fits``). These tests hold
that shortcut against the long way (the pass, then the split outputs over it), on the scalar
loop too, and count which engine calls each way makes.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

import numpy as np
import pytest
import xarray as xr

from sweeps.bench import scalar
from sweeps.bench.scalar import check, sample, scalar_loop
from sweeps.config import Sweep
from sweeps.engine import decode, prefill, split
from sweeps.grid import build_grid
from sweeps.grid.layout import GridEngine
from sweeps.grid.roof import roofline_outputs
from sweeps.pipeline.mapping import sweep_from_mapping
from sweeps.studies.prefix import prefix
from sweeps.studies.speculative import speculative

USERS = (decode, prefill, prefix, speculative)
"""The analyses that take their roofline from ``split.roofline``."""


@cache
def fp4_sweep(attention: str = "auto") -> Sweep:
    """NVFP4 and fp8 weights with bf16 and fp8 caches on a B200 and an H100: the B200 runs an
    NVFP4 checkpoint's attention at fp8's peak, half its GEMMs' (a split, unless
    ``attention = "gemm"``)."""
    return sweep_from_mapping({
        "sweep": {"name": "split-entry"},
        "axes": {"model": ["llama-3.1-70b"], "hardware": ["b200", "h100-sxm"], "tp": [1, 2],
                 "batch": [1, 64, 512], "context": [1088, 4096], "prompt": [1024],
                 "kv_dtype": ["fp8", "bf16"], "weight_dtype": ["nvfp4", "fp8"],
                 "spec_tokens": [3], "spec_acceptance": [0.6, 0.8], "spec_draft": ["ngram"],
                 "prefix_hit_rate": [0.0, 0.5], "kv_tier": ["hbm"]},
        "options": {"attention_dtype": attention},
    })  # fmt: skip


def _long_way(
    x: Any, dims: tuple[str, ...], work: Any, *, with_tokens: bool, **inputs: Any
) -> dict[str, Any]:
    """The roofline as it was taken before the shortcut: the whole pass, then the split
    outputs over it."""
    roof = x.engine.roofline(dims, with_tokens=with_tokens, **inputs)
    if not split.splits(x):
        return roof
    gemm, attention = work()
    step = (gemm, attention, inputs["nbytes"], inputs["ai"])
    tokens = inputs["batch"] if with_tokens else None
    device = (inputs["peak"], inputs["bandwidth"])
    return {**roof, **split.split_outputs(x, dims, step, device, tokens)}


@pytest.fixture(scope="module")
def shortcut() -> xr.Dataset:
    return build_grid(fp4_sweep())


def test_the_shortcut_is_the_long_way_bit_for_bit(
    shortcut: xr.Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in USERS:
        monkeypatch.setattr(module, "roofline", _long_way)
    long_way = build_grid(fp4_sweep())
    xr.testing.assert_identical(shortcut, long_way)
    for name, variable in shortcut.data_vars.items():  # the same layout, dims in order
        assert variable.dims == long_way[name].dims, name
        assert variable.dtype == long_way[name].dtype, name
    for name in ("feasible", "prefill_feasible", "spec_feasible"):
        assert shortcut[name].values.flags.c_contiguous, name


def _counting(calls: Counter[str]) -> type:
    class Counting(GridEngine):
        def roofline(self, dims: tuple[str, ...], **inputs: Any) -> dict[str, Any]:
            calls["roofline"] += 1
            return super().roofline(dims, **inputs)

        def fits(self, dims: tuple[str, ...], **inputs: Any) -> xr.Variable:
            calls["fits"] += 1
            return super().fits(dims, **inputs)

    return Counting


@pytest.mark.parametrize(("attention", "roofline", "fits"), [("auto", 0, 4), ("gemm", 4, 0)])
def test_the_pass_runs_only_where_no_device_splits(
    monkeypatch: pytest.MonkeyPatch, attention: str, roofline: int, fits: int
) -> None:
    import sweeps.grid.build as build

    calls: Counter[str] = Counter()
    monkeypatch.setattr(build, "GridEngine", _counting(calls))
    build_grid(fp4_sweep(attention))
    # decode, prefill, the hit prefill and the verify step: one call each
    assert calls == Counter({k: v for k, v in (("roofline", roofline), ("fits", fits)) if v})


def test_fits_is_the_pass_feasibility_over_a_dim_no_input_has() -> None:
    rng = np.random.default_rng(5)
    dims = ("model", "hardware", "tp", "batch", "context", "spec_acceptance")
    sizes = {"model": 2, "hardware": 3, "tp": 1, "batch": 4, "context": 5, "spec_acceptance": 2}
    batch = xr.Variable("batch", [1.0, 8.0, 64.0, 512.0])
    max_batch = xr.Variable(("context", "hardware", "model"), rng.integers(0, 600, (5, 3, 2)))
    point = xr.Variable(("model", "tp", "batch", "context"), rng.random((2, 1, 4, 5)) + 0.1)
    device = xr.Variable("hardware", rng.random(3) + 1.0)
    inputs = {
        "flops": point, "nbytes": point, "ai": point, "batch": batch, "max_batch": max_batch,
        "peak": device, "bandwidth": device, "ridge": device, "peak_flops": device,
    }  # fmt: skip
    passed = roofline_outputs(dims, sizes, with_tokens=False, use_kernel=False, **inputs)
    fit = GridEngine(sizes).fits(dims, **inputs)
    assert fit.dims == passed["feasible"].dims == dims
    np.testing.assert_array_equal(fit.values, passed["feasible"].values)
    assert fit.values.flags.c_contiguous
    # the adversary: a plain loop over every point
    for index in np.ndindex(*fit.shape):
        at = dict(zip(dims, index, strict=True))
        expected = (
            batch.values[at["batch"]]
            <= max_batch.values[at["context"], at["hardware"], at["model"]]
        )
        assert fit.values[index] == expected


def test_the_scalar_loop_takes_the_same_roof(shortcut: xr.Dataset) -> None:
    # the scalar engine's ``fits`` and the split outputs on floats, point by point
    assert {"feasible", "prefill_feasible", "spec_feasible", "step_time_s"} <= set(scalar.CHECKED)
    sweep = fp4_sweep()
    points = sample(sweep, 40)
    values = scalar_loop(sweep, points)
    assert check(shortcut, points, values) < 1e-12
    assert {row["feasible"] for row in values} == {True, False}
