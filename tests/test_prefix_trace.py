"""``prefix_hit_rate = "trace"``: the hit rate at each grid point's own cache, against a
plain dictionary LRU replayed at that point's capacity, and by hand on a three-request trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xarray as xr

import sweeps
from sweeps.catalog import load_catalog
from sweeps.errors import ConfigError
from tests.test_traces_reuse import plain_lru

BLOCK = 512
PER_TOKEN_LAYER = 2 * 8 * 128  # Llama-3.1 8B: keys and values, 8 KV heads of 128 [element]


def _write_trace(folder: Path, blocks: list[list[int]], prompts: list[int]) -> Path:
    path = folder / "reuse.jsonl"
    lines = [
        json.dumps({"timestamp": 10 * i, "input_length": p, "output_length": 4, "hash_ids": b})
        for i, (b, p) in enumerate(zip(blocks, prompts, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _config(
    folder: Path, reserve: float, trace: str = "reuse.jsonl", rates: str = '"trace"'
) -> Path:
    path = folder / "sweep.toml"
    path.write_text(
        f"""
[sweep]
name = "trace-hits"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm"]
tp = [1, 2]
batch = [1]
context = [1024]
kv_dtype = ["bf16", "fp8"]
weight_dtype = ["bf16"]
prefix_hit_rate = {rates}
prefix_trace = "{trace}"
[options]
memory_reserve = {reserve!r}
[outputs]
charts = []
grid = "none"
""",
        encoding="utf-8",
    )
    return path


def _reserve(blocks_at_tp1_bf16: float) -> float:
    """The memory reserve that leaves ``blocks_at_tp1_bf16`` blocks of a bf16 cache beside
    Llama-3.1 8B's bf16 weights on one H100."""
    catalog = load_catalog()
    memory = catalog.lookup_hardware("h100-sxm").memory
    weights = catalog.lookup_model("llama-3.1-8b").params * 2
    block = 32 * PER_TOKEN_LAYER * 2 * BLOCK
    return 1 - (weights + blocks_at_tp1_bf16 * block) / memory


def _capacities(ds: xr.Dataset) -> xr.DataArray:
    """Blocks each point's device holds, from the grid's memory and weights and the cache's
    bytes by hand [block]."""
    free = ds["memory"] * (1 - ds.attrs.get("memory_reserve", 0)) - ds["weight_bytes"]
    per_token = 32 * PER_TOKEN_LAYER * ds["kv_bytes"] / ds["tp"]
    return np.floor(np.maximum(free, 0) / (per_token * BLOCK))


def test_three_requests_by_hand(tmp_path: Path) -> None:
    # [1, 2], [1, 2, 3], [1, 4]: with 1 block the second request finds block 1 (512 tokens),
    # with 2 or more blocks 1 and 2 (1024); the third finds block 1 either way (512), of
    # 1024 + 1536 + 1024 = 3584 prompt tokens: 2/7 at one block, 3/7 from two
    _write_trace(tmp_path, [[1, 2], [1, 2, 3], [1, 4]], [1024, 1536, 1024])
    reserve = _reserve(1.25)  # 1 bf16 block at tp 1, 2 fp8 blocks
    ds = sweeps.run(_config(tmp_path, reserve))
    hit = ds["hit_rate"].squeeze()  # over tp and kv_dtype
    assert float(hit.sel(tp=1, kv_dtype="bf16")) == pytest.approx(2 / 7, abs=1e-15)
    assert float(hit.sel(tp=1, kv_dtype="fp8")) == pytest.approx(3 / 7, abs=1e-15)
    assert float(hit.sel(tp=2, kv_dtype="bf16")) == pytest.approx(3 / 7, abs=1e-15)
    recomputed = ds["tokens_recomputed"].sel(tp=1, kv_dtype="bf16").squeeze()
    assert float(recomputed) == pytest.approx(1024 * (1 - 2 / 7))


