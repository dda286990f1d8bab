"""Expected prefills under a prefix cache (issue 43 item 5): the hit prefill from measured
kernels with its cached tokens skipped (prefix_expected.parquet), against expected.parquet at
h 0, aiconfigurator's own static prefill with a prefix, more hits and the bound.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import contextlib
import io
import json
import random
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import sweeps
from sweeps import physics
from sweeps.catalog import load_catalog
from sweeps.cli.main import cli
from sweeps.measured.database import parse
from sweeps.measured.kernels import kernels
from sweeps.studies.expected.step import MLA_PREFIX, Config, _opened, compose, hit_prefill

pytest.importorskip("aiconfigurator_core")

CATALOG = load_catalog()
KEYS = ["model", "hardware", "tp", "batch", "context", "kv_heads", "kv_dtype", "weight_dtype",
        "engine"]  # fmt: skip
AXES = {
    "model": ["llama-3.1-8b", "deepseek-v3"], "hardware": ["h100-sxm", "mi300x"], "tp": [8],
    "batch": [1, 8], "context": [1024, 4096], "prompt": [1024, 4096], "engine": ["vllm"],
    "prefix_hit_rate": [0.0, 0.5, 0.9, 1.0],
}  # fmt: skip
"""A dense model and an MLA one (tp 8, where DeepSeek-V3 fits), a device with data and one
without; the prompts are the contexts, so expected.parquet's TTFT is at the same points."""


@cache
def _tables() -> dict[str, pl.DataFrame]:
    from sweeps.export import frames

    return frames(sweeps.run({"sweep": {"name": "xprefix"}, "axes": AXES}))


def _config(model: str, device: str = "h100-sxm", tp: int = 1) -> Config:
    m, d = CATALOG.models[model], CATALOG.hardware[device]
    peak = d.peak_flops["bf16"]
    return Config(m, d, tp, m.kv_heads, "bf16", "bf16", 2.0, 2.0, peak, peak, parse("vllm"))


def test_at_hit_rate_zero_it_is_expected_parquets_ttft_bit_for_bit() -> None:
    tables = _tables()
    plain = tables["prefix_expected"].filter(pl.col("prefix_hit_rate") == 0.0)
    both = plain.join(tables["expected"], on=KEYS, how="inner", suffix="_decode")
    assert both.height == plain.height == tables["expected"].height
    ours, theirs = both["expected_hit_prefill_s"], both["expected_ttft_s"]
    assert (ours.is_null() == theirs.is_null()).all()
    assert ours.drop_nulls().len() > 0
    assert (ours.drop_nulls() == theirs.drop_nulls()).all()  # bit for bit, not approx
    assert (plain["expected_cached_tokens"] == 0).all()


@pytest.mark.parametrize(
    ("model", "device", "tp", "weights"),
    [("gpt-oss-20b", "h200", 1, "fp4"), ("qwen3-235b-a22b", "h100-sxm", 8, "bf16")],
)
def test_nothing_cached_is_the_composed_ttft_bit_for_bit_windowed_and_moe_too(
    model: str, device: str, tp: int, weights: str
) -> None:
    """GPT-OSS alternates windowed and full layers (each read with the prefix at its own
    window), MXFP4 experts; Qwen3-235B routes to experts at tp 8."""
    m, d = CATALOG.models[model], CATALOG.hardware[device]
    peak = d.peak_flops["bf16"]
    wb = 0.5 if weights == "fp4" else 2.0
    config = Config(m, d, tp, m.kv_heads, "bf16", weights, 2.0, wb, peak, peak, parse("vllm"))
    batch, prompt = np.array([1, 8, 64]), np.array([100, 1000, 8192, 30000])
    cached = physics.whole_cached_tokens(prompt[None, :, None], np.linspace(0, 1, 6))
    got = hit_prefill(config, batch, prompt, cached)
    plain = compose(config, batch, prompt, np.array([1]), np.array([512]))
    assert not isinstance(got, str)
    assert not isinstance(plain, str)
    assert not np.isnan(got.ttft).any()
    assert np.array_equal(got.ttft[..., 0], plain.ttft)  # bit for bit
    assert (got.ttft[..., -1] < got.ttft[..., 0]).all()


