"""Speculative decoding on expected steps (``speculative_expected``, issue 43): k = 0 is the
expected decode step bit for bit, the verify step against aiconfigurator's own nextn step, each
draft kind against the expected steps it is made of, the manifest's counts, and no table (nor
any change) without an engine.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xarray as xr
from click.testing import CliRunner

from sweeps.catalog import load_catalog
from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.grid.build import build_grid
from sweeps.studies.expected.speculative import SPECULATIVE_EXPECTED
from sweeps.studies.expected.step import step

from .test_expected import AIC_MODELS, NOT_COUNTED, _config

pytest.importorskip("aiconfigurator_core")

SPEC = """
engine = ["vllm"]
spec_tokens = [0, 2, 4]
spec_acceptance = [0.0, 0.7, 1.0]
spec_draft = ["ngram", "mtp", "llama-3.2-1b"]
"""


def _build(extra: str) -> xr.Dataset:
    text = f"""
[sweep]
name = "spec-expected"

[axes]
model = ["llama-3.1-8b"]
{extra}
"""
    return build_grid(parse_config(text))


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    # the H100 is in the database, the MI300X is not
    return _build(
        SPEC + 'hardware = ["h100-sxm", "mi300x"]\nbatch = [1, 8, 64]\ncontext = [1024, 4096]'
    )


def _bits(a: xr.DataArray, b: xr.DataArray, name: str) -> None:
    """``a`` equals ``b`` bit for bit over ``b``'s points, NaN where ``b`` is NaN."""
    a, b = xr.broadcast(a, b)
    x, y = a.transpose(*b.dims).values, b.values
    if y.dtype.kind == "f":
        assert ((x == y) | (np.isnan(x) & np.isnan(y))).all(), name
    else:
        assert (x == y).all(), name


K0 = {
    "expected_verify_time_s": "expected_step_time_s",
    "expected_spec_time_per_output_token_s": "expected_step_time_s",
    "expected_spec_tokens_per_s": "expected_tokens_per_s",
    "spec_roofline_share": "roofline_share",
    "spec_below_bound": "below_bound",
    "expected_spec_basis": "expected_basis",
}
"""What ``k = 0`` of the speculative table is, bit for bit: expected.parquet's column."""


