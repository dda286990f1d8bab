"""Bounds that are bounds (issue 11): the grid counts only work the hardware does.

Check values from docs/cost-model.md sections 3-5, through the whole grid (the physics terms
are pinned one by one in tests/test_physics.py).
"""

from __future__ import annotations

import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.grid import build_grid

LLAMA3_8B = """
[sweep]
name = "bounds"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1]
context = [8192]
prompt = [2048]
[options]
attention_flops = {attention}
"""


def _one(ds: xr.Dataset, name: str) -> float:
    return float(ds[name].squeeze())


@pytest.fixture(scope="module")
def llama() -> dict[bool, xr.Dataset]:
    return {
        a: build_grid(parse_config(LLAMA3_8B.format(attention=str(a).lower())))
        for a in (False, True)
    }


def test_d1_decode_reads_b_rows_of_the_input_embedding(llama: dict[bool, xr.Dataset]) -> None:
    # W_read(1) - V h wb + 1 h wb + KV_seq: 2 P = 16,060,522,496, V h wb = 1,050,673,152,
    # one row 4096 * 2 = 8,192, KV_seq(8192) = 2**30
    expected = 16_060_522_496 - 1_050_673_152 + 8_192 + 2**30
    assert _one(llama[True], "bytes") == expected
    assert _one(llama[True], "weights_read_bytes") == 16_060_522_496 - 1_050_673_152 + 8_192
    # the memory wall still holds every weight
    assert _one(llama[True], "weight_bytes") == 16_060_522_496


def test_d1_decode_flops_skip_the_lookup(llama: dict[bool, xr.Dataset]) -> None:
    # 2 (P - V h) per sequence: 2 * (8,030,261,248 - 525,336,576)
    assert _one(llama[False], "flops") == 2 * (8_030_261_248 - 525_336_576)
    # the 8k ceiling: 13.98 with attention off, 17.98 with it on (14.96 in the note's form)
    assert round(_one(llama[False], "ceiling"), 2) == 13.98
    assert round(_one(llama[True], "ceiling"), 2) == 17.98


def test_d2_prefill_runs_the_lm_head_for_the_last_token_only(
    llama: dict[bool, xr.Dataset],
) -> None:
    # 2 N (P - 2 V h) + 2 V h + attention 2 L H d N**2 at N = 2048, B = 1
    linear = 2 * 2048 * (8_030_261_248 - 2 * 525_336_576) + 2 * 525_336_576
    attention = 2 * 32 * 32 * 128 * 2048**2
    assert _one(llama[True], "prefill_flops") == pytest.approx(linear + attention, rel=1e-12)
    assert _one(llama[True], "prefill_flops") == pytest.approx(2.9689e13, rel=1e-4)
    assert _one(llama[True], "ttft_s") == pytest.approx(0.030007, rel=1e-4)  # was 34.35 ms


def test_d3_mla_prefill_takes_the_non_absorbed_form() -> None:
    text = """
[sweep]
name = "mla"
[axes]
model = ["deepseek-v3"]
hardware = ["h200"]
tp = [8]
batch = [1]
context = [4096]
prompt = [2048]
weight_dtype = ["fp8"]
[options]
compute_dtype = "fp8"
"""
    ds = build_grid(parse_config(text))
    # linear layers: 2 N (P_act - 2 V h) + 2 V h, V h = 129,280 * 7168 = 926,679,040
    n, vh = 2048, 926_679_040
    linear = 2 * n * (37_552_297_472 - 2 * vh) + 2 * vh
    # attention, non-absorbed: 2 H (d_qk + d_v) = 2 * 128 * (192 + 128) = 81,920 FLOP a pair
    # (3.4x fewer than the absorbed 2 * 128 * (2 * 512 + 64) = 278,528), 61 layers * N**2 / 2
    per_pair = 2 * 128 * (192 + 128)
    assert 2 * 128 * 1088 / per_pair == pytest.approx(3.4)
    expected = (linear + per_pair * 61 * n * n / 2) / 8
    assert _one(ds, "prefill_flops") == pytest.approx(expected, rel=1e-12)
    # decode keeps the absorbed form against the latent: 2 * 128 * 1088 a cached token-layer
    decode = 2 * (37_552_297_472 - vh) + 2 * 128 * 1088 * 61 * 4096
    assert _one(ds, "flops") == pytest.approx(decode / 8, rel=1e-12)


