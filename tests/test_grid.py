"""The grid: the note's numbers end to end, the registry, and the vectorized grid against a
plain scalar Python loop over the same points."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.grid import DECODE_DIMS, PREFILL_DIMS, REGISTRY, build_grid
from sweeps.views import summarize

from .conftest import NOTE_CONFIG


def _grid(text: str) -> xr.Dataset:
    return build_grid(parse_config(text))


def test_note_table_through_the_grid() -> None:
    ds = _grid(NOTE_CONFIG)
    ai = ds["arithmetic_intensity"].squeeze(drop=True).transpose("context", "batch")
    np.testing.assert_array_equal(
        np.round(ai.sel(context=8000).values, 2), [0.94, 8.0, 12.8, 15.06]
    )
    np.testing.assert_array_equal(
        np.round(ai.sel(context=512).values, 2), [1.0, 15.04, 50.96, 126.48]
    )
    ceiling = ds["ceiling"].squeeze(drop=True)
    assert round(float(ceiling.sel(context=8000)), 2) == 16.0
    assert round(float(ceiling.sel(context=512)), 2) == 250.0
    # knee batch W/KV_seq: 16e9/1e9 = 16 and 16e9/0.064e9 = 250
    knee = ds["knee_batch"].squeeze(drop=True)
    assert float(knee.sel(context=8000)) == pytest.approx(16.0)
    assert float(knee.sel(context=512)) == pytest.approx(250.0)


LLAMA = """
[sweep]
name = "llama"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm", "h200"]
batch = [1, 8, 64]
context = [8192]
[options]
attention_flops = false
"""


def test_llama3_8b_from_the_catalog() -> None:
    ds = _grid(LLAMA)
    assert float(ds["kv_bytes_per_token"].squeeze()) == 131072
    assert float(ds["kv_bytes_per_sequence"].squeeze()) == 2**30
    # 2 (P - V h) / (2**30 + h wb): the lookup computes nothing (V h = 525,336,576) and a
    # sequence reads its own embedding row; 14.96 in the note's form, which counts it as 2 P
    assert round(float(ds["ceiling"].squeeze()), 2) == 13.98
    ridge = ds["ridge_point"].sel(weight_dtype="bf16")  # bf16 weights run the bf16 peak
    assert round(float(ridge.sel(hardware="h100-sxm")), 1) == 295.3
    assert round(float(ridge.sel(hardware="h200")), 1) == 206.1
    # memory-bound at every batch, and the ridge batch does not exist
    assert (ds["bottleneck"] == 0).all()
    assert ds["ridge_batch"].isnull().all()
    assert ds["bottleneck"].attrs["flag_meanings"] == "memory-bound compute-bound"


def test_llama3_8b_max_batch_on_h100() -> None:
    # (0.9 * 80 GiB - 2 * 8.03e9) / 2**30 = 57.04 -> 57 sequences of 8k
    ds = _grid(LLAMA)
    assert int(ds["max_batch"].sel(hardware="h100-sxm").squeeze()) == 57
    feasible = ds["feasible"].sel(hardware="h100-sxm").squeeze()
    assert feasible.values.tolist() == [True, True, False]  # batch 1, 8 fit; 64 does not


def test_llama3_70b_does_not_fit_one_h200_at_32k() -> None:
    ds = _grid("""
