"""The speculative and prefix analyses on the grid: against the plain decode and prefill
tables, hand values, a plain loop of decode steps, and bad inputs through the CLI."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from sweeps import physics
from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.errors import ConfigError
from sweeps.grid.build import build_grid

BASE = """
[sweep]
name = "spec"

[axes]
model = {models}
hardware = ["h100-sxm", "h200"]
batch = [1, 4, 16, 64, 256, 1024]
context = [2048, 5000]
{extra}
"""


def grid(models: str = '["llama-3.1-8b"]', extra: str = "", tables: str = "") -> xr.Dataset:
    text = BASE.format(models=models, extra=extra) + tables
    return build_grid(parse_config(text))


SPEC = """
spec_tokens = [0, 1, 4]
spec_acceptance = [0.0, 0.8, 1.0]
spec_draft = ["ngram", "mtp", "llama-3.2-1b"]
"""
PREFIX = """
prefix_hit_rate = [0.0, 0.5, 1.0]
kv_tier = ["hbm", "nvme", "fast"]
"""
FAST = """
[kv_tiers.fast]
bandwidth = 64e9
capacity = 512e9
"""


@pytest.fixture(scope="module")
def spec() -> xr.Dataset:
    # a dense GQA model, a sliding-window one and an MoE one
    return grid('["llama-3.1-8b", "mistral-7b", "mixtral-8x7b"]', SPEC)


@pytest.fixture(scope="module")
def prefix() -> xr.Dataset:
    return grid('["llama-3.1-8b", "mistral-7b", "mixtral-8x7b"]', PREFIX, FAST)


def same(a: Any, b: Any) -> None:
    a, b = xr.broadcast(a, b)
    np.testing.assert_array_equal(a.transpose(*b.dims).values, b.values)


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


# --- prefix caching -----------------------------------------------------------------------------


def test_h0_reproduces_plain_prefill_exactly(prefix: xr.Dataset) -> None:
    at = prefix.sel(prefix_hit_rate=0.0)
    same(at["hit_flops"], prefix["prefill_flops"])
    same(at["hit_bytes"], prefix["prefill_bytes"])
    same(at["hit_compute_time_s"], prefix["ttft_s"])
    same(at["prefix_ttft_s"], prefix["ttft_s"])
    assert (at["reload_bytes"] == 0).all()
    assert at["break_even_bandwidth"].isnull().all()


def test_h1_computes_only_the_logits_row(prefix: xr.Dataset) -> None:
    at = prefix.sel(prefix_hit_rate=1.0)
    logits = 2 * prefix["vocab_size"] * prefix["hidden_size"] * prefix["batch"] / prefix["tp"]
    same(at["hit_flops"], logits.astype(float))
    assert (at["tokens_recomputed"] == 0).all()


def test_break_even_bandwidth_makes_reload_and_recompute_equal() -> None:
    first = grid('["llama-3.1-70b"]', PREFIX, FAST)
    point = first.sel(hardware="h100-sxm", batch=4, prompt=5000, prefix_hit_rate=0.5)
    bandwidth = float(point["break_even_bandwidth"].squeeze())
    tables = f"[kv_tiers.even]\nbandwidth = {bandwidth!r}\n"
    again = grid('["llama-3.1-70b"]', PREFIX.replace('"fast"', '"even"'), tables)
    at = again.sel(hardware="h100-sxm", batch=4, prompt=5000, prefix_hit_rate=0.5, kv_tier="even")
    reload, recompute = (
        float(at["reload_time_s"].squeeze()),
        float(at["recompute_time_s"].squeeze()),
    )
    assert abs(reload - recompute) <= 1e-9 * recompute


def test_break_even_bandwidth_check_value_70b_fp8() -> None:
    # Llama-3 70B, fp8 KV (163,840 bytes a token), fp8 weights on an H100: about 2.3 GB/s
    ds = build_grid(
        parse_config(
            BASE.format(
                models='["llama-3-70b"]',
                extra='kv_dtype = ["fp8"]\nweight_dtype = ["fp8"]\nprefix_hit_rate = [0.999]\n'
                'kv_tier = ["nvme"]\nprompt = [512]\n',
            )
            + "[options]\nattention_flops = false\n"
        )
    )
    kv = float(ds["kv_bytes_per_token"].squeeze())
    assert kv == 163_840
    h100 = ds.sel(hardware="h100-sxm", batch=1)
    bandwidth = float(h100["break_even_bandwidth"].squeeze())
    # by hand: 0.999 of 512 tokens reloaded against the compute-bound prefill of 512 tokens,
    # 2 (P_act - E) a token (the lookup computes nothing) and the last token's logits
    p_act, e = float(ds["active_params"].squeeze()), float(ds["embedding_params"].squeeze())
    logits = float(ds["vocab_size"].squeeze() * ds["hidden_size"].squeeze())
    flops = 2 * 512 * (p_act - e) + 2 * logits
    peak = float(h100["peak_flops"].squeeze())
    assert peak == 1978.9e12
    assert bandwidth == pytest.approx(kv * 0.999 * 512 / (flops / peak), rel=1e-12)
    # the doc's 2.3 GB/s counts 2 P a token; without the lookup's FLOPs it is 3% higher
    assert bandwidth == pytest.approx(kv * peak / (2 * (p_act - e)), rel=2e-3)
    assert bandwidth == pytest.approx(2.3e9, rel=0.035)


def test_tiers_order_reload_times(prefix: xr.Dataset) -> None:
    at = prefix.sel(prefix_hit_rate=0.5)
    assert (at["reload_time_s"].sel(kv_tier="hbm") == 0).all()
    assert (at["reload_time_s"].sel(kv_tier="nvme") > at["reload_time_s"].sel(kv_tier="fast")).all()
    assert (at["prefix_ttft_s"] <= prefix["ttft_s"]).all()
    held = at["prefixes_held"]
    assert held.sel(kv_tier="nvme").isnull().all()  # capacity unknown
    assert (held.sel(kv_tier="fast") > 0).all()


# --- bad inputs -------------------------------------------------------------------------------


BAD = [
    ("spec_tokens = [-1]", "axes.spec_tokens"),
    ("spec_acceptance = [1.5]", "axes.spec_acceptance"),
    ("spec_acceptance = [-0.1]", "axes.spec_acceptance"),
    ('spec_draft = ["llama-3.1-70b"]', "axes.spec_draft[0]: draft model 'llama-3.1-70b'"),
    ('spec_draft = ["no-such-draft"]', "axes.spec_draft[0]"),
    ("prefix_hit_rate = [1.5]", "axes.prefix_hit_rate"),
    ('kv_tier = ["floppy"]', "axes.kv_tier[0]: unknown tier 'floppy'"),
    ('kv_tier = ["slow"]\n\n[kv_tiers.slow]\ncapacity = 1e12', "kv_tiers.slow.bandwidth"),
]


@pytest.mark.parametrize(("extra", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_inputs_are_named(extra: str, message: str) -> None:
    axes, _, tables = extra.partition("\n\n")
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_config(BASE.format(models='["llama-3.1-8b"]', extra=axes) + tables)


@pytest.mark.parametrize("extra", [extra for extra, _ in BAD[:2] + BAD[3:4] + BAD[5:6] + BAD[7:]])
def test_bad_inputs_exit_2_and_write_nothing(extra: str, tmp_path: Path) -> None:
    axes, _, tables = extra.partition("\n\n")
    config = tmp_path / "bad.toml"
    config.write_text(BASE.format(models='["llama-3.1-8b"]', extra=axes) + tables)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(config), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "bad.toml" in result.output
    assert not out.exists() or not any(out.iterdir())


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


def test_host_tier_is_the_devices_host_link() -> None:
    ds = grid('["llama-3.1-8b"]', 'prefix_hit_rate = [0.5]\nkv_tier = ["host", "hbm"]')
    bandwidth = ds["tier_bandwidth"].sel(kv_tier="host")
    assert float(bandwidth.sel(hardware="h100-sxm")) == 64e9  # PCIe Gen5 x16, a direction
    assert ds["tier_bandwidth"].sel(kv_tier="hbm").isnull().all()


def test_host_tier_on_a_device_without_a_host_link_is_named() -> None:
    custom = "[hardware.bare]\npeak_flops = { bf16 = 1e15 }\nbandwidth = 3e12\nmemory = 80e9\n"
    text = BASE.format(models='["llama-3.1-8b"]', extra='kv_tier = ["host"]') + custom
    text = text.replace('["h100-sxm", "h200"]', '["bare"]')
    with pytest.raises(ConfigError, match=r"axes.kv_tier\[0\]: 'host' needs .* 'bare'"):
        parse_config(text)


# --- serving with speculation and prefix caching ---------------------------------------------

SERVED = """
[sweep]
name = "served"
[axes]
model = ["llama-3.1-70b"]
hardware = ["h200"]
tp = [1, 2]
batch = [1, 8, 32]
context = [2048]
weight_dtype = ["fp8"]
kv_dtype = ["fp8"]
{extra}
[serving]
prompt_tokens = [1024]
output_tokens = [129]
arrival_rate = [1.0, 8.0]
chunk_tokens = 0
"""
TECHNIQUES = (
    'spec_tokens = [0, 3]\nspec_acceptance = [0.8]\nspec_draft = ["ngram", "llama-3.1-8b"]\n'
    'prefix_hit_rate = [0.0, 0.9]\nkv_tier = ["hbm", "nvme"]'
)


@pytest.fixture(scope="module")
def served() -> tuple[xr.Dataset, xr.Dataset]:
    plain = build_grid(parse_config(SERVED.format(extra="")))
    return plain, build_grid(parse_config(SERVED.format(extra=TECHNIQUES)))


SERVING_VARIABLES = (
    "serving_ttft_s",
    "tpot_s",
    "request_latency_s",
    "output_tokens_per_s_per_device",
    "serving_feasible",
    "meets_slo",
    "pools_ttft_s",
    "pools_tpot_s",
    "devices",
    "pools_cost_per_million_output_tokens_usd",
)


def test_k0_and_h0_reproduce_plain_serving_exactly(served: tuple[xr.Dataset, xr.Dataset]) -> None:
    plain, both = served
    for draft in ("ngram", "llama-3.1-8b"):
        for tier in ("hbm", "nvme"):
            at = both.sel(spec_tokens=0, spec_draft=draft, prefix_hit_rate=0.0, kv_tier=tier)
            for name in SERVING_VARIABLES:
                expected = plain[name]
                got = at[name]
                if "spec_acceptance" in got.dims:
                    got = got.squeeze("spec_acceptance", drop=True)
                np.testing.assert_array_equal(
                    got.transpose(*expected.dims).values, expected.values, err_msg=name
                )


def test_speculation_changes_tpot_and_a_hit_changes_ttft(
    served: tuple[xr.Dataset, xr.Dataset],
) -> None:
    _, both = served
    colocated = both.sel(
        mode="serial-prefill", prefix_hit_rate=0.0, kv_tier="hbm", spec_draft="ngram"
    )
    assert (colocated["tpot_s"].sel(spec_tokens=3) < colocated["tpot_s"].sel(spec_tokens=0)).all()
    hit = both.sel(mode="serial-prefill", spec_tokens=0, spec_draft="ngram")
    fast = hit["serving_ttft_s"].sel(prefix_hit_rate=0.9, kv_tier="hbm")
    assert (fast < hit["serving_ttft_s"].sel(prefix_hit_rate=0.0, kv_tier="hbm")).all()
    # a draft model's weights and cache lower the memory wall the serving table checks
    assert (
        both["serving_feasible"].sel(spec_draft="llama-3.1-8b", spec_tokens=3)
        <= both["serving_feasible"].sel(spec_draft="ngram", spec_tokens=3)
    ).all()
    # chunked prefill with speculation is not modelled: null, never a number
    assert "chunked" not in both["mode"].values  # chunk_tokens = 0 here


def test_cheapest_plans_say_whether_speculation_and_a_tier_are_in_the_plan(
    served: tuple[xr.Dataset, xr.Dataset],
) -> None:
    from sweeps.pipeline.plans import cheapest_plans

    plans = cheapest_plans(served[1])
    for column in ("spec_acceptance", "prefix_hit_rate", "spec_tokens", "spec_draft", "kv_tier"):
        assert column in plans.columns
    assert "energy_per_output_token_j" in plans.columns
    assert plans.height == 2 * 2  # two rates x two hit rates, at one acceptance


def _simulate_colocated(
    batch: int, output: int, step: float, prefill: float, k: int, alpha: float, seed: int
) -> tuple[float, float]:
    """Continuous batching step by step: ``batch`` slots, each new prompt prefilled alone
    (the decodes wait), each verify step of ``step`` seconds advancing every slot by its
    accepted drafts plus one (at most ``k + 1``, at most what it still needs). Returns the
    request rate [request/s] and the mean TPOT [s]."""
    rng = np.random.default_rng(seed)
    clock = 0.0
    left = [1 + (slot * (output - 1)) // batch for slot in range(batch)]  # staggered slots
    started = [0.0] * batch
    tpots: list[float] = []
    done = 0
    while done < 6000:
        for slot in range(batch):
            if left[slot] == 0:  # refill: the prefill gives the first token
                clock += prefill
                left[slot], started[slot] = output - 1, clock
        clock += step
        for slot in range(batch):
            accepted = 0
            while accepted < k and rng.random() < alpha:
                accepted += 1
            left[slot] = max(left[slot] - (accepted + 1), 0)
            if left[slot] == 0:
                tpots.append((clock - started[slot]) / (output - 1))
                done += 1
    warm = 2 * batch  # the staggered first requests are partial
    return done / clock, float(np.mean(tpots[warm:]))


@pytest.mark.parametrize("draft", ["ngram", "llama-3.1-8b"])
def test_serving_with_speculation_agrees_with_a_step_loop(
    served: tuple[xr.Dataset, xr.Dataset], draft: str
) -> None:
    # the speculative step costs from the grid, replayed step by step with random acceptance
    # in a plain loop of its own (sweeps.simulate holds the closed forms to 0.5 %:
    # tests/test_simulate_techniques.py): the closed forms must agree
    _, both = served
    k, alpha, output = 3, 0.8, 129
    e = (1 - alpha ** (k + 1)) / (1 - alpha)
    for batch in (8, 32):
        at = both.sel(
            mode="serial-prefill", spec_tokens=k, spec_draft=draft, prefix_hit_rate=0.0,
            kv_tier="hbm", tp=2, batch=batch,
        ).squeeze()  # fmt: skip
        # a verify step: the token time over the verify steps per token, n / (O - 1)
        steps = float(physics.verify_steps(output - 1, k, alpha)) / (output - 1)
        token = float(at["step_time_steady_s"]) / steps / e
        prefill = float(at["serving_ttft_s"])  # serial-prefill: t_p(1, I)
        rate, tpot = _simulate_colocated(batch, output, token * e, prefill, k, alpha, seed=batch)
        closed_rate = float(at["output_tokens_per_s_per_device"]) * 2 / output
        assert rate == pytest.approx(closed_rate, rel=0.01)  # the serving tests' tolerance
        # the same loop without speculation against the plain closed form: speculation adds
        # no error of its own beyond 1 %
        plain_rate, plain_tpot = _simulate_colocated(batch, output, token, prefill, 0, 0.0, 0)
        closed_tpot = float(at["tpot_s"])
        plain_closed = float(physics.serial_prefill_tpot(batch, output, token, prefill))
        assert plain_rate == pytest.approx(
            float(physics.colocated_request_rate(batch, output, token, prefill)), rel=0.01
        )
        assert tpot / closed_tpot == pytest.approx(plain_tpot / plain_closed, rel=0.01)
        assert tpot == pytest.approx(closed_tpot, rel=0.03)