def test_beside_the_bound_of_the_same_hit_prefill_with_the_flag_and_nulls() -> None:
    tables = _tables()
    frame = tables["prefix_expected"]
    bound = tables["prefix"].select(
        "model", "hardware", "tp", "batch", "context", "kv_heads", "kv_dtype", "weight_dtype",
        "prefix_hit_rate", pl.col("hit_compute_time_s").alias("bound"),
    )  # fmt: skip
    both = frame.join(bound, on=[*KEYS[:-1], "prefix_hit_rate"], how="inner")
    assert both.height == frame.height
    assert (both["hit_compute_time_s"] == both["bound"]).all()
    held = both.filter(pl.col("expected_hit_prefill_s").is_not_null())
    share = held["hit_compute_time_s"] / held["expected_hit_prefill_s"]
    assert (held["roofline_share"] == share).all()
    assert (held["below_bound"] == (share > 1)).all()
    assert (frame["below_bound"].is_null() == frame["expected_hit_prefill_s"].is_null()).all()
    mi300x = frame.filter(pl.col("hardware") == "mi300x")
    assert mi300x["expected_hit_prefill_s"].null_count() == mi300x.height
    assert set(mi300x["reason"]) == {"device 'mi300x' not in the database"}
    llama = frame.filter((pl.col("hardware") == "h100-sxm") & (pl.col("model") == "llama-3.1-8b"))
    assert llama["expected_hit_prefill_s"].null_count() == 0
    assert set(llama["basis"]) <= {"interpolated", "extrapolated"}  # a prefix: never measured


def test_mla_after_a_cached_prefix_is_null_with_the_reason() -> None:
    frame = _tables()["prefix_expected"]
    mla = frame.filter((pl.col("model") == "deepseek-v3") & (pl.col("hardware") == "h100-sxm"))
    hit = mla.filter(pl.col("prefix_hit_rate") > 0)
    assert hit.height > 0
    assert hit["expected_hit_prefill_s"].null_count() == hit.height
    assert set(hit["reason"]) == {MLA_PREFIX}
    assert hit["below_bound"].null_count() == hit.height
    plain = mla.filter(pl.col("prefix_hit_rate") == 0)
    assert plain["expected_hit_prefill_s"].null_count() == 0  # the plain prefill is composed


HELD = [
    ("llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B", 1, "h100-sxm"),
    ("llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B", 1, "b200"),
    ("qwen3-32b", "Qwen/Qwen3-32B", 4, "h100-sxm"),
    ("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", 8, "b200"),
]
"""Models held to aiconfigurator's static prefill with a prefix: dense, GQA at tp 4, MoE at
tp 8 (measured at most 1.4 %, 0.3 %, 2.9 % and 6.5 % off, medians 0.0 to 0.1 %)."""

SYSTEMS = {"h100-sxm": "h100_sxm", "b200": "b200_sxm"}


def _qk_norm(config: Config, batch: int, new: int, cached: int) -> float:
    """What Qwen3's QK-norm adds to aiconfigurator's context attention of a step, all layers
    [ms]: its attention op with the norm less the same op without (the cost model counts no
    elementwise kernel)."""
    from aiconfigurator_core.sdk import common
    from aiconfigurator_core.sdk import operations as ops

    opened = _opened(config)
    assert not isinstance(opened, str)
    db, kv = opened.db, common.KVCacheQuantMode["bfloat16"]
    got = []
    for norm in (True, False):
        op = ops.ContextAttention(
            "attention", 1, opened.heads, opened.kv, kv, common.FMHAQuantMode.bfloat16,
            head_size=config.model.head_dim, window_size=0, use_qk_norm=norm,
        )  # fmt: skip
        rows = db._handle[1].evaluate_ops_json(
            db._spec(op), is_context=True, batch_size=batch, s=new, prefix=cached
        )
        got.append(rows[0][1])
    return (got[0] - got[1]) * config.model.layers


