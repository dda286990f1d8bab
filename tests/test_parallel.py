"""The parallel axes on the grid (issue 21): today's numbers at one rank, DeepSeek-V3's MLA
cache per rank, a dense model's pipeline, the all-to-all against a loop, the shipped DEP
measurements against their bounds, and bad layouts through the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from sweeps.calibrate.bounds import bounds
from sweeps.calibrate.measurements import load_measurements, shipped_measurements
from sweeps.catalog import load_catalog
from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.grid.build import build_grid
from tests.test_parallel_physics import _loop_all_to_all

BASE = """
[sweep]
name = "parallel"

[axes]
model = {models}
hardware = ["h200"]
tp = {tp}
batch = {batch}
context = [2048]
kv_dtype = ["{dtype}"]
weight_dtype = ["{dtype}"]
{extra}
"""

SERVING = """
[serving]
prompt_tokens = [512]
output_tokens = [128]
arrival_rate = [2.0]
chunk_tokens = 512
"""


def grid(
    models: str = '["deepseek-v3"]',
    tp: str = "[1, 8]",
    batch: str = "[1, 64]",
    extra: str = "",
    tables: str = "",
    dtype: str = "fp8",
) -> xr.Dataset:
    text = BASE.format(models=models, tp=tp, batch=batch, extra=extra, dtype=dtype) + tables
    return build_grid(parse_config(text))


def test_one_rank_reproduces_every_number_of_a_sweep_without_the_axes() -> None:
    models = '["deepseek-v3", "llama-3.1-8b"]'
    plain = grid(models, tables=SERVING)
    one = grid(models, extra="ep = [1]\ndp_attention = [false]\npp = [1]", tables=SERVING)
    assert set(plain.data_vars) < set(one.data_vars)
    assert {"all_to_all_bytes", "parallel", "link_bound"} <= set(one.data_vars) - set(plain)
    for name in plain.data_vars:
        extra = [d for d in ("ep", "dp_attention", "pp") if d in one[name].dims]
        ours = one[name].squeeze(extra, drop=True)
        ours = ours.transpose(*plain[name].dims)
        assert ours.dims == plain[name].dims, name
        a, b = np.asarray(ours.values), np.asarray(plain[name].values)
        if a.dtype == object:  # labels; a missing one (NaN) is the same as another missing
            same = [x == y or (x != x and y != y) for x, y in zip(a.flat, b.flat, strict=True)]
            assert all(same), name
        else:
            assert np.array_equal(a, b, equal_nan=True), name  # bit for bit


def test_deepseek_v3_at_ep_8_with_dp_attention_holds_an_eighth_of_the_latent_per_rank() -> None:
    ds = grid(extra="ep = [1, 8]\ndp_attention = [false, true]")
    tp8 = ds.sel(tp=8, ep=1, dp_attention="false")
    dep = ds.sel(tp=1, ep=8, dp_attention="true")
    kv_tp = float(tp8["kv_bytes_per_sequence_device"].squeeze())
    kv_dep = float(dep["kv_bytes_per_sequence_device"].squeeze())
    # the latent (512 + 64 per token-layer, 61 layers, fp8: 1 byte) whole on every tp device
    assert kv_tp == pytest.approx((512 + 64) * 61 * 2048 * 1.0, rel=1e-3)  # fp8's scales
    assert kv_dep * 8 == pytest.approx(kv_tp, rel=1e-15)
    # weights by hand from the config's shapes: 58 MoE layers x 256 experts of 3 x 7168 x 2048
    model = load_catalog().lookup_model("deepseek-v3")
    wb = float(ds["weight_bytes_per_param"].squeeze())
    routed = 58 * 256 * 3 * 7168 * 2048
    rest = model.params - routed
    assert float(dep["weight_bytes"].squeeze()) == pytest.approx((rest + routed / 8) * wb)
    assert float(tp8["weight_bytes"].squeeze()) == pytest.approx(model.params * wb / 8)
    # the memory wall: DEP holds more sequences in the same 8 devices
    assert int(dep["max_batch"].squeeze()) > 4 * int(tp8["max_batch"].squeeze())
    assert set(ds["parallel"].values.reshape(-1)) >= {"tp8", "tp1 ep8+dp"}


def test_a_dense_model_at_pp_2_halves_the_device_and_crosses_both_stages() -> None:
    ds = grid('["llama-3.1-8b"]', tp="[1]", batch="[4, 8]", extra="pp = [1, 2]", dtype="bf16")
    one, two = ds.sel(pp=1, tp=1), ds.sel(pp=2, tp=1)
    for name in ("weight_bytes", "kv_bytes_per_sequence_device"):
        assert float(two[name].squeeze()) == pytest.approx(float(one[name].squeeze()) / 2)
    # a stage's step of its micro-batch (4 of the 8 sequences) over its 16 of the 32 layers:
    # half of a whole device's step at batch 4
    stage = float(one["step_time_s"].sel(batch=4).squeeze()) / 2
    handoff = float(two["handoff_time_s"].sel(batch=8).squeeze())
    h200 = load_catalog().lookup_hardware("h200")
    assert handoff == pytest.approx(4 * 4096 * 2 / h200.scale_up_bandwidth)  # 4 rows of 4096 bf16
    latency = float(two["step_time_s"].sel(batch=8).squeeze())
    assert latency == pytest.approx(2 * stage + handoff, rel=1e-12)
    # the throughput is one stage's: a micro-batch of 4 per stage step
    tokens = float(two["tokens_per_s"].sel(batch=8).squeeze())
    assert tokens == pytest.approx(4 / stage, rel=1e-12)
    assert int(two["replica_devices"].squeeze()) == 2


def test_the_all_to_all_of_the_grid_is_the_loop_count() -> None:
    ds = grid(batch="[64]", extra="ep = [8]\ndp_attention = [true]")
    got = float(ds["all_to_all_bytes"].sel(tp=1).squeeze())
    activation = 2.0  # options.activation_bytes: bf16 activations
    loop = _loop_all_to_all(64, 256, 8, 7168, activation, 58, 1, 8)
    assert got == pytest.approx(loop, rel=1e-12)
    link = float(ds["all_to_all_time_s"].sel(tp=1).squeeze())
    h200 = load_catalog().lookup_hardware("h200")
    assert link == pytest.approx(loop / h200.scale_up_bandwidth)


def test_no_shipped_dep_measurement_beats_its_bound() -> None:
    rows = [m for m in load_measurements(shipped_measurements()) if m.parallel == "ep+dp"]
    assert len(rows) == 44  # TensorRT-LLM's DeepSeek-R1, gpt-oss-120b and Qwen3-235B tables
    found = bounds(rows)
    assert all(b.bound is not None and b.reason == "" for b in found)
    assert all(b.status == "ok" for b in found)
    assert max(b.ratio or 0.0 for b in found) <= 1


def test_an_ep_that_does_not_divide_the_experts_exits_2_naming_axes_ep(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    text = BASE.format(
        models='["deepseek-v3"]', tp="[1]", batch="[1]", dtype="fp8", extra="ep = [3]"
    )
    path.write_text(text, "utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert "axes.ep: [3] do not divide the 256 routed experts of model 'deepseek-v3'" in (
        result.stderr
    )
    assert "allowed: [1, 2, 4, 8, 16, 32, 64, 128, 256]" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ("pp = [2]", r"axes\.pp: \[2\] do not divide the 61 layers .* allowed: \[1, 61\]"),
    ],
)
def test_other_layouts_the_grid_cannot_build_are_named(extra: str, match: str) -> None:
    from sweeps.errors import ConfigError

    text = BASE.format(models='["deepseek-v3"]', tp="[1]", batch="[1]", dtype="fp8", extra=extra)
    with pytest.raises(ConfigError, match=match):
        parse_config(text)


def test_a_dense_model_takes_no_expert_parallelism() -> None:
    from sweeps.errors import ConfigError

    text = BASE.format(models='["llama-3.1-8b"]', tp="[3]", batch="[1]", dtype="bf16",
                       extra="ep = [2]")  # fmt: skip
    with pytest.raises(ConfigError) as error:
        parse_config(text)
    message = str(error.value)
    dense = "axes.ep: [2] do not divide the 1 routed experts (a dense model: no experts to split)"
    assert f"{dense} of model 'llama-3.1-8b'; allowed: [1]" in message
    assert "axes.tp: [3] do not divide the 32 query heads" in message


def test_a_parallel_sweep_streamed_in_chunks_writes_the_same_tables(tmp_path: Path) -> None:
    import polars as pl

    from sweeps.grid.memory import BASE_BYTES, estimate_bytes
    from sweeps.pipeline.execute import run_to_folder

    text = BASE.format(
        models='["qwen3-235b-a22b"]',
        tp="[1, 4]",
        batch="[1, 16, 256]",
        dtype="fp8",
        extra="ep = [1, 4]\ndp_attention = [false, true]",
    )
    sweep = parse_config(text + SERVING + '[outputs]\ncharts = []\ngrid = "none"\n')
    whole = run_to_folder(sweep, tmp_path / "whole")
    budget = BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // 2
    parts = run_to_folder(sweep, tmp_path / "parts", memory_budget=budget)
    assert parts.chunks > whole.chunks == 1
    for table in ("decode", "parallel", "serving", "pools"):
        keys = ("model", "hardware", "tp", "batch", "context", "ep", "dp_attention")
        a = pl.read_parquet(tmp_path / "whole" / sweep.name / f"{table}.parquet")
        b = pl.read_parquet(tmp_path / "parts" / sweep.name / f"{table}.parquet")
        order = [c for c in a.columns if c in keys or c in ("mode", "pool_mode", "decode_tp")]
        assert a.sort(order).equals(b.sort(order)), table


def test_a_chart_draws_the_smallest_replica_that_fits_and_names_it() -> None:
    from sweeps.charts.data import select

    ds = grid(extra="ep = [1, 8]\ndp_attention = [false, true]")
    sel = select(ds, "deepseek-v3", "h200")
    # nothing fits on one device; of the 8-device layouts DEP holds the most sequences
    assert sel.layout == "tp1 ep8+dp"
    assert sel.headline("x").endswith("(weights fp8, KV fp8, tp1 ep8+dp)")
    assert any(note.startswith("Drawn at tp1 ep8+dp") for note in sel.notes)
    assert "ep" not in sel.ds.dims


def test_a_plan_says_its_layout() -> None:
    from sweeps.cli.render_plans import _pool
    from sweeps.views.plans import CHOICES

    assert {"ep", "dp_attention", "pp"} <= set(CHOICES)  # a plan carries its layout
    row = {"decode_replicas": 2, "decode_hardware": "h200", "decode_tp": 1, "ep": 8}
    assert _pool({**row, "dp_attention": "true", "pp": 1}, "decode") == "2 x h200 tp1 ep8+dp"
    assert _pool({**row, "ep": 1, "dp_attention": "false", "pp": 2}, "decode") == "2 x h200 tp1 pp2"
    assert _pool({k: v for k, v in row.items() if k != "ep"}, "decode") == "2 x h200 tp1"
