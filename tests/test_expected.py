"""The expected pass (issue 43): measured kernels, the composed step against aiconfigurator's
own estimate of it, the engine axis's errors, nulls where the database has no data.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from sweeps.catalog import load_catalog
from sweeps.cli.main import cli
from sweeps.measured.database import OPERATIONS, parse, resolve, systems_root
from sweeps.measured.kernels import kernels
from sweeps.studies.expected.step import Config, step

pytest.importorskip("aiconfigurator_core")

CATALOG = load_catalog()

AIC_MODELS = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",  # dense
    "qwen3-32b": "Qwen/Qwen3-32B",  # GQA (8 of 64 heads), tp 4
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",  # MoE, tp 8
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",  # MLA + MoE (and a shared expert), tp 8
}
"""Shipped models with a config in aiconfigurator's own registry (read offline)."""

FORMATS = {"deepseek-v3": ("fp8", "fp8")}
"""The weight and KV formats a model is compared at (bf16 both where not named): DeepSeek-V3
at its checkpoint's block-scaled FP8 and an FP8 cache, aiconfigurator's own defaults for it
(the database measured its experts block-scaled only)."""

AIC_FORMATS = {"fp8": {"gemm_quant_mode": "fp8_block", "moe_quant_mode": "fp8_block",
                       "kvcache_quant_mode": "fp8", "fmha_quant_mode": "bfloat16"}}  # fmt: skip
"""aiconfigurator's quantization of a ``FORMATS`` pair (bf16: its defaults)."""

ENGINES = {"deepseek-v3": ("vllm", "trtllm", "sglang")}
"""The engines a model is compared under (vLLM where not named): DeepSeek's MLA block is the
module TensorRT-LLM and vLLM measured, and under SGLang (no module table) its granular MLA
attention and BMM tables and the projections as GEMMs, as aiconfigurator composes it."""

NOT_COUNTED = ("add_norm", "act_gate", "p2p")
"""aiconfigurator's operations the cost model does not count: the residual add + RMSNorm and
the gated activation (elementwise, not from tables: 4-10 % of its step) and the pipeline
hand-off (zero at pp = 1). The expected step is compared with its sum of the others.

Inside an operation it counts, aiconfigurator's DeepSeek MoE block under vLLM also holds a
pre- and post-dispatch of the tokens at tp 8 (5-15 us a layer, inside its overlap of the
routed and shared experts), which the cost model does not count (no expert parallelism, no
dispatch): the expected step is up to 6 % below its estimate there (H100), 1 % elsewhere."""


def _config(model: str, device: str, tp: int, engine: str = "vllm") -> Config:
    m, d = CATALOG.models[model], CATALOG.hardware[device]
    weights, kv = FORMATS.get(model, ("bf16", "bf16"))
    wb, kb = (1.0 if weights == "fp8" else 2.0), (1.0 if kv == "fp8" else 2.0)
    peak, attention = d.peak_flops[weights], d.peak_flops["bf16"]
    return Config(m, d, tp, m.kv_heads, kv, weights, kb, wb, peak, attention, parse(engine))


def _held_to_aiconfigurator(config: Config, handle: Any) -> None:
    """At 20 seeded decode points, ``config``'s expected step is within 10 % of the
    estimate ``handle`` (aiconfigurator's compiled engine) makes of the operations counted."""
    rng = random.Random(43)
    for _ in range(20):
        batch = rng.choice([1, 2, 3, 8, 16, 33, 64, 128, 256])
        context = rng.choice([128, 512, 1000, 2048, 4096, 8192, 16384])
        ours = step(config, np.array([batch]), np.array([context])).total()[0, 0]
        rows = handle.decode_step_per_op(batch, context - 1, 2)
        theirs = sum(v for name, v, *_ in rows if not any(n in name for n in NOT_COUNTED))
        assert ours == pytest.approx(theirs * 1e-3, rel=0.10), (batch, context)


def _tp(model: str) -> int:
    params = CATALOG.models[model].params
    return 8 if params > 1e11 else 4 if params > 3e10 else 1


@pytest.mark.parametrize("device", ["h100-sxm", "b200"])
@pytest.mark.parametrize(
    ("model", "engine"), [(m, e) for m in AIC_MODELS for e in ENGINES.get(m, ("vllm",))]
)
def test_the_step_equals_aiconfigurators_estimate_of_the_same_operations(
    model: str, engine: str, device: str
) -> None:
    from aiconfigurator_core.sdk.engine import EngineHandle

    system = {"h100-sxm": "h100_sxm", "b200": "b200_sxm"}[device]
    tp = _tp(model)
    quant = AIC_FORMATS.get(FORMATS.get(model, ("bf16",))[0], {})
    quiet = io.StringIO()
    with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
        handle = EngineHandle.compile(
            AIC_MODELS[model], system, engine, tp_size=tp, moe_tp_size=tp, moe_ep_size=1,
            **quant,
        )  # fmt: skip
    _held_to_aiconfigurator(_config(model, device, tp, engine), handle)