@pytest.mark.parametrize(("model", "name", "tp", "device"), HELD)
def test_within_10_percent_of_aiconfigurators_static_prefill_with_a_prefix(
    model: str, name: str, tp: int, device: str
) -> None:
    """At 20 seeded points (batch 1 to 16, prompt 512 to 16k, h 0.5 to 0.9), the hit prefill
    against aiconfigurator's static prefill of the same prompt and prefix less its
    elementwise kernels, and for Qwen3 less the QK-norm its context attention holds (up to
    16 % of a 512-token prefill at h 0.9; the cost model counts no elementwise kernel)."""
    from aiconfigurator_core.sdk.engine import EngineHandle

    not_counted = ("add_norm", "act_gate", "p2p")
    quiet = io.StringIO()
    with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
        handle = EngineHandle.compile(
            name, SYSTEMS[device], "vllm", tp_size=tp, moe_tp_size=tp, moe_ep_size=1
        )
    config = _config(model, device, tp)
    rng = random.Random(43)
    for _ in range(20):
        batch = rng.choice([1, 2, 4, 8, 16])
        prompt = rng.choice([512, 1000, 2048, 4096, 8192, 16384])
        rate = rng.choice([0.5, 0.6, 0.7, 0.8, 0.9])
        cached = physics.whole_cached_tokens(np.array([[[prompt]]]), rate)
        got = hit_prefill(config, np.array([batch]), np.array([prompt]), cached)
        assert not isinstance(got, str)
        p = int(cached.flat[0])
        steps, _ = handle.run_static_per_op(batch_size=batch, isl=prompt, osl=2, prefix=p)
        theirs = sum(v for n, v, *_ in steps if not any(part in n for part in not_counted))
        if model.startswith("qwen3"):
            theirs -= _qk_norm(config, batch, prompt - p, p)
        ratio = float(got.ttft.flat[0]) / (theirs * 1e-3)
        assert ratio == pytest.approx(1.0, abs=0.10), (batch, prompt, rate)


def test_more_hits_are_no_slower() -> None:
    """Over h 0 to 1 in steps of 0.05, prompts past the tables' 16k and batches to 256: the
    attention never grows with the hits; the whole prefill only where its GEMMs' tables step
    (a GEMM's kernel changes with m: up to 3.2 % at 128-token prompts, not smoothed away)."""
    config = _config("llama-3.1-8b")
    ops = _opened(config)
    assert not isinstance(ops, str)
    batch = np.array([1, 3, 16, 64, 256])
    prompt = np.array([128, 1000, 4096, 16384, 40000])
    rate = np.linspace(0.0, 1.0, 21)
    cached = physics.whole_cached_tokens(prompt[None, :, None], rate[None, None, :])
    shaped = (batch[:, None, None], prompt[None, :, None])
    attention = ops.attention(*shaped, True, cached)[0]
    assert (np.diff(attention, axis=-1) <= 0).all()
    got = hit_prefill(config, batch, prompt, cached)
    assert not isinstance(got, str)
    assert (got.ttft[..., 1:] <= got.ttft[..., :-1] * 1.04).all()
    assert (got.ttft[:, 2:, -1] < 0.2 * got.ttft[:, 2:, 0]).all()  # 4k tokens and up


def test_a_long_prefix_is_floored_at_the_decode_attention_of_the_whole_prompt() -> None:
    """The new tokens read the whole cache at least once, as a decode step does: where the
    estimator's prefix gives less (4 prompts of 4,096 tokens, 99 % cached: 0.033 ms a layer
    against the decode step's 0.040 ms), the decode reading is the attention."""
    ops = _opened(_config("llama-3.1-8b"))
    assert not isinstance(ops, str)
    batch, prompt = np.array([4]), np.array([4096])
    cached = np.array([0.0, 2048.0, 4055.0])
    hit = ops.attention(batch, prompt, True, cached)
    decode = ops.attention(batch, prompt, False)
    plain = ops.attention(batch, prompt, True)
    db = kernels("h100_sxm", "vllm", "0.24.0")
    read = db.attention_many(
        prefill=True, batch=batch, length=prompt, heads=32, kv_heads=8, head_dim=128, window=0,
        fmt="bf16", cached=cached,
    )  # fmt: skip
    assert hit[0][0] == plain[0][0]  # nothing cached: the plain prefill, read for read
    assert hit[0][1] == read.latency_s[1] > decode[0][0]  # the estimator's prefix
    assert read.latency_s[2] < decode[0][0] == hit[0][2]  # floored
    assert list(read.basis) == [0, 1, 1]  # a measured row; a prefix no row holds
    assert hit[1][2] == decode[1][0]  # the floor's basis where it binds
    asked = db.asked
    again = db.attention_many(
        prefill=True, batch=np.array([4, 4]), length=np.array([4096, 4096]), heads=32,
        kv_heads=8, head_dim=128, window=0, fmt="bf16", cached=np.array([2048.0, 3001.0]),
    )  # fmt: skip
    assert again.latency_s[0] == read.latency_s[1]
    assert db.asked == asked + 1  # each shape and prefix asked once a process


