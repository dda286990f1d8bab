"""SGLang's wide-EP layout (DeepEP, ``engine = "sglang_deepep"``; issue 43): DeepSeek-V3's step
read from the wide-EP MLA, MoE and DeepEP tables, held against aiconfigurator-core's own
estimate of the same step (its SGLang large-EP graph) on the H200 and B200; the tables'
values at measured shapes; a layout or device without the tables null with the reason.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import contextlib
import io
import random
from typing import Any

import numpy as np
import polars as pl
import pytest

from sweeps.catalog import load_catalog
from sweeps.measured.database import OPERATIONS, choices, parse, systems_root
from sweeps.measured.kernels import kernels
from sweeps.studies.expected.step import Config, step

pytest.importorskip("aiconfigurator_core")

CATALOG = load_catalog()
SYSTEMS = {"h200": "h200_sxm", "b200": "b200_sxm"}
NOT_COUNTED = ("add_norm", "act_gate")
"""aiconfigurator's elementwise operations, which the cost model does not count."""


def _config(device: str, ep: int, label: str = "sglang_deepep", kv: str = "fp8") -> Config:
    m, d = CATALOG.models["deepseek-v3"], CATALOG.hardware[device]
    kv_bytes = 1.0 if kv == "fp8" else 2.0
    return Config(
        m, d, 1, m.kv_heads, kv, "fp8", kv_bytes, 1.0, d.peak_flops["fp8"], d.peak_flops["bf16"],
        parse(label), ep, True, 1,
    )  # fmt: skip


def _handle(system: str, ep: int) -> Any:
    """aiconfigurator's DeepSeek-V3 on SGLang's large-EP path, as its enumerator sets it:
    DeepEP normal kernels for the prefill, low-latency for decode, 8 GPUs a node, ep ranks
    of one device with data-parallel attention, FP8 block-scaled weights and attention."""
    import aiconfigurator_core
    from aiconfigurator_core.sdk import engine
    from aiconfigurator_core.sdk.config_builders import build_model_config
    from aiconfigurator_core.sdk.models import get_model

    quiet = io.StringIO()
    with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
        config = build_model_config(
            tp_size=1, pp_size=1, attention_dp_size=ep, moe_tp_size=1, moe_ep_size=ep,
            gemm_quant_mode="fp8_block", moe_quant_mode="fp8_block", kvcache_quant_mode="fp8",
            fmha_quant_mode="fp8_block", comm_quant_mode=None, forward_model=None,
            attention_backend=None,
        )  # fmt: skip
        config.moe_comm_backend = {"context": "deepep_ht", "generation": "deepep_ll"}
        config.num_gpus_per_node = 8
        config.system = system
        model = get_model("deepseek-ai/DeepSeek-V3", config, "sglang")
        version = engine._literal_backend_version(system, "sglang", None, None, None)
        database = engine._maybe_load_database(system, "sglang", version, None)
        spec = engine.build_engine_spec_json(
            model, model_path="deepseek-ai/DeepSeek-V3", system=system, backend="sglang",
            backend_version=version, kv_block_size=None, systems_path=None, nextn=0,
            database=database,
        )  # fmt: skip
        compiled = aiconfigurator_core.engine_spec_bincode_from_json(spec)
    return engine.EngineHandle(bytes(compiled)), len(model.context_ops)


def _theirs(rows: Any) -> float:
    return sum(v for name, v, *_ in rows if not any(n in name for n in NOT_COUNTED)) * 1e-3


def _errors(device: str, ep: int) -> list[tuple[str, float]]:
    """At 12 seeded decode points and 6 prefills: our step of the replica's ``B ep``
    sequences less our LM head (aiconfigurator's large-EP graph wires none), over
    aiconfigurator's of one rank's ``B``, less 1."""
    config = _config(device, ep)
    handle, n_context = _handle(SYSTEMS[device], ep)
    rng = random.Random(43)
    out = []
    for prefill, n in ((False, 12), (True, 6)):
        for _ in range(n):
            sizes = [1, 2, 4, 8] if prefill else [1, 2, 3, 8, 16, 33, 64, 128, 256]
            b, context = rng.choice(sizes), rng.choice([128, 512, 1000, 2048, 4096, 8192])
            ours = step(config, np.array([b * ep]), np.array([context]), prefill)
            assert ours.reason == "", ours.reason
            mine = float(ours.total()[0, 0] - ours.expected["lm_head"][0, 0])
            if prefill:
                rows = handle.evaluate_context_ops(list(range(n_context)), batch_size=b, s=context)
            else:
                rows = handle.decode_step_per_op(b, context - 1, 2)
            out.append(("prefill" if prefill else "decode", mine / _theirs(rows) - 1.0))
    return out


LAYOUTS = [("h200", 8), ("h200", 16), ("h200", 32), ("b200", 16), ("b200", 32)]
"""Every ep the tables hold at 8 GPUs a node: the B200's wide-EP MoE tables hold no ep 8."""


