"""Speculation and prefix caching on a replica of ``tp x ep x pp`` devices (the parallel axes
with the speculative and prefix ones in one sweep).

- ``k = 0`` and ``h = 0`` with the parallel axes are the parallel-only numbers exactly: the
  decode and prefill tables of the same grid, and the serving tables of a sweep without the
  techniques.
- ``ep = pp = 1`` (``dp_attention = false``) with speculation and prefix caching is the
  sweep without the parallel axes, every column, bit for bit.
- The verify step's FLOPs and bytes at ``ep = 8`` with data-parallel attention against a plain
  loop over its ``B (k + 1)`` tokens from the per-rank decode tables.
- Hand values: DeepSeek-V3's MTP head per DEP rank, its cache per rank, the verify FLOPs.
- The simulator at ``ep = 8``: a verify step and the MTP draft cost the speculative table's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
import xarray as xr

import sweeps
from sweeps import physics
from sweeps.config import parse_config
from sweeps.engine.drafts import verify_coefficients
from sweeps.grid.build import build_grid
from sweeps.grid.scalar import point_inputs
from sweeps.pipeline.mapping import sweep_from_mapping
from sweeps.studies.serving import served
from sweeps.studies.serving.simulate import step_costs
from sweeps.studies.serving.simulate.speculation import techniques

from .techniques import SERVING_VARIABLES, same

BASE = """
[sweep]
name = "parallel-techniques"

[axes]
model = ["{model}"]
hardware = ["h200"]
tp = {tp}
batch = {batch}
context = {context}
prompt = [512]
kv_dtype = ["{dtype}"]
weight_dtype = ["{dtype}"]
{extra}

