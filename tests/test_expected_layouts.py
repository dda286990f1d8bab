"""Expected steps of the layouts the shipped calibration runs (issue 43, coverage): expert
parallelism with data-parallel attention (one rank's step), MXFP4 MoE checkpoints (dense
GEMMs in bf16, experts from the MXFP4 MoE tables), and readings beyond a table's measured
tokens (the edge's share of the roofline, counted once).

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sweeps.calibrate.bounds import bounds
from sweeps.calibrate.expected import _config as _row_config
from sweeps.calibrate.expected import expected_rows
from sweeps.calibrate.measurements import parse_measurements
from sweeps.catalog import load_catalog
from sweeps.measured.database import OPERATIONS, parse
from sweeps.measured.kernels import kernels
from sweeps.studies.expected.step import Config, step

pytest.importorskip("aiconfigurator_core")

CATALOG = load_catalog()


def _config(
    model: str, device: str, tp: int, weight: str = "bf16", engine: str = "trtllm", ep: int = 1
) -> Config:
    m, d = CATALOG.models[model], CATALOG.hardware[device]
    peak = d.peak_flops["bf16"]
    wb = CATALOG.lookup_dtype(weight).bytes_per_element
    return Config(m, d, tp, m.kv_heads, "bf16", weight, 2.0, wb, peak, peak, parse(engine), ep)


def test_beyond_the_measured_tokens_a_reading_is_the_edges_share_of_its_own_bound() -> None:
    """Two prefills past the MoE table's most tokens (and the all-reduce table's largest
    message) are read at the same clamped shape, so they differ by their bounds alone: the
    estimator's own extrapolation, scaled again, made the ratio about its square."""
    config = _config("qwen3-235b-a22b", "h100-sxm", 8, engine="vllm")
    near = step(config, np.array([64]), np.array([8192]), prefill=True)
    far = step(config, np.array([128]), np.array([8192]), prefill=True)
    for op in ("experts", "allreduce"):
        assert far.basis[op][0, 0] == 2  # extrapolated
        ratio = far.expected[op][0, 0] / near.expected[op][0, 0]
        assert ratio == pytest.approx(far.bound[op][0, 0] / near.bound[op][0, 0], rel=1e-9), op
        assert 1.5 < ratio < 2.5, op  # twice the tokens: about twice the time, not four


def test_a_moe_wider_than_its_table_is_read_at_the_tables_widest() -> None:
    """A MoE layer whose width no row reaches (DeepSeek's 7,168 in vLLM's FP8 table, at most
    6,144) is read where the table ends and scaled by the roofline once, as the tokens are:
    read at its own width, the estimator's extrapolation was scaled again (5 to 25 % slower
    steps on H100 and B200)."""
    db = kernels("h100_sxm", "vllm", "0.24.0")
    tokens = np.array([1, 64, 512])
    shape = {"inter": 2048, "topk": 8, "experts": 256, "tp": 8, "ep": 1, "fmt": "fp8"}
    wide = db.moe_many(tokens=tokens, hidden=7168, **shape)
    edge = db.moe_many(tokens=tokens, hidden=6144, **shape)
    assert wide.moved.all()
    assert wide.at["hidden_size"].max() == 6144
    assert (wide.latency_s == edge.latency_s).all()  # the caller scales it to 7,168