def test_every_point_equals_a_plain_lru_at_its_capacity(tmp_path: Path) -> None:
    rng = np.random.default_rng(47)
    sessions: list[list[int]] = [[0]] * 40  # every session starts with a shared system block
    blocks, prompts = [], []
    for _ in range(300):  # multi-turn sessions: each turn extends its session's prefix
        s = int(rng.integers(40))
        grown = sessions[s] + [int(b) for b in rng.integers(10**6, size=rng.integers(1, 4))]
        sessions[s] = grown
        blocks.append(grown[:12])
        prompts.append(len(blocks[-1]) * BLOCK - int(rng.integers(BLOCK)))
    _write_trace(tmp_path, blocks, prompts)
    reserve = _reserve(25.5)
    ds = sweeps.run(_config(tmp_path, reserve, rates='[0.25, "trace"]'))
    ds.attrs["memory_reserve"] = reserve
    capacity = _capacities(ds).squeeze()
    hit = ds["hit_rate"].squeeze()  # over tp, kv_dtype and prefix_hit_rate
    seen = set()
    for tp in (1, 2):
        for kv in ("bf16", "fp8"):
            c = int(capacity.sel(tp=tp, kv_dtype=kv))
            seen.add(c)
            expected = plain_lru(blocks, prompts, BLOCK, c) / sum(prompts)
            at = hit.sel(tp=tp, kv_dtype=kv)
            assert float(at.isel(prefix_hit_rate=1)) == expected, (tp, kv, c)
            assert float(at.isel(prefix_hit_rate=0)) == 0.25  # a number on the axis stays
    assert min(seen) == 25  # four capacities, the least below the working set
    assert len(seen) == 4


def test_the_prefix_table_says_the_hit_rate_and_a_null_label(tmp_path: Path) -> None:
    _write_trace(tmp_path, [[1, 2], [1, 2, 3], [1, 4]], [1024, 1536, 1024])
    ds = sweeps.run(_config(tmp_path, _reserve(1.25)))
    sweeps.to_parquet(ds, tmp_path / "out")
    table = pl.read_parquet(tmp_path / "out" / "prefix.parquet")
    assert table["prefix_hit_rate"].null_count() == table.height
    assert sorted(set(table["hit_rate"].round(12).to_list())) == [
        round(2 / 7, 12),
        round(3 / 7, 12),
    ]


@pytest.mark.parametrize(
    ("trace", "rates", "said"),
    [
        ("../outside.jsonl", '"trace"', "leads outside the config's folder"),
        ("missing.jsonl", '"trace"', "no such file"),
        ("lengths.csv", '"trace"', "has no prefix-block hashes"),
        ("reuse.jsonl", "[0.5]", "is read only where prefix_hit_rate has 'trace'"),
    ],
)
def test_bad_traces_are_refused_naming_the_key(
    tmp_path: Path, trace: str, rates: str, said: str
) -> None:
    folder = tmp_path / "inner"
    folder.mkdir()
    _write_trace(folder, [[1]], [10])
    (tmp_path / "outside.jsonl").write_text((folder / "reuse.jsonl").read_text("utf-8"))
    (folder / "lengths.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,5,5\n")
    with pytest.raises(ConfigError, match=r"axes\.prefix_trace") as error:
        sweeps.run(_config(folder, 0.1, trace, rates))
    assert said in str(error.value)
    assert repr(trace) in str(error.value)


def test_trace_without_a_file_is_refused(tmp_path: Path) -> None:
    path = _config(tmp_path, 0.1)
    path.write_text(path.read_text("utf-8").replace('prefix_trace = "reuse.jsonl"\n', ""))
    with pytest.raises(ConfigError, match=r"axes.prefix_hit_rate.*needs prefix_trace"):
        sweeps.run(path)


def test_a_shipped_slice_is_found_by_its_name(tmp_path: Path) -> None:
    ds = sweeps.run(_config(tmp_path, 0.1, "mooncake-conversation.jsonl"))
    hit = ds["hit_rate"].squeeze()
    assert bool(((hit > 0) & (hit < 1)).all())
    assert float(hit.sel(tp=2, kv_dtype="fp8")) >= float(hit.sel(tp=1, kv_dtype="bf16"))


def test_the_plans_table_and_the_manifest_name_the_traces_hit_rate(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sweeps.cli.main import cli

    _write_trace(tmp_path, [[1, 2], [1, 2, 3], [1, 4]], [1024, 1536, 1024])
    path = _config(tmp_path, 0.1, rates='[0.0, "trace"]')
    serving = "[serving]\nprompt_tokens = [1024]\noutput_tokens = [64]\narrival_rate = [2.0]\n"
    path.write_text(path.read_text("utf-8") + serving, encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    plans = result.stdout.split("cheapest serving plans")[1].splitlines()
    assert any(" trace " in line and " hbm " in line for line in plans)  # the trace's row
    assert any(" 0% " in line for line in plans)  # and h = 0's
    manifest = json.loads((tmp_path / "out" / "trace-hits" / "manifest.json").read_text("utf-8"))
    assert manifest["axes"]["prefix_hit_rate"] == [0.0, None]  # strict JSON: no NaN