def test_mla_under_sglang_is_composed_from_the_granular_tables() -> None:
    """SGLang holds no MLA module table: the block is its projections as GEMMs (``qkv``: the
    down and q up projections, ``o_proj``) and its attention (the latent attention with
    the absorbed BMMs, or in a prefill the kv up projection), each at or above its bound."""
    config = _config("deepseek-v3", "h100-sxm", 8, "sglang")
    for prefill in (False, True):
        got = step(config, np.array([1, 64, 2000]), np.array([128, 8192, 100_000]), prefill)
        assert got.reason == ""
        assert np.isfinite(got.total()).all()
        for op in ("qkv", "attention", "o_proj", "experts"):
            assert (got.expected[op] > 0).all(), (op, prefill)
            assert (got.bound[op] <= got.expected[op]).all(), (op, prefill)


def test_mla_without_module_or_granular_tables_is_null_and_says_which() -> None:
    config = dataclasses.replace(_config("deepseek-v3", "h100-sxm", 8, "sglang"), kv_dtype="int8")
    got = step(config, np.array([1, 8]), np.array([1024]))
    assert np.isnan(got.total()).all()
    assert got.reason == (
        "MLA attention: no sglang 0.5.14 MLA module tables on h100_sxm at GEMM 'fp8', KV "
        "'int8', nor granular MLA tables (decode attention, prefill attention lacking)"
    )
    assert (got.step_basis() == "").all()


def test_granular_mla_at_measured_shapes_is_the_first_of_the_tables_two_rows() -> None:
    """Each shape of SGLang's granular MLA and BMM tables was measured twice (within 2 %):
    the estimator reads the first row of the two, so that is the value at a measured shape."""
    k = kernels("h100_sxm", "sglang", "0.5.14")
    root = systems_root() / "data/h100_sxm"
    formats = {"bfloat16": "bf16", "fp8": "fp8"}
    for prefill, name, axis in ((False, "generation", "step"), (True, "context", "isl")):
        table = pl.read_parquet(root / f"mla/sglang/0.5.14/{name}_mla_perf.parquet")
        keys = ["kv_cache_dtype", "num_heads", "batch_size", axis]
        first = table.group_by(keys, maintain_order=True).agg(pl.col("latency").first())
        for row in first.sample(6, seed=43).iter_rows(named=True):
            length = row[axis] if prefill else row[axis] + 1  # a decode step's cached tokens
            reading = k.mla_attention_many(
                prefill=prefill, batch=np.array([row["batch_size"]]),
                length=np.array([length]), heads=row["num_heads"],
                kv_fmt=formats[row["kv_cache_dtype"]],
            ).one()  # fmt: skip
            assert reading.basis == "measured"
            assert reading.latency_s == row["latency"] * 1e-3
    table = pl.read_parquet(root / "mla_bmm/sglang/0.5.14/mla_bmm_perf.parquet")
    keys = ["op_name", "bmm_dtype", "num_tokens", "num_heads"]
    first = table.group_by(keys, maintain_order=True).agg(pl.col("latency").first())
    for row in first.sample(8, seed=43).iter_rows(named=True):
        reading = k.mla_bmm_many(
            tokens=np.array([row["num_tokens"]]), heads=row["num_heads"],
            fmt=formats[row["bmm_dtype"]], pre=row["op_name"] == "mla_gen_pre",
        ).one()  # fmt: skip
        assert reading.basis == "measured"
        assert reading.latency_s == row["latency"] * 1e-3


def test_mla_at_measured_shapes_is_the_module_tables_value() -> None:
    path = systems_root() / "data/h100_sxm/mla/vllm/0.24.0"
    k = kernels("h100_sxm", "vllm", "0.24.0")
    formats = {"bfloat16": "bf16", "fp8_block": "fp8", "fp8": "fp8"}
    for prefill, name, axis in ((False, "generation", "step"), (True, "context", "isl")):
        table = pl.read_parquet(path / f"mla_{name}_module_perf.parquet")
        for row in table.sample(6, seed=43).iter_rows(named=True):
            length = row[axis] if prefill else row[axis] + 1  # a decode step's cached tokens
            reading = k.mla_many(
                prefill=prefill, batch=np.array([row["batch_size"]]), length=np.array([length]),
                heads=row["num_heads"], native_heads=128, fmt=formats[row["gemm_type"]],
                kv_fmt=formats[row["kv_cache_dtype"]],
            ).one()  # fmt: skip
            assert reading.basis == "measured"
            assert reading.latency_s == row["latency"] * 1e-3


