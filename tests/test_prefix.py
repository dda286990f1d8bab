"""The prefix-caching analysis on the grid (``studies/prefix/prefix.py``): against the plain
prefill table, the break-even tier bandwidth by hand and by a second grid, and the tiers."""

from __future__ import annotations

import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.grid.build import build_grid

from .techniques import BASE, FAST, PREFIX, grid, same


@pytest.fixture(scope="module")
def prefix() -> xr.Dataset:
    return grid('["llama-3.1-8b", "mistral-7b", "mixtral-8x7b"]', PREFIX, FAST)


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


def test_host_tier_is_the_devices_host_link() -> None:
    ds = grid('["llama-3.1-8b"]', 'prefix_hit_rate = [0.5]\nkv_tier = ["host", "hbm"]')
    bandwidth = ds["tier_bandwidth"].sel(kv_tier="host")
    assert float(bandwidth.sel(hardware="h100-sxm")) == 64e9  # PCIe Gen5 x16, a direction
    assert ds["tier_bandwidth"].sel(kv_tier="hbm").isnull().all()


def test_a_table_named_like_a_built_in_tier_replaces_it_whole() -> None:
    """A user's [kv_tiers.hbm] took its bandwidth for the reload but kept the built-in tier's
    HBM capacity and null tier_bandwidth (half of each); it is now the user's table in every
    column, the same as that table under another name."""
    tiers = PREFIX.replace(', "fast"', "")
    mine = grid('["llama-3.1-8b"]', tiers, FAST.replace("[kv_tiers.fast]", "[kv_tiers.hbm]"))
    other = grid('["llama-3.1-8b"]', PREFIX, FAST)
    user, same_table = mine.sel(kv_tier="hbm"), other.sel(kv_tier="fast")
    for name in ("tier_bandwidth", "reload_time_s", "hit_time_s", "prefixes_held"):
        same(user[name], same_table[name], name)
    assert (user["tier_bandwidth"] == 64e9).all()
    assert (user.sel(prefix_hit_rate=0.5)["reload_time_s"] > 0).all()
    # the built-in hbm tier, beside it, is still in device memory: nothing to reload
    built_in = other.sel(kv_tier="hbm")
    assert built_in["tier_bandwidth"].isnull().all()
    assert (built_in["reload_time_s"] == 0).all()