def test_the_notes_abstract_form_is_kept_without_a_vocabulary() -> None:
    text = """
[sweep]
name = "note"
[models.abstract]
params = 8e9
layers = 32
heads = 32
kv_heads = 8
head_dim = 128
[axes]
model = ["abstract"]
hardware = ["h100-sxm"]
batch = [1]
context = [8192]
prompt = [2048]
[options]
attention_flops = false
"""
    ds = build_grid(parse_config(text))
    assert _one(ds, "flops") == 2 * 8e9
    assert _one(ds, "weights_read_bytes") == 16e9
    assert _one(ds, "prefill_flops") == 2 * 2048 * 8e9


def test_d4_fp8_weights_run_the_fp8_peak_by_default() -> None:
    text = """
[sweep]
name = "fp8"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm"]
batch = { start = 1, stop = 4096, geometric = true }
context = [128]
kv_dtype = ["fp8"]
weight_dtype = ["fp8"]
[options]
compute_dtype = "{compute}"
attention_dtype = "gemm"
"""
    best = {}  # one peak runs GEMMs and attention: the GEMM format's peak is what moves
    for compute in ("auto", "bf16"):
        ds = build_grid(parse_config(text.replace("{compute}", compute)))
        assert str(ds["compute_dtype"].values.reshape(-1)[0]) == (
            "fp8" if compute == "auto" else "bf16"
        )
        best[compute] = float(ds["tokens_per_s"].where(ds["feasible"]).max())
    # compute-bound at the best batch: the roof is the peak, 1978.9 against 989.4 TFLOP/s
    assert best["auto"] / best["bf16"] == pytest.approx(1978.9 / 989.4, rel=1e-12)
    # 2 (P - V h) + attention at 128 tokens a sequence per token: 1978.9e12 / 15.077e9
    assert best["auto"] == pytest.approx(131_253.27, rel=1e-6)


def test_d4_a_device_without_the_formats_peak_runs_it_at_bf16() -> None:
    text = """
[sweep]
name = "a100"
[axes]
model = ["llama-3-8b"]
hardware = ["a100-80gb", "h100-sxm"]
batch = [1]
context = [512]
weight_dtype = ["fp8", "int4", "bf16"]
"""
    ds = build_grid(parse_config(text))
    table = {
        (str(h), str(w)): str(ds["compute_dtype"].sel(hardware=h, weight_dtype=w).values)
        for h in ds["hardware"].values
        for w in ds["weight_dtype"].values
    }
    # fp8 on Ampere is weight-only (dequantized to bf16); int4 weight-only runs bf16 GEMMs
    assert table[("a100-80gb", "fp8")] == "bf16"
    assert table[("h100-sxm", "fp8")] == "fp8"
    assert table[("h100-sxm", "int4")] == "bf16"
    assert table[("h100-sxm", "bf16")] == "bf16"


def test_deepseek_v3_fp8_prefill_at_32k_on_eight_h200() -> None:
    text = """
[sweep]
name = "ds"
[axes]
model = ["deepseek-v3"]
hardware = ["h200"]
tp = [8]
batch = [1]
context = [32768]
prompt = [32768]
weight_dtype = ["fp8"]
"""
    # the 0.732 s (absorbed MLA, bf16 roof) is 0.325 s in the non-absorbed form on the
    # fp8 roof, and 0.317 s with the lookup and last-token logits (D2) as well
    one_peak = build_grid(parse_config(text + '[options]\nattention_dtype = "gemm"\n'))
    assert _one(one_peak, "ttft_s") == pytest.approx(0.31725, rel=1e-4)
    # the split: the bf16 cache's attention at the bf16 peak, the fp8 GEMMs at fp8's; the
    # GEMMs are the prefill without attention (compute-bound, so TTFT is the compute roof)
    ds = build_grid(parse_config(text))
    no_attention = build_grid(parse_config(text + "[options]\nattention_flops = false\n"))
    gemm = _one(no_attention, "prefill_flops")
    attention = _one(ds, "prefill_flops") - gemm
    expected = gemm / 1978.9e12 + attention / 989.4e12
    assert _one(ds, "ttft_s") == pytest.approx(expected, rel=1e-9)
    assert _one(ds, "ttft_s") > _one(one_peak, "ttft_s")  # tighter