def test_an_mla_step_is_its_module_and_is_bounded_by_its_own_roofline() -> None:
    """DeepSeek-V3's projections are read inside its MLA module (``attention``), so qkv and
    o_proj are zero; the block and the experts (with the shared expert beside them) are at or
    above their own bounds, prefill and decode."""
    config = _config("deepseek-v3", "h100-sxm", 8)
    for prefill in (False, True):
        got = step(config, np.array([1, 64, 2000]), np.array([128, 8192, 100_000]), prefill)
        assert got.reason == ""
        assert np.isfinite(got.total()).all()
        assert (got.expected["qkv"] == 0).all()
        assert (got.expected["o_proj"] == 0).all()
        for op in ("attention", "experts"):
            assert (got.bound[op] <= got.expected[op]).all(), (op, prefill)


def test_a_device_without_data_gives_nulls_with_the_reason() -> None:
    got = step(_config("llama-3.1-8b", "mi300x", 1), np.array([1, 8]), np.array([1024]))
    assert np.isnan(got.total()).all()
    assert got.reason == "device 'mi300x' not in the database"
    assert (got.step_basis() == "").all()


def test_at_measured_shapes_the_lookup_is_the_tables_value() -> None:
    path = systems_root() / "data/h100_sxm/gemm/vllm/0.24.0/gemm_perf.parquet"
    table = pl.read_parquet(path).filter(pl.col("gemm_dtype") == "bfloat16")
    k = kernels("h100_sxm", "vllm", "0.24.0")
    for row in table.sample(8, seed=43).iter_rows(named=True):
        reading = k.gemm(row["m"], row["n"], row["k"], "bf16")
        assert reading.basis == "measured"
        assert reading.latency_s == row["latency"] * 1e-3
    # the example: H100 bf16, n 8192, k 4096 at m = 1
    assert k.gemm(1, 8192, 4096, "bf16").latency_s == pytest.approx(2.4057e-5, rel=1e-4)


def test_off_grid_is_interpolated_and_outside_extrapolated_at_the_roofs_share() -> None:
    k = kernels("h100_sxm", "vllm", "0.24.0")
    assert k.gemm(300, 8192, 4096, "bf16").basis == "interpolated"
    outside = k.gemm(100_000, 8192, 4096, "bf16")
    assert outside.basis == "extrapolated"
    assert outside.at["m"] == 32768
    # the composed step scales it by the roofline: compute-bound there, so 100000/32768
    config = _config("llama-3.1-8b", "h100-sxm", 1)
    far = step(config, np.array([100_000]), np.array([128]))
    near = step(config, np.array([32768]), np.array([128]))
    ratio = far.expected["ffn_up"][0, 0] / near.expected["ffn_up"][0, 0]
    assert ratio == pytest.approx(100_000 / 32768, rel=1e-9)


def test_expected_steps_grow_with_batch_and_context_where_the_tables_are() -> None:
    """Monotone in context; in batch, as monotone as the measured tables: a GEMM's kernel
    changes with m and the H100 tables step down by up to 4 % (qkv, m 32 to 64), 1.2 % on
    the whole step, which is not smoothed away."""
    batch = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
    context = np.array([512, 1024, 2048, 4096, 8192, 16384])
    total = step(_config("llama-3.1-8b", "h100-sxm", 1), batch, context).total()
    assert (np.diff(total, axis=1) >= 0).all()
    assert (total[1:] >= total[:-1] * 0.98).all()
    assert (total[-1] > 2 * total[0]).all()


def test_operations_are_bounded_by_their_own_roofline_sum() -> None:
    got = step(_config("llama-3.1-8b", "h100-sxm", 1), np.array([1, 64]), np.array([2048]))
    assert set(got.expected) == set(OPERATIONS)
    assert (got.total_bound() <= got.total()).all()


ENGINE_CONFIG = """
[sweep]
name = "expected"

[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm", "mi300x"]
batch = [1, 8]
context = [1024]
engine = {engines}
"""


def _run(write_config: Callable[..., Path], tmp_path: Path, engines: str) -> tuple[int, str]:
    path = write_config(ENGINE_CONFIG.format(engines=engines))
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_an_unknown_engine_exits_2_naming_the_key_and_the_engines(
    write_config: Callable[..., Path], tmp_path: Path
) -> None:
    code, out = _run(write_config, tmp_path, '["tensorrt"]')
    assert code == 2
    assert "axes.engine[0]" in out
    assert "'tensorrt'" in out
    assert "['trtllm', 'vllm', 'sglang']" in out