[sweep]
name = "big"
[axes]
model = ["llama-3-70b"]
hardware = ["h200"]
context = [32768]
""")
    # weights alone 2 * 70.554e9 = 141.1e9 bytes > 0.9 * 150.75e9 (143,771 MiB)
    assert not ds["feasible"].any()
    assert not ds["prefill_feasible"].any()
    assert int(ds["max_batch"].squeeze()) == 0
    summary = summarize(ds)
    assert summary["fits"].to_list() == [False]


def test_summary_rows_counts_the_summary_without_building_it() -> None:
    from sweeps.views.summary import summary_rows

    ds = _grid(
        LLAMA.replace("batch = [1, 8, 64]", 'batch = [1, 8, 64]\nkv_dtype = ["bf16", "fp8"]')
    )
    assert summary_rows(ds) == summarize(ds).height == 2 * 2 * ds.sizes["context"]
    one = ds.isel(hardware=slice(0, 1), kv_dtype=slice(1, 2))
    assert summary_rows(one) == summarize(one).height == ds.sizes["context"]


def test_every_variable_is_registered_with_a_unit() -> None:
    ds = _grid(LLAMA)
    for name in list(ds.data_vars) + list(ds.coords):
        entry = REGISTRY.get(str(name))
        assert entry is not None, f"{name} missing from the registry"
        assert entry.unit
        assert entry.description
        if name in ds.data_vars:
            assert ds[name].attrs["units"] == entry.unit
            assert ds[name].attrs["long_name"] == entry.description


def test_low_rank_variables_keep_their_dimensions() -> None:
    ds = _grid(LLAMA)
    assert ds["weight_bytes"].dims == ("model", "tp", "weight_dtype")
    assert ds["kv_bytes_per_sequence"].dims == ("model", "context", "kv_heads", "kv_dtype")
    assert ds["ridge_point"].dims == ("hardware", "weight_dtype")  # the peak the weights run at
    # the ceiling counts the embedding row a sequence gathers, in the weights' format
    assert ds["ceiling"].dims == ("model", "tp", "context", "kv_heads", "kv_dtype", "weight_dtype")
    assert ds["step_time_s"].dims == DECODE_DIMS
    assert ds["ttft_s"].dims == PREFILL_DIMS


# --- the vectorized grid equals a scalar loop -----------------------------------------------

LOOP = """
[sweep]
name = "loop"
[axes]
model = ["llama-3-8b", "mistral-7b", "mixtral-8x7b", "falcon-7b"]
hardware = ["h100-sxm", "h200", "mi300x"]
tp = [1, 2, 3]
batch = { start = 1, stop = 512, geometric = true }
context = [512, 4096, 8192, 32768]
prompt = [128, 2048, 8192, 32768]
kv_heads = ["native", 1]
kv_dtype = ["bf16", "fp8", "int4"]
weight_dtype = ["bf16", "fp8"]
[options]
memory_reserve = 0.05
"""


def _kv_share(h: int, tp: int) -> float:
    """Share of one sequence's KV cache on the busiest device: deal the ``h`` KV heads out to
    ``tp`` devices in turn and count the most any device got (devices past the ``h``-th hold a
    replica of one head, which is no more than that)."""
    held = [0] * tp
    for head in range(h):
        held[head % tp] += 1
    return max(held) / h


def _peak(hw, weight) -> float:  # type: ignore[no-untyped-def]
    """The compute dtype that runs ``weight`` on ``hw``: the format's own tensor cores (fp8
    weights on fp8 peaks), bf16 where the device has none (cost-model.md section 5)."""
    return (
        hw.peak_flops[weight.compute] if weight.compute in hw.peak_flops else hw.peak_flops["bf16"]
    )


def _attention_peak(hw, kv) -> float:  # type: ignore[no-untyped-def]
    """Attention runs on the cache: at the KV format's peak, bf16 where the device has none
    (cost-model.md section 5.1, ``attention_dtype = "auto"``)."""
    return hw.peak_flops[kv.compute] if kv.compute in hw.peak_flops else hw.peak_flops["bf16"]


def _moe_root(slope: float, m, wb: float, table: float) -> float:  # type: ignore[no-untyped-def]
    """The batch ``B`` with ``slope B`` equal to the weight bytes a step of ``B`` reads (but the
    lookup table), by bisection: a MoE reads the experts its batch touches, a dense model all;
    the knee at ``slope = KV_seq``, the ridge at ``(F_seq - R KV_seq) / R``."""
    e, k = m.experts, m.experts_per_token

    def read(b: float) -> float:
        if e <= k:
            return (m.params - table) * wb
        touched = e * (1 - (1 - k / e) ** b)
        return (
            m.active_params - table + (m.params - m.active_params) * (touched - k) / (e - k)
        ) * wb

    lo, hi = 0.0, (m.params - table) * wb / slope
    if e <= k:
        return hi
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if slope * mid >= read(mid) else (mid, hi)
    return (lo + hi) / 2


def _scalar_point(m, hw, tp, b, s, label, kv, weight, reserve, attention):  # type: ignore[no-untyped-def]
    wb, kvb = weight.bytes_per_element, kv.bytes_per_element
    """The cost model for one point, in plain Python floats, written from cost-model.md."""
    h = m.kv_heads if label == "native" else int(label)
    window = m.sliding_window if m.sliding_window else math.inf
    per_layer = 2 * h * m.head_dim  # K and V elements per token per layer
    # cached token-layers: full layers hold s, local layers min(s, window)
    lt = (m.layers - m.local_layers) * s + m.local_layers * min(s, window)
    kv_seq = per_layer * kvb * lt * _kv_share(h, tp)
    # the input embedding: a lookup (no FLOPs) of B rows, untied; tied, it is the lm_head
    width = m.hidden_size or m.heads * m.head_dim
    table = 0 if m.tie_word_embeddings else m.vocab_size * width
    rows = 0 if m.tie_word_embeddings else min(b, m.vocab_size)
    gemm_seq = 2 * (m.active_params - table) / tp
    attention_seq = attention * 4 * m.heads * m.head_dim * lt / tp
    f_seq = (2 * (m.active_params - table) + attention * 4 * m.heads * m.head_dim * lt) / tp
    e, k = m.experts, m.experts_per_token
    if e > k:
        touched = e * (1 - (1 - k / e) ** b)
        read = m.active_params + (m.params - m.active_params) * (touched - k) / (e - k)
    else:
        read = m.params
    weights = m.params * wb / tp
    flops = b * f_seq
    nbytes = (read - table + rows * width) * wb / tp + b * kv_seq
    # per sequence: its cache and its embedding row; shared: the weights but the table
    own = kv_seq + (width * wb / tp if table else 0)
    ai = flops / nbytes
    peak, bw = _peak(hw, weight), hw.bandwidth
    ridge = peak / bw
    # the GEMMs at the weights' peak, attention at the cache's: one after the other
    compute = b * gemm_seq / peak + b * attention_seq / _attention_peak(hw, kv)
    attainable = min(ai * bw, flops / compute)
    ceiling = f_seq / own
    max_b = max(math.floor((hw.memory * (1 - reserve) - weights) / kv_seq), 0)
    # the ridge batch at the split roof: attention's FLOPs as their time at the GEMM peak
    timed_seq = gemm_seq + attention_seq * peak / _attention_peak(hw, kv)
    margin = timed_seq - ridge * own
    step = max(compute, nbytes / bw)
    return {
        "flops": flops,
        "bytes": nbytes,
        "arithmetic_intensity": ai,
        "bottleneck": 1 if compute >= nbytes / bw else 0,
        "attainable_flops": attainable,
        # over the step's own roof: its FLOPs over their split compute time (no efficiency here)
        "utilization": attainable / (flops / compute),
        "ceiling": ceiling,
        "fraction_of_ceiling": ai / ceiling,
        "knee_batch": _moe_root(own, m, wb / tp, table),
        "ridge_batch": _moe_root(margin / ridge, m, wb / tp, table) if margin > 0 else math.nan,
        "max_batch": max_b,
        "feasible": b <= max_b,
        "step_time_s": step,
        "tokens_per_s": b / step,
    }


def _scalar_prefill(m, hw, tp, b, n, label, kv, weight, reserve, attention):  # type: ignore[no-untyped-def]
    wb, kvb = weight.bytes_per_element, kv.bytes_per_element
    h = m.kv_heads if label == "native" else int(label)
    window = m.sliding_window if m.sliding_window else math.inf
    cap = min(n, window)
    pairs = (m.layers - m.local_layers) * n * n / 2 + m.local_layers * cap * (n - cap / 2)
    lt = (m.layers - m.local_layers) * n + m.local_layers * cap
    kv_seq = 2 * h * m.head_dim * kvb * lt * _kv_share(h, tp)
    # the lookup computes nothing and only the last prompt token needs logits
    width = m.hidden_size or m.heads * m.head_dim
    embeddings = (1 if m.tie_word_embeddings else 2) * m.vocab_size * width
    linear = 2 * n * (m.active_params - embeddings) + 2 * m.vocab_size * width
    flops = b * (linear + attention * 2 * m.heads * 2 * m.head_dim * pairs) / tp
    attention_flops = b * attention * 2 * m.heads * 2 * m.head_dim * pairs / tp
    e, k = m.experts, m.experts_per_token
    tokens = b * n
    table = 0 if m.tie_word_embeddings else m.vocab_size * width
    rows = 0 if m.tie_word_embeddings else min(tokens, m.vocab_size)
    read = (
        m.active_params
        + (m.params - m.active_params) * (e * (1 - (1 - k / e) ** tokens) - k) / (e - k)
        if e > k
        else m.params
    )
    nbytes = (read - table + rows * width) * wb / tp + b * kv_seq
    ai = flops / nbytes
    peak, bw = _peak(hw, weight), hw.bandwidth
    max_b = max(math.floor((hw.memory * (1 - reserve) - m.params * wb / tp) / kv_seq), 0)
    compute = (flops - attention_flops) / peak + attention_flops / _attention_peak(hw, kv)
    return {
        "prefill_flops": flops,
        "prefill_bytes": nbytes,
        "prefill_arithmetic_intensity": ai,
        "prefill_bottleneck": 1 if compute >= nbytes / bw else 0,
        "prefill_attainable_flops": min(ai * bw, flops / compute),
        "prefill_feasible": b <= max_b,
        "ttft_s": max(compute, nbytes / bw),
    }


def _compare(ds: xr.Dataset, dims: tuple[str, ...], point, names: list[str]) -> int:  # type: ignore[no-untyped-def]
    sweep = parse_config(LOOP)
    reserve, attention = sweep.options.memory_reserve, 1.0
    arrays = {n: ds[n].broadcast_like(ds[list(names)]).transpose(*dims).values for n in names}
    count = 0
    axes = [range(ds.sizes[d]) for d in dims]
    for index in itertools.product(*axes):
        mi, hi, ti, bi, si, ki, kvi, wi = index
        expected = point(
            sweep.models[mi],
            sweep.hardware[hi],
            sweep.tp[ti],
            sweep.batch[bi],
            ds[dims[4]].values[si],
            sweep.kv_heads[ki],
            sweep.kv_dtype[kvi],
            sweep.weight_dtype[wi],
            reserve,
            attention,
        )
        for name, value in expected.items():
            got = arrays[name][index]
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(got), (name, index)
            else:
                assert got == pytest.approx(value, rel=1e-12, abs=0), (name, index, got, value)
        count += 1
    return count


def test_vectorized_grid_equals_scalar_loop() -> None:
    ds = _grid(LOOP)
    decode_names = [
        "flops",
        "bytes",
        "arithmetic_intensity",
        "bottleneck",
        "attainable_flops",
        "utilization",
        "ceiling",
        "fraction_of_ceiling",
        "knee_batch",
        "ridge_batch",
        "max_batch",
        "feasible",
        "step_time_s",
        "tokens_per_s",
    ]
    prefill_names = [
        "prefill_flops",
        "prefill_bytes",
        "prefill_arithmetic_intensity",
        "prefill_bottleneck",
        "prefill_attainable_flops",
        "prefill_feasible",
        "ttft_s",
    ]
    points = _compare(ds, DECODE_DIMS, _scalar_point, decode_names)
    assert points >= 10_000
    assert _compare(ds, PREFILL_DIMS, _scalar_prefill, prefill_names) == points
    # both regimes and both sides of the memory wall are exercised
    assert set(np.unique(ds["bottleneck"].values)) == {0, 1}
    assert ds["feasible"].any()
    assert not ds["feasible"].all()


def test_compiled_roofline_pass_equals_numpy() -> None:
    pytest.importorskip("numba")  # the compiled pass is taken on large grids; force it here
    sweep = parse_config(LOOP)
    xr.testing.assert_identical(
        build_grid(sweep, use_kernel=True), build_grid(sweep, use_kernel=False)
    )


def test_per_point_variables_are_contiguous_in_canonical_order() -> None:
    """Step bytes and intensities come out laid out as the roofline pass and the export read
    them (no transposed copy): canonical dimension order, C-contiguous."""
    ds = _grid(LOOP)
    for name, dims in (
        ("bytes", DECODE_DIMS),
        ("arithmetic_intensity", DECODE_DIMS),
        ("fraction_of_ceiling", DECODE_DIMS),
        ("prefill_bytes", PREFILL_DIMS),
        ("prefill_arithmetic_intensity", PREFILL_DIMS),
    ):
        assert ds[name].dims == tuple(d for d in dims if d != "hardware"), name
        assert ds[name].values.flags.c_contiguous, name


def test_a_skipped_analysis_is_left_out_and_the_others_are_unchanged() -> None:
    from sweeps.grid.analyses import ANALYSES

    sweep = parse_config(
        NOTE_CONFIG
        + "\n[serving]\nprompt_tokens = [512]\noutput_tokens = [64]\narrival_rate = [1.0]\n",
        "<skip>",
    )
    whole, skipped = build_grid(sweep), build_grid(sweep, skip=("pools",))
    pools = {v.name for a in ANALYSES if a.name == "pools" for v in a.variables}
    assert pools
    assert pools <= set(whole.data_vars)
    assert not pools & set(skipped.data_vars)
    assert set(skipped.data_vars) == set(whole.data_vars) - pools
    for name in skipped.data_vars:
        xr.testing.assert_identical(skipped[name], whole[name])