[options]
attention_flops = {attention}
"""

SERVING = """
[serving]
prompt_tokens = [512]
output_tokens = [65]
arrival_rate = [2.0]
chunk_tokens = 512
"""

DEP = "ep = [1, 8]\ndp_attention = [false, true]"
PP = "pp = [1, 2]"
ONE = "ep = [1]\ndp_attention = [false]\npp = [1]"
PREFIX = 'prefix_hit_rate = [0.0, 0.5]\nkv_tier = ["hbm", "host"]'


def spec(drafts: str) -> str:
    return f"spec_tokens = [0, 2]\nspec_acceptance = [0.8]\nspec_draft = {drafts}"


# the two layouts: DeepSeek-V3 expert-parallel, a dense model in two pipeline stages
DEEPSEEK = {"model": "deepseek-v3", "tp": "[1, 8]", "dtype": "fp8"}
LLAMA = {"model": "llama-3.1-8b", "tp": "[1]", "dtype": "bf16"}
DRAFTS = {"deepseek-v3": '["ngram", "mtp"]', "llama-3.1-8b": '["ngram", "mtp", "llama-3.2-1b"]'}


@cache
def grid(
    case: str,
    extra: str,
    serving: bool = True,
    batch: str = "[1, 64]",
    context: str = "[2048]",
    attention: str = "true",
) -> xr.Dataset:
    shape = DEEPSEEK if case == "deepseek-v3" else LLAMA
    text = BASE.format(batch=batch, context=context, extra=extra, attention=attention, **shape) + (
        SERVING if serving else ""
    )
    return build_grid(parse_config(text))


def layout(case: str) -> str:
    return DEP if case == "deepseek-v3" else PP


def techniques_of(case: str) -> str:
    return spec(DRAFTS[case]) + "\n" + PREFIX


CASES = ["deepseek-v3", "llama-3.1-8b"]


@pytest.mark.parametrize("case", CASES)
def test_k0_and_h0_with_the_parallel_axes_are_the_parallel_only_numbers(case: str) -> None:
    both = grid(case, layout(case) + "\n" + techniques_of(case))
    assert "ep" in both["verify_time_s"].dims
    assert "pp" in both["prefix_ttft_s"].dims
    at = both.sel(spec_tokens=0, spec_draft="ngram")
    for verify, plain in (
        ("verify_flops", "flops"),
        ("verify_bytes", "bytes"),
        ("verify_time_s", "step_time_s"),
        ("spec_time_per_output_token_s", "step_time_s"),
        ("spec_tokens_per_s", "tokens_per_s"),
        ("spec_max_batch", "max_batch"),
        ("spec_energy_per_output_token_j", "energy_per_output_token_j"),
    ):
        same(at[verify], both[plain], verify)
    assert (at["speedup"] == 1.0).all()
    assert (both["draft_time_s"].sel(spec_tokens=0) == 0).all()
    hit = both.sel(prefix_hit_rate=0.0)
    for prefix, plain in (
        ("hit_flops", "prefill_flops"),
        ("hit_bytes", "prefill_bytes"),
        ("hit_compute_time_s", "ttft_s"),
        ("prefix_ttft_s", "ttft_s"),
    ):
        same(hit[prefix], both[plain], prefix)
    # the serving tables of the sweep without the techniques
    plain = grid(case, layout(case))
    for draft in DRAFTS[case].strip("[]").replace('"', "").split(", "):
        for tier in ("hbm", "host"):
            one = both.sel(spec_tokens=0, spec_draft=draft, prefix_hit_rate=0.0, kv_tier=tier)
            for name in SERVING_VARIABLES:
                got = one[name]
                if "spec_acceptance" in got.dims:
                    got = got.squeeze("spec_acceptance", drop=True)
                expected = plain[name]
                np.testing.assert_array_equal(
                    got.transpose(*expected.dims).values, expected.values, err_msg=name
                )


@pytest.mark.parametrize("case", CASES)
def test_one_rank_with_the_techniques_is_the_sweep_without_the_parallel_axes(case: str) -> None:
    plain = grid(case, techniques_of(case))
    one = grid(case, ONE + "\n" + techniques_of(case))
    assert {"speedup", "prefix_ttft_s", "tpot_s"} <= set(plain.data_vars)
    for name in plain.data_vars:
        extra = [d for d in ("ep", "dp_attention", "pp") if d in one[name].dims]
        ours = one[name].squeeze(extra, drop=True).transpose(*plain[name].dims)
        a, b = np.asarray(ours.values), np.asarray(plain[name].values)
        if a.dtype == object:
            same_labels = [
                x == y or (x != x and y != y) for x, y in zip(a.flat, b.flat, strict=True)
            ]
            assert all(same_labels), name
        else:
            assert np.array_equal(a, b, equal_nan=True), name  # bit for bit


K, S, B = 2, 2048, 64
"""The verify step of the loop and the hand values: k = 2 drafts, context 2048, batch 64."""


def _dep(ds: xr.Dataset) -> xr.Dataset:
    """The DEP replica of 8 H200: tp 1, ep 8, data-parallel attention."""
    return ds.sel(tp=1, ep=8, dp_attention="true").squeeze()


def test_verify_flops_and_bytes_at_ep_8_equal_a_loop_over_its_tokens() -> None:
    # the per-rank decode tables at the contexts the rows attend, one sequence, and the weights
    # a step of B (k + 1) tokens reads on a rank (the experts the whole batch touches)
    contexts = str(list(range(S, S + K + 1)))
    steps = _dep(grid("deepseek-v3", DEP, False, f"[1, {B * (K + 1)}]", contexts))
    verify = _dep(
        grid("deepseek-v3", DEP + "\n" + spec('["ngram"]'), False, f"[{B}]", f"[{S}]")
    ).sel(spec_tokens=K)
    flops = 0.0
    cache_read = 0.0
    for _sequence in range(B):
        for row in range(K + 1):
            flops += float(steps["flops"].sel(batch=1, context=S + row))
        cache_read += float(steps["kv_bytes_per_sequence_device"].sel(context=S + K))
    weights = float(steps["weights_read_bytes"].sel(batch=B * (K + 1)))
    assert float(verify["verify_flops"]) == pytest.approx(flops, rel=1e-12)
    assert float(verify["verify_bytes"]) == pytest.approx(weights + cache_read, rel=1e-12)
    # the same 8 devices as tp 8 share the step's FLOPs alike; a rank reads 1/8 of the caches
    tp8 = grid("deepseek-v3", DEP + "\n" + spec('["ngram"]'), False, f"[{B}]", f"[{S}]")
    tp8 = tp8.sel(tp=8, ep=1, dp_attention="false", spec_tokens=K).squeeze()
    assert float(verify["verify_flops"]) == pytest.approx(float(tp8["verify_flops"]), rel=1e-12)
    dep_cache = float(steps["kv_bytes_per_sequence_device"].sel(context=S + K))
    tp8_steps = grid("deepseek-v3", DEP, False, f"[1, {B * (K + 1)}]", contexts)
    tp8_cache = tp8_steps["kv_bytes_per_sequence_device"].sel(tp=8, ep=1, dp_attention="false")
    assert dep_cache == pytest.approx(float(tp8_cache.sel(context=S + K).squeeze()) / 8, rel=1e-12)


def test_hand_values_of_deepseek_v3_mtp_on_a_dep_rank() -> None:
    ds = _dep(
        grid("deepseek-v3", DEP + "\n" + spec('["mtp"]'), False, f"[{B}]", f"[{S}]", "false")
    ).sel(spec_tokens=K)
    # the MTP head is the mean layer, (P - 2 V h) / L, its routed experts E (P - P_act) /
    # (L (E - k)); a DEP rank holds the rest whole and 1/8 of those (fp8: a byte each)
    p, p_act, v, h, layers = 671_026_419_200, 37_552_297_472, 129_280, 7_168, 61
    total = (p - 2 * v * h) / layers
    routed = 256 * (p - p_act) / (layers * (256 - 8))
    assert float(ds["draft_weight_bytes"]) == pytest.approx(total - routed + routed / 8, rel=1e-12)
    # its cache: one layer's latent, 576 fp8 elements a token, of a rank's own sequences (1/8)
    assert float(ds["draft_kv_bytes_per_sequence"]) == pytest.approx(576 * (S + K) / 8, rel=1e-12)
    # the verify step without attention FLOPs: B (k + 1) tokens of 2 (P_act - V h), over 8 GPUs
    assert float(ds["verify_flops"]) == pytest.approx(B * 3 * 2 * (p_act - v * h) / 8, rel=1e-12)
    e = float(ds["expected_tokens"])
    assert e == pytest.approx(1 + 0.8 + 0.64, rel=1e-12)
    t_d, t_v, t_m = (float(ds[n]) for n in ("step_time_s", "verify_time_s", "draft_time_s"))
    assert float(ds["speedup"]) == pytest.approx(t_d * e / (t_v + t_m), rel=1e-12)
    assert float(ds["spec_time_per_output_token_s"]) == pytest.approx((t_v + t_m) / e, rel=1e-12)


def _mapping(draft: str) -> dict[str, Any]:
    return {
        "sweep": {"name": "simulate-dep"},
        "axes": {
            "model": ["deepseek-v3"], "hardware": ["h200"], "tp": [1], "ep": [8],
            "dp_attention": [True], "batch": [32], "context": [1024], "prompt": [1024],
            "kv_dtype": ["fp8"], "weight_dtype": ["fp8"], "spec_tokens": [3],
            "spec_acceptance": [0.8], "spec_draft": [draft],
        },
        "options": {"attention_flops": True},
        "serving": {"prompt_tokens": [1024], "output_tokens": [129], "arrival_rate": [1.0],
                    "chunk_tokens": 4096},
    }  # fmt: skip


@pytest.mark.parametrize("draft", ["ngram", "mtp"])
def test_the_simulator_at_ep_8_verifies_and_drafts_as_the_speculative_table(draft: str) -> None:
    ds = sweeps.run(_mapping(draft))
    x = point_inputs(sweep_from_mapping(_mapping(draft)))
    extra = techniques(x, 2048, 32)
    costs = step_costs(x, 2048, 32 * extra.rows)
    verify = physics.roofline_time(
        32 * extra.verify_flops[1024],
        costs.weights[32 * extra.rows] + 32 * extra.verify_cache[1024],
        costs.peak,
        costs.bandwidth,
    )
    at = ds.sel(batch=32, context=1024).squeeze()
    assert not bool(at["link_bound"])  # the simulator leaves the link out: it bounds nothing
    assert verify == pytest.approx(float(at["verify_time_s"]), rel=1e-12)
    assert (extra.draft_passes > 0) == (draft == "mtp")
    drafted = 0.0
    for _ in range(extra.draft_passes):  # an MTP pass a draft token, each at the context
        drafted += physics.roofline_time(
            32 * extra.draft_flops[1024],
            extra.draft_weights[32] + 32 * extra.draft_cache[1024],
            costs.peak,
            costs.bandwidth,
        )
    assert drafted == pytest.approx(float(at["draft_time_s"]), rel=1e-12, abs=0.0)
    # and the serving tables' verify step and draft, the same per-rank terms in closed form
    local = physics.kv_cached_layer_tokens(1024.0, 1, 1, x["_window"])
    served_step = served.verify_time(x, 32.0, 1024.0, local)
    assert float(served_step) == pytest.approx(verify + drafted, rel=1e-12)
    # the FLOPs too (a memory-bound step would hide them): one attention peak runs both here
    assert float(x["_attention_ratio"]) == 1.0
    flops, _ = verify_coefficients(x, 32.0, 3.0)
    table = float(at["verify_flops"])
    assert 32 * extra.verify_flops[1024] == pytest.approx(table, rel=1e-12)
    assert float(flops[0] + flops[1] * 1024 + flops[2] * local) == pytest.approx(table, rel=1e-12)


def test_at_pp_2_the_last_stage_drafts_both_micro_batches_with_the_whole_head() -> None:
    # a dense model in two stages: the draft (MTP head, or a draft model) sits whole on the
    # last stage and drafts its two micro-batches of B / 2 in turn: twice one stage's B / 2
    ds = grid("llama-3.1-8b", PP + "\n" + spec(DRAFTS["llama-3.1-8b"]), False, "[32, 64]")
    ds = ds.sel(spec_tokens=K).squeeze()
    for draft in ("mtp", "llama-3.2-1b"):
        at = ds.sel(spec_draft=draft)
        two, one = at.sel(pp=2, batch=64), at.sel(pp=1, batch=32)
        assert float(two["draft_time_s"]) == pytest.approx(
            2 * float(one["draft_time_s"]), rel=1e-12
        )
        for held in ("draft_weight_bytes", "draft_kv_bytes_per_sequence"):
            assert float(two[held]) == float(one[held]), held  # not halved with the layers
    # the target's own weights and caches are halved per device
    halves = ds.sel(spec_draft="ngram", batch=64)
    assert float(halves["weight_bytes"].sel(pp=2)) == pytest.approx(
        float(halves["weight_bytes"].sel(pp=1)) / 2, rel=1e-12
    )
