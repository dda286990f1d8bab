"""The speculative analysis on the grid (``studies/speculative/speculative.py``): against the plain
decode table, hand values, a plain loop of decode steps; energy per token; and the streamed
speculative and prefix tables against the whole ones."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.grid.build import build_grid

from .techniques import BASE, SPEC, grid, same


@pytest.fixture(scope="module")
def spec() -> xr.Dataset:
    # a dense GQA model, a sliding-window one and an MoE one
    return grid('["llama-3.1-8b", "mistral-7b", "mixtral-8x7b"]', SPEC)


# --- speculation ---------------------------------------------------------------------------


def test_k0_reproduces_plain_decode_exactly(spec: xr.Dataset) -> None:
    at = spec.sel(spec_tokens=0, spec_draft="ngram")
    same(at["verify_flops"], spec["flops"])
    same(at["verify_bytes"], spec["bytes"])
    same(at["verify_arithmetic_intensity"], spec["arithmetic_intensity"])
    same(at["verify_time_s"], spec["step_time_s"])
    same(at["verify_bottleneck"], spec["bottleneck"])
    same(at["spec_time_per_output_token_s"], spec["step_time_s"])
    same(at["spec_max_batch"], spec["max_batch"])
    same(at["spec_ceiling"], spec["ceiling"])
    assert (at["speedup"] == 1.0).all()
    # every draft costs nothing when it proposes nothing
    k0 = spec.sel(spec_tokens=0)
    assert (k0["draft_time_s"] == 0).all()
    assert (k0["speedup"].sel(spec_draft="ngram") == 1.0).all()


def test_alpha0_gives_one_token_per_step(spec: xr.Dataset) -> None:
    at = spec.sel(spec_acceptance=0.0)
    assert (at["expected_tokens"] == 1.0).all()
    assert (at["speedup"] <= 1.0 + 1e-12).all()  # k rejected rows never pay
    assert (at["spec_time_per_output_token_s"] >= spec["step_time_s"] * (1 - 1e-12)).all()
    assert (spec["expected_tokens"].sel(spec_acceptance=1.0) == spec["spec_tokens"] + 1).all()


def test_check_values_llama3_8b_h100_ngram() -> None:
    # beyond-the-step section 1: Llama-3 8B bf16 on an H100 at S = 2048, k = 4, alpha = 0.8
    ds = grid(
        '["llama-3-8b"]',
        "spec_tokens = [4]\nspec_acceptance = [0.8]\nspec_draft = ['ngram']",
    ).sel(hardware="h100-sxm", context=2048, spec_tokens=4, spec_acceptance=0.8)
    point = ds.sel(batch=1).squeeze()
    assert float(point["expected_tokens"]) == pytest.approx(3.3616, abs=1e-12)
    assert str(point["verify_bottleneck"].item()) in ("0", "memory-bound")
    t_d, t_v = float(point["step_time_s"]), float(point["verify_time_s"])
    assert float(point["speedup"]) == pytest.approx(3.3616 * t_d / t_v, rel=1e-12)
    assert 3.3616 * 0.999 < float(point["speedup"]) < 3.3616  # approaches E
    # the by-hand bytes: the weights (the lm_head and 5 gathered rows), 2048 + 4 cached tokens
    weights = 8_030_261_248 * 2 - (128256 - 5) * 4096 * 2
    assert float(point["verify_bytes"]) == pytest.approx(weights + 131072 * 2052, rel=1e-12)


def test_verify_flops_equal_a_loop_of_decode_steps() -> None:
    # each row j of a verify step at context S is a decode step at S + j: build those steps
    k, s = 4, 2048
    steps = build_grid(
        parse_config(
            BASE.format(models='["mistral-7b"]', extra="").replace(
                "context = [2048, 5000]", f"context = {list(range(s, s + k + 1))}"
            )
        )
    )
    ds = grid('["mistral-7b"]', f"spec_tokens = [{k}]\nspec_acceptance = [0.5]").sel(
        context=s, spec_tokens=k
    )
    loop = steps["flops"].sum("context")
    np.testing.assert_allclose(
        ds["verify_flops"].squeeze().values, loop.squeeze().values, rtol=1e-12
    )


def test_break_even_batch_is_the_first_batch_with_speedup_at_most_one(spec: xr.Dataset) -> None:
    speedup = spec["speedup"].transpose("batch", ...)
    even = spec["break_even_batch"].transpose(*speedup.dims[1:])
    batches = spec["batch"].values
    flat_s = speedup.values.reshape(len(batches), -1)
    for column, got in enumerate(even.values.reshape(-1)):
        first = next((b for b, v in zip(batches, flat_s[:, column], strict=True) if v <= 1), None)
        assert (math.isnan(got) and first is None) or got == first
    # the answer people ask for exists: ngram on an 8B at 2048 pays up to some batch
    pays = spec["break_even_batch"].sel(spec_draft="ngram", spec_tokens=4, spec_acceptance=0.8)
    assert np.isfinite(pays.values).any() or (pays.isnull()).any()


def test_a_draft_model_costs_time_and_memory(spec: xr.Dataset) -> None:
    at = spec.sel(spec_tokens=4, spec_acceptance=0.8)
    one_b, ngram = at.sel(spec_draft="llama-3.2-1b"), at.sel(spec_draft="ngram")
    assert (one_b["draft_time_s"] > 0).all()
    assert (one_b["speedup"] < ngram["speedup"]).all()
    assert (one_b["spec_max_batch"] <= spec["max_batch"]).all()
    assert (one_b["draft_weight_bytes"] == 1_235_814_400 * 2).all()
    mtp = at.sel(spec_draft="mtp")
    assert (mtp["draft_time_s"] > 0).all()
    assert (mtp["draft_weight_bytes"] > 0).all()


def test_speculation_raises_the_ceiling_k_plus_one_times(spec: xr.Dataset) -> None:
    # linear FLOPs grow k+1 times, the cache read once: the ceiling with attention off would
    # be (k+1) times; with attention on it stays between 1 and k+1 times
    ratio = spec["spec_ceiling"].sel(spec_tokens=4) / spec["ceiling"]
    assert (ratio > 1).all()
    assert (ratio <= 5 + 1e-9).all()


# --- energy ---------------------------------------------------------------------------------


def test_energy_per_token_at_board_power() -> None:
    custom = """