@pytest.mark.parametrize(("device", "ep"), LAYOUTS, ids=[f"{d}-ep{e}" for d, e in LAYOUTS])
def test_a_wide_ep_step_is_aiconfigurators_estimate_of_the_same_step(device: str, ep: int) -> None:
    """Measured: |error| at most 0.07 % (H200 ep 8), every layout's median below 0.05 %:
    each operation is aiconfigurator's own query at its shape (the LM head, which its
    large-EP graph leaves out, is ours alone and taken off)."""
    errors = _errors(device, ep)
    sizes = [abs(e) for _, e in errors]
    assert max(sizes) < 0.01, errors
    assert float(np.median(sizes)) < 0.005, errors
    assert {phase for phase, _ in errors} == {"decode", "prefill"}


def test_each_wide_ep_operation_is_in_the_step_and_the_fused_ones_are_not() -> None:
    """The wide-EP step has no router (aiconfigurator wires none on this path) and no output
    projection (in the MLA rows); plain ``sglang`` at the same layout keeps its fused path."""
    batch, context = np.array([64]), np.array([2048])
    wide = step(_config("h200", 8), batch, context)
    fused = step(_config("h200", 8, "sglang"), batch, context)
    for op in ("qkv", "attention", "experts", "dispatch", "embedding", "lm_head"):
        assert (wide.expected[op] > 0).all(), op
    assert (wide.expected["router"] == 0).all()
    assert (wide.expected["o_proj"] == 0).all()
    assert (fused.expected["router"] > 0).all()
    assert not np.allclose(wide.total(), fused.total())
    assert (wide.total() >= wide.total_bound()).all()  # no wide-EP step beats its bound


def _row(path: Any, **where: Any) -> float:
    frame = pl.read_parquet(path)
    for column, value in where.items():
        frame = frame.filter(pl.col(column) == value)
    return float(frame.row(0, named=True)["latency"])


def test_at_measured_shapes_the_lookup_is_the_tables_value() -> None:
    db = kernels("h200_sxm", "sglang", "0.5.14")
    root = systems_root() / "data" / "h200_sxm"
    mla = db.wide_mla_many(
        prefill=False, batch=np.array([64]), length=np.array([4096]), tp=1, fmt="fp8",
        kv_fmt="fp8",
    )  # fmt: skip
    table = root / "mla" / "sglang" / "0.5.10" / "wideep_generation_mla_perf.parquet"
    row = _row(table, kernel_source="flashinfer", num_heads=128, batch_size=64, isl=4096)
    assert mla.latency_s[0] == row * 1e-3
    assert mla.basis[0] == 0
    moe = db.wide_moe_many(
        prefill=True, tokens=np.array([64]), hidden=7168, inter=2048, topk=8, experts=256,
        ep=8, replicas=8, fmt="fp8-block", distribution="power_law_1.01",
    )  # fmt: skip
    table = root / "moe" / "sglang" / "0.5.10" / "wideep_context_moe_perf.parquet"
    row = _row(table, num_tokens=512, moe_ep_size=8, distribution="power_law_1.01")
    assert moe.latency_s[0] == pytest.approx(row * 1e-3, rel=1e-12)
    assert moe.basis[0] == 0
    sent = db.deepep_many(
        prefill=False, tokens=np.array([64]), hidden=7168, topk=8, experts=256, ep=8, nodes=1
    )
    ll = pl.read_parquet(root / "comm" / "sglang" / "0.5.12" / "wideep_deepep_ll_perf.parquet")
    ll = ll.filter(
        (pl.col("num_token") == 64) & (pl.col("hidden_size") == 7168)
        & (pl.col("num_topk") == 8) & (pl.col("num_experts") == 256)
    )  # fmt: skip
    assert sent.latency_s[0] == pytest.approx(
        (ll["dispatch_avg_t_us"][0] + ll["combine_avg_t_us"][0]) * 1e-6, rel=1e-12
    )
    assert sent.basis[0] == 0


@pytest.mark.parametrize(
    ("device", "ep", "kv", "lacking"),
    [("b200", 8, "fp8", "MoE at ep 8"), ("h200", 8, "bf16", "MLA at weights 'fp8', KV 'bf16'"),
     ("h100-pcie", 8, "fp8", "not measured on"), ("h200", 1, "fp8", "needs ep > 1")],
)  # fmt: skip
def test_a_layout_without_wide_ep_tables_is_null_with_the_reason(
    device: str, ep: int, kv: str, lacking: str
) -> None:
    """No fallback to the fused path: aiconfigurator raises on the same misses (the B200's
    wide-EP MoE tables hold no ep 8; every wide-EP MLA row's KV cache is FP8)."""
    got = step(_config(device, ep, kv=kv), np.array([64]), np.array([2048]))
    assert lacking in got.reason, got.reason
    assert np.isnan(got.total()).all()
    for op in OPERATIONS:
        assert np.isnan(got.expected[op]).all(), op


def test_the_label_names_deepep_under_sglang_only() -> None:
    assert parse("sglang-0.5.14_deepep").id == "sglang-0.5.14_deepep"
    assert (parse("sglang_deepep").engine, parse("sglang_deepep").a2a) == ("sglang", "deepep")
    good, problems = choices(("sglang_deepep", "vllm_deepep", "sglang_mooncake"), ())
    assert [c.id for c in good] == ["sglang_deepep"]
    assert [key for key, _ in problems] == ["engine[1]", "engine[2]"]
    assert "allowed: ['sglang_deepep']" in problems[0][1]
