"""Acceptance of issue 5 on the real catalog models: MoE, MLA, sliding windows, tensor
parallelism and exact parameter counts. Reference values are worked by hand in the comments.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

from sweeps import physics
from sweeps.catalog import load_catalog, unique
from sweeps.config import parse_config
from sweeps.grid import build_grid

REFERENCE = Path(__file__).resolve().parent / "fixtures" / "reference" / "models.csv"


def _grid(
    models: list[str],
    *,
    hardware: str = "h200",
    batch: list[int] | None = None,
    context: list[int] | None = None,
    tp: list[int] | None = None,
    attention: bool = True,
) -> xr.Dataset:
    text = f"""
[sweep]
name = "arch"
[axes]
model = {models!r}
hardware = [{hardware!r}]
batch = {batch or [1]!r}
context = {context or [4096]!r}
tp = {tp or [1]!r}
[options]
attention_flops = {str(attention).lower()}
"""
    return build_grid(parse_config(text))


def _at(ds: xr.Dataset, name: str, **where: Any) -> float:
    """One value of ``name``; defaults for the dims not given: native KV heads, bf16."""
    da = ds[name]
    where = {"kv_heads": "native", "kv_dtype": "bf16", "weight_dtype": "bf16", **where}
    return float(da.sel({k: v for k, v in where.items() if k in da.dims}).item())


# --- parameter counts -----------------------------------------------------------------------


def test_catalog_params_within_half_a_percent_of_the_reference() -> None:
    rows = {r["id"]: r for r in csv.DictReader(REFERENCE.open(encoding="utf-8"))}
    models = unique(load_catalog().models)
    assert len(models) == 29
    for model in models:
        row = rows[model.aliases[0] if model.aliases else model.id]
        assert model.params == pytest.approx(float(row["params_total_b"]) * 1e9, rel=5e-3)
        assert model.active_params == pytest.approx(float(row["params_active_b"]) * 1e9, rel=5e-3)
        assert model.params == int(model.params)  # exact counts, not rounded billions
        assert "computed from config.json shapes" in model.source


def test_llama3_8b_exact() -> None:
    # the cost model's check value: P = 8,030,261,248 (see test_hf_import for the sum)
    assert load_catalog().lookup_model("llama-3-8b").params == 8_030_261_248


# --- MoE ------------------------------------------------------------------------------------


def test_mixtral_experts_touched_and_weight_bytes() -> None:
    ds = _grid(["mixtral-8x7b"], batch=[1, 8, 64])
    touched = ds["experts_touched"].sel(model="mixtral-8x7b")
    # 8 * (1 - (1 - 2/8)**B): 2 at B = 1, 8 * (1 - 0.75**8) = 7.199 at 8, 7.99999992 at 64
    assert float(touched.sel(batch=1)) == pytest.approx(2.0)
    assert float(touched.sel(batch=8)) == pytest.approx(8 * (1 - 0.75**8))
    assert float(touched.sel(batch=64)) > 7.9
    read = [_at(ds, "weights_read_bytes", model="mixtral-8x7b", tp=1, batch=b) for b in (1, 8, 64)]
    # the input embedding (V = 32,000 rows of 4096) is a gather: B rows are read, not V
    unread = [2 * (32_000 - b) * 4096 for b in (1, 8, 64)]
    # B = 1: the active weights, 12,879,925,248 * 2 bytes = 25,759,850,496, less the unread rows
    assert read[0] == pytest.approx(25_759_850_496 - unread[0])
    # B = 8: active + (P - P_act) * (7.199 - 2) / 6; B = 64: all 46,702,792,704 * 2 (to 1e-7)
    spare = 46_702_792_704 - 12_879_925_248
    expected = 2 * (12_879_925_248 + spare * (8 * (1 - 0.75**8) - 2) / 6)
    assert read[1] == pytest.approx(expected - unread[1])
    assert read[2] == pytest.approx(2 * 46_702_792_704 - unread[2], rel=1e-7)
    assert read[0] < read[1] < read[2]
    # the memory wall holds every expert, whatever the batch
    assert _at(ds, "weight_bytes", model="mixtral-8x7b", tp=1) == 2 * 46_702_792_704


def test_mixtral_flops_and_ceiling_use_active_params() -> None:
    ds = _grid(["mixtral-8x7b"], batch=[1, 64], context=[4096], attention=False)
    # 2 * B * (P_act - V h): the lookup computes nothing; V h = 32,000 * 4096 = 131,072,000
    f_seq = 2 * (12_879_925_248 - 131_072_000)
    assert _at(ds, "flops", model="mixtral-8x7b", tp=1, batch=64, context=4096) == (
        pytest.approx(64 * f_seq)  # 1,631,853,215,744 FLOP
    )
    # ceiling over what a sequence reads: KV_seq = 131,072 * 4096 = 536,870,912, its row 8,192
    ceiling = _at(ds, "ceiling", model="mixtral-8x7b", tp=1, context=4096)
    assert ceiling == pytest.approx(f_seq / (536_870_912 + 8192))
    assert ceiling == pytest.approx(47.492, abs=1e-3)


def test_params_read_split_shared_vs_routed() -> None:
    # DeepSeek-V3: P - P_act = 58 layers * 248 idle experts * 44,040,192 = 633,474,121,728;
    # the shared expert, the router and the 3 dense layers are in P_act and always read.
    p, act = 671_026_419_200, 37_552_297_472
    assert p - act == 58 * 248 * 3 * 7168 * 2048
    read_1 = physics.params_read(p, act, 256, 8, 1)
    read_2 = physics.params_read(p, act, 256, 8, 2)
    # two tokens touch 256 * (1 - (248/256)**2) = 15.75 experts: 7.75 beyond the 8 active
    assert read_1 == pytest.approx(act)
    assert read_2 == pytest.approx(act + 58 * 7.75 * 3 * 7168 * 2048)


# --- MLA ------------------------------------------------------------------------------------


def test_deepseek_v3_latent_cache_and_absorbed_attention() -> None:
    ds = _grid(["deepseek-v3"], hardware="b200", context=[4096], tp=[1, 8])
    # (kv_lora_rank 512 + rope 64) * 2 bytes * 61 layers = 70,272
    assert _at(ds, "kv_bytes_per_token", model="deepseek-v3") == 70_272
    assert _at(ds, "kv_bytes_per_sequence", model="deepseek-v3", context=4096) == 70_272 * 4096
    # absorbed form: 2 * H * (d_qk + d_v) * L * S, d_qk = 512 + 64, d_v = 512:
    # 2 * 128 * 1088 * 61 = 16,990,208 FLOP per cached token; plus 2 (P_act - V h),
    # V h = 129,280 * 7168 = 926,679,040 (the lookup computes nothing)
    f_seq = 2 * (37_552_297_472 - 926_679_040) + 16_990_208 * 4096
    flops = _at(ds, "flops", model="deepseek-v3", tp=1, batch=1, context=4096)
    assert flops == pytest.approx(f_seq)
    # the latent is replicated under tp: per-device KV stays whole, per-device FLOPs / 8; the
    # embedding row a sequence gathers (7168 * 2 bytes) is split with the vocabulary
    kv = 70_272 * 4096
    c1 = _at(ds, "ceiling", model="deepseek-v3", tp=1, context=4096)
    c8 = _at(ds, "ceiling", model="deepseek-v3", tp=8, context=4096)
    assert c1 == pytest.approx(f_seq / (kv + 14_336))
    assert c8 == pytest.approx(f_seq / 8 / (kv + 14_336 / 8))


# --- sliding windows --------------------------------------------------------------------------


def test_gemma2_9b_kv_stops_growing_on_local_layers() -> None:
    contexts = [2048, 4096, 8192, 16384]
    ds = _grid(["gemma-2-9b"], context=contexts)
    kv = [_at(ds, "kv_bytes_per_sequence", model="gemma-2-9b", context=s) for s in contexts]
    # per layer 2 * 8 heads * 256 * 2 bytes = 8,192 B a token; 42 layers -> 344,064 B/token
    assert kv[0] == 344_064 * 2048
    assert kv[1] == 344_064 * 4096
    # past the 4096 window only the 21 global layers grow: 21 * 8192 = 172,032 B/token
    assert kv[2] == 21 * 8192 * 8192 + 21 * 8192 * 4096  # 2,113,929,216
    assert kv[3] - kv[2] == 172_032 * 8192


def test_gpt_oss_20b_kv_stops_growing_on_local_layers() -> None:
    contexts = [64, 128, 1024, 131072]
    ds = _grid(["gpt-oss-20b"], context=contexts)
    kv = [_at(ds, "kv_bytes_per_sequence", model="gpt-oss-20b", context=s) for s in contexts]
    # 2 * 8 * 64 * 2 = 2,048 B a layer a token; 24 layers = 49,152 B/token up to the window
    assert kv[0] == 49_152 * 64
    assert kv[1] == 49_152 * 128
    # beyond 128: 12 full layers grow, 12 sliding layers hold 128 tokens
    assert kv[2] == 12 * 2048 * 1024 + 12 * 2048 * 128  # 28,311,552
    assert (kv[3] - kv[2]) / (131072 - 1024) == 24_576


def test_mistral_window_caps_every_layer() -> None:
    ds = _grid(["mistral-7b"], context=[4096, 32768])
    # 131,072 B/token * 4096 = 512 MiB, whatever the context beyond the window
    assert _at(ds, "kv_bytes_per_sequence", model="mistral-7b", context=32768) == 2**29


# --- tensor parallelism -----------------------------------------------------------------------


def test_llama3_70b_needs_two_h200() -> None:
    ds = _grid(["llama-3-70b"], context=[8192], tp=[1, 2], batch=[1])
    # W = 70,553,706,496 * 2 = 141.1 GB > 143,771 MiB * 0.9 = 135.7 GB: does not fit on one
    assert _at(ds, "max_batch", model="llama-3-70b", hardware="h200", tp=1, context=8192) == 0
    assert not _at(
        ds, "feasible", model="llama-3-70b", hardware="h200", tp=1, batch=1, context=8192
    )
    # tp = 2: 70.55 GB of weights and KV 327,680 * 8192 / 2 = 1,342,177,280 B a sequence
    # per device: floor((135,679,338,086 - 70,553,706,496) / 1,342,177,280) = floor(48.52) = 48
    assert _at(ds, "max_batch", model="llama-3-70b", hardware="h200", tp=2, context=8192) == 48
    assert _at(ds, "feasible", model="llama-3-70b", hardware="h200", tp=2, batch=1, context=8192)


def test_kv_heads_replicated_beyond_tp() -> None:
    assert np.allclose(physics.kv_shards(np.array([1, 2, 4, 8, 16, 32]), 8), [1, 2, 4, 8, 8, 8])
    assert physics.kv_shards(3, 8) == pytest.approx(8 / 3)  # 3 heads on the busiest device
    assert physics.kv_shards(8, 1) == 1  # MQA / MLA latent: replicated
    ds = _grid(["llama-3-70b"], hardware="b200", context=[8192], tp=[1, 8, 16])
    kv1 = 327_680 * 8192
    # per-device KV: whole at tp 1, an eighth at 8 and still an eighth at 16 (8 KV heads);
    # the gathered embedding row (8192 * 2 bytes) splits with the vocabulary over every rank
    for tp, share in ((1, 1), (8, 8), (16, 8)):
        ceiling = _at(ds, "ceiling", model="llama-3-70b", tp=tp, context=8192)
        f_seq = 2 * (70_553_706_496 - 128_256 * 8192) + 4 * 80 * 64 * 128 * 8192
        assert ceiling == pytest.approx((f_seq / tp) / (kv1 / share + 16_384 / tp))


def test_allreduce_is_separate_from_hbm_bytes() -> None:
    ds = _grid(["llama-3-70b"], context=[8192], tp=[1, 2], batch=[8])
    # 2 all-reduces * 80 layers * 8 tokens * 8192 * 2 bytes * 2 (tp - 1) / tp = 20,971,520
    assert _at(ds, "allreduce_bytes", model="llama-3-70b", tp=2, batch=8) == 20_971_520
    assert _at(ds, "allreduce_bytes", model="llama-3-70b", tp=1, batch=8) == 0
    # HBM bytes per device: weights / 2 (the input table: 8 of its 128,256 rows) + 8 sequences
    # * KV / 2, no all-reduce term
    weights = 2 * (70_553_706_496 - (128_256 - 8) * 8192)
    hbm = _at(ds, "bytes", model="llama-3-70b", tp=2, batch=8, context=8192)
    assert hbm == pytest.approx(weights / 2 + 8 * 327_680 * 8192 / 2)