[hardware.nopower]
peak_flops = { bf16 = 1e15 }
bandwidth = 3e12
memory = 80e9
"""
    text = BASE.format(models='["llama-3.1-8b"]', extra=SPEC) + custom
    ds = build_grid(parse_config(text.replace('["h100-sxm", "h200"]', '["h100-sxm", "nopower"]')))
    h100 = ds.sel(hardware="h100-sxm")
    assert float(h100["board_power_w"]) == 700.0  # the catalog's TDP of the SXM part
    expected = 700.0 * h100["tp"] * h100["step_time_s"] / h100["batch"]
    np.testing.assert_allclose(
        h100["energy_per_output_token_j"].values,
        expected.transpose(*h100["energy_per_output_token_j"].dims).values,
        rtol=1e-12,
    )
    same(h100["output_tokens_per_joule"], 1 / h100["energy_per_output_token_j"])
    spec = h100["spec_energy_per_output_token_j"]
    per_token = 700.0 * h100["spec_time_per_output_token_s"] / h100["batch"]
    np.testing.assert_allclose(spec.values, per_token.transpose(*spec.dims).values, rtol=1e-12)
    # speculation that pays saves energy per token in the same proportion
    ratio = (h100["energy_per_output_token_j"] / spec).transpose(*h100["speedup"].dims)
    np.testing.assert_allclose(ratio.values, h100["speedup"].values, rtol=1e-12)
    # a device without a known power: null, never 0
    assert ds["energy_per_output_token_j"].sel(hardware="nopower").isnull().all()


# --- streams and partitions -------------------------------------------------------------------

STREAMED = """
[sweep]
name = "spec-stream"
[axes]
model = ["llama-3.1-8b", "mixtral-8x7b"]
hardware = ["h100-sxm", "h200", "b200"]
batch = [1, 8, 64, 512]
context = [2048]
prompt = [1024]
spec_tokens = [0, 3]
spec_acceptance = [0.7]
prefix_hit_rate = [0.0, 0.8]
kv_tier = ["hbm", "nvme"]
[outputs]
charts = []
grid = "none"
layout = "{layout}"
"""


@pytest.mark.parametrize("layout", ["single", "partitioned"])
def test_streamed_tables_equal_the_whole_ones(layout: str, tmp_path: Path) -> None:
    import polars as pl

    from sweeps.grid.chunks import plan_chunks
    from sweeps.grid.memory import BASE_BYTES, estimate_bytes
    from sweeps.pipeline import run_to_folder

    sweep = parse_config(STREAMED.replace("{layout}", layout), "stream.toml")
    budget = BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // 2  # 2 chunks in flight
    chunks = plan_chunks(sweep, BASE_BYTES + (budget - BASE_BYTES) // 2)
    assert len(chunks) > len(sweep.models)
    assert all(c.sweep.batch == sweep.batch for c in chunks)  # never cut along the batch
    whole = run_to_folder(sweep, tmp_path / "whole")
    parts = run_to_folder(sweep, tmp_path / "parts", memory_budget=budget)
    assert parts.chunks > 1
    for name in ("speculative", "prefix"):
        single = sorted((whole.folder).glob(f"{name}*"))
        assert single, name
        for path in single:
            streamed = parts.folder / path.relative_to(whole.folder)
            if path.is_dir():
                for part in sorted(path.glob("*.parquet")):
                    other = streamed / part.name
                    assert pl.read_parquet(other).equals(pl.read_parquet(part)), part
            else:
                assert pl.read_parquet(streamed).equals(pl.read_parquet(path)), path