def test_the_hit_attention_bound_is_the_prefill_at_no_prefix_and_falls_with_it() -> None:
    args = (2.0, 1e15, 3e12)  # kv bytes, peak, bandwidth
    batch, prompt, heads, kv, dim = 4.0, np.array([1.0, 512.0, 70000.0]), 32, 8, 128
    for window in (0, 128):
        plain = physics.attention_time(batch, prompt, heads, kv, dim, *args, True, window)
        none = physics.hit_attention_time(batch, prompt, 0.0, heads, kv, dim, *args, window)
        assert (none == plain).all()  # bit for bit
        shares = np.linspace(0.0, 1.0, 11)[:, None]
        hit = physics.hit_attention_time(
            batch, prompt, shares * prompt, heads, kv, dim, *args, window
        )
        assert (np.diff(hit, axis=0) <= 0).all()
        assert (hit <= plain).all()
        reads = physics.kernel_time(0.0, batch * np.minimum(prompt, window or prompt) * 2 * kv *
                                    dim * 2.0, args[1], args[2])  # fmt: skip
        assert (hit >= reads).all()  # never below reading the whole cache once


def test_whole_cached_tokens_leave_the_last_token_to_compute() -> None:
    prompt = np.array([1.0, 2.0, 1000.0, 1000.0, 1000.0])
    rate = np.array([1.0, 1.0, 0.9, 1.0, 0.0])
    got = physics.whole_cached_tokens(prompt, rate)
    assert list(got) == [0.0, 1.0, 900.0, 999.0, 0.0]
    assert (physics.cached_tokens(prompt, rate) == rate * prompt).all()


CONFIG = """
[sweep]
name = "xprefix"

[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm", "mi300x"]
batch = [1, 8]
context = [1024]
prefix_hit_rate = [0.0, 0.9]
{engine}
"""


def test_the_manifest_counts_the_hit_prefills_below_their_bound_and_by_basis(
    write_config: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_config(CONFIG.format(engine='engine = ["vllm"]'))
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "xprefix"
    table = pl.read_parquet(folder / "prefix_expected.parquet")
    counts = json.loads((folder / "manifest.json").read_text())["prefix_expected"]
    assert counts == {
        "rows": table.height,
        "below_bound": int(table["below_bound"].sum()),
        "without_data": table["expected_hit_prefill_s"].null_count(),
        **{b: int((table["basis"] == b).sum()) for b in ("measured", "interpolated", "extrapolated")},
    }  # fmt: skip
    assert counts["without_data"] == table.height // 2  # the MI300X's


def test_without_an_engine_there_is_no_prefix_expected_table(
    write_config: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_config(CONFIG.format(engine=""))
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "xprefix"
    assert not (folder / "prefix_expected.parquet").exists()
    assert (folder / "prefix.parquet").exists()
    assert "prefix_expected" not in json.loads((folder / "manifest.json").read_text())


def test_a_point_without_a_hit_rate_is_null_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hit rate the prefix table leaves null (none read) is never read as a number."""
    import sweeps.studies.prefix.prefix as prefix_study
    from sweeps.export import frames
    from sweeps.studies.expected.prefixed import NO_RATE

    monkeypatch.setattr(prefix_study, "prefix_hit", lambda x: x["prefix_hit_rate"] * np.nan)
    axes = {**AXES, "model": ["llama-3.1-8b"], "hardware": ["h100-sxm"], "tp": [1],
            "prefix_hit_rate": [0.5]}  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = frames(sweeps.run({"sweep": {"name": "no-rate"}, "axes": axes}))
    table = frame["prefix_expected"]
    assert table.height > 0
    for column in ("expected_cached_tokens", "expected_hit_prefill_s", "below_bound"):
        assert table[column].null_count() == table.height, column
    assert set(table["reason"]) == {NO_RATE}
    assert set(table["basis"]) == {""}