def test_an_unknown_version_exits_2_naming_what_the_device_holds(
    write_config: Callable[..., Path], tmp_path: Path
) -> None:
    code, out = _run(write_config, tmp_path, '["vllm-0.1.0"]')
    assert code == 2
    assert "axes.engine[0]" in out
    assert "'0.1.0'" in out
    assert "h100-sxm: ['0.24.0']" in " ".join(out.split())


def test_a_run_with_an_engine_writes_expected_and_kernels(
    write_config: Callable[..., Path], tmp_path: Path
) -> None:
    code, out = _run(write_config, tmp_path, '["vllm"]')
    assert code == 0, out
    assert "from the engine's measured kernels" in " ".join(out.split())  # the summary's columns
    folder = tmp_path / "out" / "expected"
    expected = pl.read_parquet(folder / "expected.parquet")
    mi300x = expected.filter(pl.col("hardware") == "mi300x")
    assert mi300x["expected_step_time_s"].null_count() == mi300x.height
    assert set(mi300x["reason"]) == {"device 'mi300x' not in the database"}
    h100 = expected.filter(pl.col("hardware") == "h100-sxm")
    assert (h100["roofline_share"] == h100["step_time_s"] / h100["expected_step_time_s"]).all()
    assert h100["roofline_share"].is_between(0.3, 1.0).all()
    import json

    counts = json.loads((folder / "manifest.json").read_text())["expected"]
    assert counts == {
        "rows": expected.height,
        "below_bound": int(expected["below_bound"].sum()),
        "without_data": mi300x.height,
        **{
            b: int((expected["basis"] == b).sum())
            for b in ("measured", "interpolated", "extrapolated")
        },
    }
    below = f"expected {counts['below_bound']:,} of {h100.height:,}"  # the run says it too
    assert f"expected below their bound (flagged below_bound, not clamped): {below}" in out
    bases = counts["measured"] + counts["interpolated"] + counts["extrapolated"]
    assert bases + counts["without_data"] == counts["rows"]
    assert counts["extrapolated"] > 0
    kernels_table = pl.read_parquet(folder / "kernels.parquet")
    assert kernels_table.height == expected.height * len(OPERATIONS)


@pytest.mark.parametrize("device", ["h200", "b200"])
def test_a_model_alternating_windowed_and_full_layers_equals_aiconfigurators_estimate(
    device: str,
) -> None:
    """GPT-OSS alternates 128-token sliding-window layers with full ones: half its layers
    read attention at the window. Read at the whole context, the step missed aiconfigurator's
    own estimate by up to 66 % (attention by up to 90 %) at long contexts."""
    from aiconfigurator_core.sdk.engine import EngineHandle

    system = {"h200": "h200_sxm", "b200": "b200_sxm"}[device]
    quiet = io.StringIO()
    with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
        handle = EngineHandle.compile("openai/gpt-oss-20b", system, "vllm", tp_size=1)
    m, d = CATALOG.models["gpt-oss-20b"], CATALOG.hardware[device]
    peak = d.peak_flops["bf16"]
    config = Config(m, d, 1, m.kv_heads, "bf16", "fp4", 2.0, 0.53125, peak, peak, parse("vllm"))
    _held_to_aiconfigurator(config, handle)


def test_windowed_layers_are_read_at_the_window_and_the_rest_at_full_attention() -> None:
    config = _config("gpt-oss-20b", "h200", 1)
    m = config.model
    assert 0 < m.local_layers < m.layers
    batch, context = np.array([1, 64]), np.array([100, 8192])
    got = step(config, batch, context)
    held = resolve("h200", parse("vllm"))
    assert held.system is not None
    assert held.version is not None
    db = kernels(held.system, held.engine, held.version)
    shape = {"heads": m.heads, "kv_heads": m.kv_heads, "head_dim": m.head_dim, "fmt": "bf16"}
    near, far = (
        db.attention_many(
            prefill=False, batch=batch[:, None], length=context[None, :], window=w, **shape
        ).latency_s
        for w in (m.sliding_window, 0)
    )
    mean = (m.local_layers * near + (m.layers - m.local_layers) * far) / m.layers
    assert got.expected["attention"] == pytest.approx(mean * m.layers, rel=1e-12)
    assert (near[:, 1] < far[:, 1]).all()  # 8,192 tokens: the window reads 128 of them