def k0_bits(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` at ``k = 0``, each column of ``K0`` asserted equal to its plain one bit for bit."""
    at = ds.sel(spec_tokens=0)
    for spec, plain in K0.items():
        _bits(at[spec], ds[plain], spec)
    return at


def test_k0_is_the_expected_decode_step_bit_for_bit(ds: xr.Dataset) -> None:
    at = k0_bits(ds)
    _bits(at["expected_spec_reason"], ds["expected_reason"], "reason")
    assert (at["expected_draft_time_s"].sel(hardware="h100-sxm") == 0).all()
    known = at["expected_spec_speedup"].where(~np.isnan(at["expected_spec_speedup"]))
    assert (known.fillna(1.0) == 1.0).all()
    assert np.isfinite(at["expected_spec_time_per_output_token_s"]).any()  # the test can fail


def test_more_accepted_tokens_are_never_slower_per_token(ds: xr.Dataset) -> None:
    per_token = ds["expected_spec_time_per_output_token_s"].sel(hardware="h100-sxm")
    steps = per_token.diff("spec_acceptance")
    assert (steps <= 0).all()
    assert (steps.sel(spec_tokens=4) < 0).all()  # strictly where drafts are verified
    # at acceptance 0 a verification yields one token: never faster than plain decode
    plain = ds["expected_step_time_s"].sel(hardware="h100-sxm")
    assert (per_token.sel(spec_acceptance=0.0) >= plain).all()


def test_a_device_without_data_is_null_with_the_reason(ds: xr.Dataset) -> None:
    at = ds.sel(hardware="mi300x")
    assert np.isnan(at["expected_spec_time_per_output_token_s"]).all()
    assert np.isnan(at["spec_below_bound"]).all()
    assert set(np.unique(at["expected_spec_basis"].values)) == {""}
    assert set(np.unique(at["expected_spec_reason"].values)) == {
        "device 'mi300x' not in the database"
    }


def test_each_draft_is_the_expected_steps_it_is_made_of(ds: xr.Dataset) -> None:
    """ngram costs nothing; an MTP head is k passes of the target's mean layer and its LM
    head (from kernels, the expected pass's own operations); a draft model is k of its own
    decode steps at S .. S + k - 1, each composed alone (``step``: the per-shape path)."""
    point = {"hardware": "h100-sxm", "batch": 8, "context": 4096, "spec_tokens": 4}
    draft = ds["expected_draft_time_s"].sel(**point).squeeze()
    assert draft.sel(spec_draft="ngram") == 0.0
    kernels = ds["kernel_expected_s"].sel({k: v for k, v in point.items() if k != "spec_tokens"})
    kernels = kernels.squeeze()
    layers = 32  # Llama-3.1-8B
    outside = ["embedding", "lm_head"]
    layer = kernels.drop_sel(operation=outside).sum("operation") / layers
    mtp = 4 * (layer + kernels.sel(operation="lm_head"))
    assert float(draft.sel(spec_draft="mtp")) == pytest.approx(float(mtp), rel=1e-12)
    config = _config("llama-3.1-8b", "h100-sxm", 1)
    one_b = load_catalog().models["llama-3.2-1b"]
    drafting = dataclasses.replace(config, model=one_b, kv_heads=one_b.kv_heads)
    steps = [step(drafting, np.array([8]), np.array([4096 + j])).total()[0, 0] for j in range(4)]
    assert float(draft.sel(spec_draft="llama-3.2-1b")) == pytest.approx(sum(steps), rel=1e-12)


def test_the_verify_step_is_aiconfigurators_nextn_step_of_the_same_operations() -> None:
    """aiconfigurator prices a nextn (MTP) step as its decode step at ``B (k + 1)`` rows, its
    operations counted ``(L + k) / L`` times (``mtp_scale_factor``: k MTP layers). Its ``L``
    layers' share, at 20 seeded points each, against the verify step: within 10 % (measured:
    Llama-3.1-8B on H100 median 0.10 %, at most 0.61 %; Qwen3-235B-A22B at tp 8 at most
    0.02 %)."""
    from aiconfigurator_core.sdk.engine import EngineHandle

    spec = _build(
        'hardware = ["h100-sxm"]\nbatch = [1, 3, 16, 64]\ncontext = [512, 4096, 16384]\n'
        'engine = ["vllm"]\nspec_tokens = [1, 2, 4]\nspec_acceptance = [0.7]\n'
        'spec_draft = ["ngram"]'
    )
    verify = spec["expected_verify_time_s"].squeeze()
    layers, rng = 32, random.Random(43)
    handles = {}
    for k in (1, 2, 4):
        quiet = io.StringIO()
        with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
            handles[k] = EngineHandle.compile(
                AIC_MODELS["llama-3.1-8b"], "h100_sxm", "vllm", tp_size=1, moe_tp_size=1,
                moe_ep_size=1, nextn=k,
            )  # fmt: skip
    for _ in range(20):
        k, batch, context = (
            rng.choice([1, 2, 4]),
            rng.choice([1, 3, 16, 64]),
            rng.choice([512, 4096, 16384]),
        )
        rows = handles[k].decode_step_per_op(batch, context - 1, 2)
        theirs = sum(v for name, v, *_ in rows if not any(n in name for n in NOT_COUNTED))
        ours = float(verify.sel(spec_tokens=k, batch=batch, context=context))
        assert ours == pytest.approx(theirs * 1e-3 * layers / (layers + k), rel=0.10)


def test_no_table_without_speculation_or_an_engine_and_one_with_the_parallel_axes() -> None:
    plain = _build('hardware = ["h100-sxm"]\nbatch = [1]\ncontext = [1024]\nengine = ["vllm"]')
    assert "expected_spec_time_per_output_token_s" not in plain
    assert "expected_step_time_s" in plain  # the check can fail
    no_engine = _build(
        'hardware = ["h100-sxm"]\nbatch = [1]\ncontext = [1024]\nspec_tokens = [0, 2]'
    )
    assert "expected_spec_time_per_output_token_s" not in no_engine
    assert "spec_time_per_output_token_s" in no_engine
    axes = 'model = ["llama-3.1-8b"]\nhardware = ["h100-sxm"]\nengine = ["vllm"]\nspec_tokens = [0, 2]\n'
    speculating = parse_config(f"[sweep]\nname = 's'\n[axes]\n{axes}")
    assert SPECULATIVE_EXPECTED.wanted(speculating)
    parallel = parse_config(f"[sweep]\nname = 's'\n[axes]\n{axes}pp = [1, 2]\n")
    assert SPECULATIVE_EXPECTED.wanted(parallel)  # composed on parallel layouts (issue 43)


def test_a_run_counts_the_table_in_its_manifest(
    write_config: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_config(
        '[sweep]\nname = "spec-expected"\n[axes]\nmodel = ["llama-3.1-8b"]\n'
        'hardware = ["h100-sxm", "mi300x"]\nbatch = [1, 8]\ncontext = [1024]\n' + SPEC
    )
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "spec-expected"
    table = pl.read_parquet(folder / "speculative_expected.parquet")
    bound = pl.read_parquet(folder / "speculative.parquet")
    assert table.height == bound.height  # one engine
    counts = json.loads((folder / "manifest.json").read_text())["speculative_expected"]
    assert counts == {
        "rows": table.height,
        "below_bound": int(table["below_bound"].sum()),
        "without_data": table["expected_time_per_output_token_s"].null_count(),
        **{b: int((table["basis"] == b).sum()) for b in ("measured", "interpolated",
                                                          "extrapolated")},
    }  # fmt: skip
    assert counts["without_data"] == table.height // 2  # the MI300X's rows
    h100 = table.filter(pl.col("hardware") == "h100-sxm")
    share = h100["time_per_output_token_s"] / h100["expected_time_per_output_token_s"]
    assert (h100["roofline_share"] == share).all()
    assert h100["roofline_share"].is_between(0.2, 1.0).all()


STREAMED = """
[sweep]
name = "spec-expected-stream"
[axes]
model = ["llama-3.1-8b", "qwen3-8b"]
hardware = ["h100-sxm", "h200", "mi300x"]
batch = [1, 8, 64]
context = [1024, 4096]
engine = ["vllm", "trtllm"]
spec_tokens = [0, 3]
spec_acceptance = [0.7]
spec_draft = ["ngram", "mtp", "llama-3.2-1b"]
[outputs]
charts = []
grid = "none"
"""


def test_a_streamed_table_equals_the_whole_one(tmp_path: Path) -> None:
    from sweeps.grid.memory import BASE_BYTES, estimate_bytes
    from sweeps.pipeline import run_to_folder

    sweep = parse_config(STREAMED, "stream.toml")
    budget = BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // 2  # 2 chunks in flight
    whole = run_to_folder(sweep, tmp_path / "whole")
    parts = run_to_folder(sweep, tmp_path / "parts", memory_budget=budget)
    assert parts.chunks > 1
    name = "speculative_expected.parquet"
    table = pl.read_parquet(whole.folder / name)
    assert table["expected_time_per_output_token_s"].is_not_null().any()
    assert pl.read_parquet(parts.folder / name).equals(table)


@pytest.mark.parametrize(
    ("model", "engine"),
    [("qwen3-235b-a22b", "vllm"), ("deepseek-v3", "trtllm"), ("deepseek-v3", "sglang"),
     ("gpt-oss-20b", "vllm")],
)  # fmt: skip
def test_the_verify_steps_decode_is_composes_decode_step_bit_for_bit(
    model: str, engine: str
) -> None:
    """``step.decode`` (a verify step's) against ``compose`` (expected.parquet's) on a MoE,
    an MLA model at its FP8 (its module and its granular composition) and a windowed one."""
    from sweeps.studies.expected.step import compose, decode

    tp = 1 if model == "gpt-oss-20b" else 8
    config = _config(model, "h100-sxm", tp, engine)
    if model == "gpt-oss-20b":  # its MXFP4 experts (the database holds no bf16 ones)
        config = dataclasses.replace(config, weight_dtype="fp4", weight_bytes=0.53125)
    batch, context = np.array([1, 5, 64, 300]), np.array([100, 2048, 30000])
    whole = compose(config, batch, context, np.array([], dtype=np.int64), np.array([]))
    alone = decode(config, batch, context)
    assert not isinstance(whole, str)
    assert not isinstance(alone, str)
    assert np.isfinite(whole.step).all()
    assert (alone.step == whole.step).all()
    assert (alone.step_basis == whole.step_basis).all()


# The verify step with each cache read once (``expected_verify_time_once_s``, issue 43)

LLAMA = """
engine = ["vllm"]
hardware = ["h100-sxm"]
batch = [1, 32]
context = [4096]
spec_tokens = [0, 4]
spec_acceptance = [0.7]
spec_draft = ["ngram"]
"""


def test_the_once_reading_is_the_decode_step_at_k0_and_never_above_the_per_row_one(
    ds: xr.Dataset,
) -> None:
    once, rows = ds["expected_verify_time_once_s"], ds["expected_verify_time_s"]
    _bits(once.sel(spec_tokens=0), ds["expected_step_time_s"], "once at k 0")
    assert (np.isnan(once) == np.isnan(rows)).all()  # null where the per-row one is
    known = np.isfinite(rows)
    assert int(known.sum()) > 0
    assert (once.where(known) <= rows.where(known)).where(known, True).all()
    assert (
        (once.sel(spec_tokens=4) < rows.sel(spec_tokens=4))
        .where(known.sel(spec_tokens=4), True)
        .all()
    )  # k 4 reads the cache 5 times a sequence per row, once here: strictly cheaper
    plain = ds["expected_step_time_s"]
    speedup = ds["expected_spec_speedup_once"]
    e, draft = ds["expected_tokens"], ds["expected_draft_time_s"]
    assert np.allclose(speedup, plain * e / (once + draft), rtol=1e-12, equal_nan=True)
    assert (speedup >= ds["expected_spec_speedup"]).where(np.isfinite(speedup), True).all()


def test_the_once_reading_holds_the_gemms_and_its_attention_floor() -> None:
    """Above the plain step's operations other than attention (its GEMMs, LM head,
    all-reduces) and the roofline of its k + 1 queries' attention; the floor binds where the
    measured decode attention is below it (k 128: 129 queries a sequence, FLOPs-bound)."""
    from sweeps.physics import attention_time
    from sweeps.studies.expected.speculative import _once
    from sweeps.studies.expected.step import decode, verify_attention_floor

    config = _config("llama-3.1-8b", "h100-sxm", 1)
    batch, context = np.array([1, 32, 256]), np.array([1024, 16384])
    plain = decode(config, batch, context)
    assert not isinstance(plain, str)
    others = sum(v for op, v in plain.expected.items() if op != "attention")
    for k in (1, 4, 128):
        rows = decode(config, batch, context, k + 1)
        assert not isinstance(rows, str)
        once = _once(config, plain, rows, k, batch, context)
        floor = verify_attention_floor(config, batch, context, k)
        assert (once >= others + floor * (1 - 1e-12)).all(), k
        assert (once >= plain.step * (1 - 1e-12)).all(), k
        assert (once <= rows.step).all(), k
    # at k 0 the floor is the plain step's own attention bound, layer for layer
    m = config.model
    own = attention_time(
        batch[:, None], context[None, :], m.heads, m.kv_heads, m.head_dim, 2.0,
        config.attention_peak, config.device.bandwidth, False,
    )  # fmt: skip
    assert np.allclose(verify_attention_floor(config, batch, context, 0), own * m.layers)
    big = verify_attention_floor(config, batch, context, 128)
    assert (big > plain.expected["attention"]).any()  # the floor can bind


def test_the_once_reading_on_llama_8b_h100_vllm_by_hand() -> None:
    """k 4, S 4096: the verify step over the plain one 2.81 read per row, 1.01 with each
    cache read once at B 32; 1.21 and 1.07 at B 1 (issue 43's figures)."""
    ds = _build(LLAMA).squeeze()
    plain = ds["expected_step_time_s"]
    rows = ds["expected_verify_time_s"].sel(spec_tokens=4) / plain
    once = ds["expected_verify_time_once_s"].sel(spec_tokens=4) / plain
    assert float(rows.sel(batch=32)) == pytest.approx(2.81, rel=0.01)
    assert float(once.sel(batch=32)) == pytest.approx(1.01, rel=0.01)
    assert float(rows.sel(batch=1)) == pytest.approx(1.21, rel=0.01)
    assert float(once.sel(batch=1)) == pytest.approx(1.07, rel=0.01)


def test_the_once_reading_is_null_for_an_mla_model() -> None:
    from sweeps.studies.expected.step import verify_attention_floor

    config = _config("deepseek-v3", "h100-sxm", 8, "trtllm")
    assert np.isnan(verify_attention_floor(config, np.array([1]), np.array([1024]), 2)).all()