def test_an_expert_parallel_step_is_one_ranks_share_of_the_batch() -> None:
    tp1 = _config("qwen3-235b-a22b", "b200", 1, "nvfp4")
    ep4 = replace(tp1, ep=4)
    context = np.array([1500])
    rank = step(ep4, np.array([61, 64]), context)  # 61 sequences: the busiest rank holds 16
    alone = step(tp1, np.array([16]), context)
    for op in ("embedding", "qkv", "attention", "o_proj", "router", "lm_head"):
        assert (rank.expected[op] == alone.expected[op][0, 0]).all(), op  # heads whole, tp 1
    layers = float(tp1.model.layers)
    db = kernels("b200_sxm", "trtllm", "1.3.0rc20")
    moe = db.moe_many(
        tokens=np.array([64]), hidden=tp1.model.width, inter=tp1.model.moe_intermediate_size,
        topk=tp1.model.experts_per_token, experts=tp1.model.experts, tp=1, ep=4, fmt="nvfp4",
    )  # fmt: skip
    assert (rank.expected["experts"] == moe.latency_s[0] * layers).all()  # every rank's tokens
    sent = db.dispatch_many(
        tokens=np.array([16]), hidden=tp1.model.width, topk=tp1.model.experts_per_token,
        experts=tp1.model.experts, tp=1, ep=4, replicas=4, fmt="nvfp4",
    )  # fmt: skip
    assert (rank.expected["dispatch"] == sent.latency_s[0] * layers).all()
    assert (rank.expected["allreduce"] == 0).all()  # tp 1 a rank: no all-reduce
    assert (rank.basis["dispatch"] == 2).all()  # the dispatch's table is not traced
    assert np.isfinite(rank.total()).all()
    assert rank.reason == ""
    assert (rank.total() >= rank.total_bound() * 0.5).all()
    assert (alone.expected["allreduce"] == 0).all()


@pytest.mark.parametrize(
    ("model", "tp", "ep", "says"),
    [
        ("llama-3.1-8b", 1, 2, "has no routed experts"),
        ("qwen3-235b-a22b", 1, 3, "does not divide the 128 routed experts"),
    ],
)
def test_a_layout_not_composed_is_null_with_why(model: str, tp: int, ep: int, says: str) -> None:
    got = step(_config(model, "b200", tp, ep=ep), np.array([8]), np.array([1024]))
    assert np.isnan(got.total()).all()
    assert says in got.reason


def test_an_mxfp4_moe_reads_dense_gemms_in_bf16_and_its_experts_in_mxfp4() -> None:
    """As aiconfigurator reads an ``mxfp4`` checkpoint (GPT-OSS: bf16 beside MXFP4 experts)."""
    fp4 = _config("gpt-oss-20b", "h200", 1, "fp4")
    bf16 = _config("gpt-oss-20b", "h200", 1, "bf16")
    batch, context = np.array([1, 64]), np.array([2048])
    got, dense = step(fp4, batch, context), step(bf16, batch, context)
    assert got.reason == ""
    assert np.isfinite(got.total()).all()
    for op in ("qkv", "o_proj", "router", "lm_head"):
        assert (got.expected[op] == dense.expected[op]).all(), op
        assert (got.bound[op] == dense.bound[op]).all(), op  # bf16 bytes: what is read
    db = kernels("h200_sxm", "trtllm", "1.3.0rc20")
    m = fp4.model
    moe = db.moe_many(
        tokens=batch, hidden=m.width, inter=m.moe_intermediate_size, topk=m.experts_per_token,
        experts=m.experts, tp=1, ep=1, fmt="fp4",
    )  # fmt: skip
    assert (got.expected["experts"][:, 0] == moe.latency_s * m.layers).all()
    assert (got.bound["experts"] < dense.bound["experts"]).all()  # 4-bit experts' bytes
    # a dense model has no MXFP4 checkpoint and no MXFP4 GEMM table: null, with the operation
    llama = step(_config("llama-3.1-8b", "h200", 1, "fp4"), batch, context)
    assert np.isnan(llama.total()).all()
    assert "qkv: no reading" in llama.reason
    assert set(OPERATIONS) == set(got.expected)


HEADER = (
    "model,hardware,tp,weight_dtype,kv_dtype,compute_dtype,batch,prompt_tokens,output_tokens,"
    "metric,value,basis,gpus,parallel,source\n"
)
ROWS = HEADER + (
    # sweeps/calibrate/data/measurements.csv lines 193, 166 and 117 (TensorRT-LLM perf-overview)
    "qwen3-235b-a22b,b200,1,nvfp4,fp8,auto,max,1000,1000,output_tokens_per_s,5764,device,4,"
    "ep+dp,TensorRT-LLM perf-overview\n"
    "gpt-oss-20b,h200,1,fp4,fp8,auto,max,1000,1000,output_tokens_per_s,13858,device,1,tp,"
    "TensorRT-LLM perf-overview\n"
    "deepseek-r1,b200,1,nvfp4,fp8,auto,max,1000,1000,output_tokens_per_s,6463,device,4,ep+dp,"
    "TensorRT-LLM perf-overview\n"
)


def test_the_calibration_prices_ep_dp_and_mxfp4_rows_per_gpu() -> None:
    found = bounds(parse_measurements(ROWS))
    frame = expected_rows(found)
    qwen, oss, r1 = (frame.row(i, named=True) for i in range(3))
    b = found[0]
    assert b.batch is not None
    config = _row_config(b, "trtllm")
    assert isinstance(config, Config)
    assert (config.ep, config.tp, config.weight_dtype) == (4, 1, "nvfp4")  # 4 GPUs, tp 1 each
    one = step(config, np.array([b.batch]), np.array([b.context])).total()[0, 0]
    ttft = step(config, np.array([b.batch]), np.array([1000]), prefill=True).total()[0, 0]
    # a replica of 4 GPUs serves B sequences; per GPU, over its prefill and 1000 steps
    assert qwen["expected"] == pytest.approx(b.batch * 1000 / (ttft + 1000 * one) / 4, rel=1e-12)
    # DeepSeek-R1 (MLA) at ep 4 with data-parallel attention: its MLA block from the NVFP4
    # module table, its experts from the MoE table, as the others
    for row in (qwen, oss, r1):
        assert row["expected"] is not None
        assert row["expected_reason"] == ""
        assert row["expected"] < row["bound"]  # no expected throughput beats its bound
        assert row["expected_basis"] == "extrapolated"


PP_ROWS = HEADER + (
    # hand-made rows (no published pp row ships): Llama-3.1-70B in 2 stages of tp 4 on H100
    "llama-3.1-70b,h100-sxm,4,fp8,fp8,auto,64,1000,1000,output_tokens_per_s,400,device,8,pp,vLLM\n"
    "llama-3.1-70b,h100-sxm,4,fp8,fp8,auto,1,1000,1000,itl_s,0.02,device,8,pp,vLLM\n"
    "llama-3.1-70b,h100-sxm,4,fp8,fp8,auto,64,1000,1000,output_tokens_per_s,900,device,4,tp,vLLM\n"
)


def test_the_calibration_prices_pp_rows_as_stages_of_whole_micro_batches() -> None:
    found = bounds(parse_measurements(PP_ROWS))
    frame = expected_rows(found)
    rate, itl, tp_rate = (frame.row(i, named=True) for i in range(3))
    b = found[0]
    assert b.batch == 64
    config = _row_config(b, "vllm")
    assert isinstance(config, Config)
    assert (config.tp, config.pp, config.ep) == (4, 2, 1)  # 8 GPUs: 2 stages of tp 4
    one = step(config, np.array([64]), np.array([b.context])).total()[0, 0]
    ttft = step(config, np.array([64]), np.array([1000]), prefill=True).total()[0, 0]
    # the replica's 8 GPUs serve 64 sequences in 2 micro-batches of 32, each crossing both
    # stages and the hand-off between them
    assert rate["expected"] == pytest.approx(64 * 1000 / (ttft + 1000 * one) / 8, rel=1e-12)
    half = step(replace(config, pp=1), np.array([32]), np.array([b.context]))
    assert one > half.total()[0, 0]  # the micro-batch's 80 layers and the hand-off
    assert one == pytest.approx(half.total()[0, 0], rel=0.01)
    for row in (rate, itl):
        assert row["expected"] is not None
        assert row["expected_reason"] == ""
    assert rate["expected"] < rate["bound"]  # no expected throughput beats its bound
    assert itl["expected"] > itl["bound"]  # nor an inter-token latency
    # two stages serve the batch at about half the rate a device of one stage of 4 does
    assert tp_rate["expected"] is not None
    assert 0.4 < rate["expected"] / tp_rate["expected"] < 0.6
