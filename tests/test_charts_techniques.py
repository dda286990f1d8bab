"""The speculative, prefix and energy charts: valid Vega-Lite, and their sentences say what the
grid says (the best speedup, the break-even batch, the tiers that beat recomputing)."""

from __future__ import annotations

import pytest
import xarray as xr

from sweeps.charts import techniques
from sweeps.config import parse_config
from sweeps.grid.build import build_grid

CONFIG = """
[sweep]
name = "charts"
[axes]
model = ["llama-3.1-70b"]
hardware = ["h200"]
batch = [1, 16, 64, 256, 1024]
context = [1024]
prompt = [4096]
weight_dtype = ["fp8"]
kv_dtype = ["fp8"]
spec_tokens = [0, 4]
spec_acceptance = [0.7]
spec_draft = ["ngram", "llama-3.1-8b"]
prefix_hit_rate = [0.0, 0.9]
kv_tier = ["host", "nvme"]
[serving]
prompt_tokens = [1024]
output_tokens = [128]
arrival_rate = [2.0]
"""


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    return build_grid(parse_config(CONFIG))


@pytest.mark.parametrize("name", list(techniques.BUILDERS))
def test_builders_give_valid_specs(ds: xr.Dataset, name: str) -> None:
    _, has, builder = techniques.BUILDERS[name]
    assert has(ds)
    spec = builder(ds, "llama-3.1-70b").to_dict()  # validated against the schema
    assert spec["title"]["subtitle"]


def test_energy_chart_is_valid(ds: xr.Dataset) -> None:
    spec = techniques.energy_chart(ds, "llama-3.1-70b").to_dict()
    assert "tokens per joule" in spec["title"]["subtitle"][1]


def test_speedup_sentence_names_the_break_even_batch(ds: xr.Dataset) -> None:
    sentence = techniques.speedup_sentence(ds, "llama-3.1-70b")
    at = ds.sel(hardware="h200", spec_tokens=4, spec_draft="ngram", context=1024).squeeze()
    even = float(at["break_even_batch"])
    best = float(at["speedup"].isel(batch=0))
    assert "ngram with k = 4 at alpha = 0.7" in sentence
    assert f"{best:.2f}x" in sentence
    assert f"stops paying at batch {int(even)}" in sentence


def test_prefix_sentence_names_the_tiers_that_beat_recomputing(ds: xr.Dataset) -> None:
    sentence = techniques.prefix_sentence(ds, "llama-3.1-70b")
    at = ds.sel(hardware="h200", prefix_hit_rate=0.9, prompt=4096).isel(batch=0).squeeze()
    pays = [str(t) for t in at["kv_tier"].values if bool(at["reload_pays"].sel(kv_tier=t))]
    assert pays == ["host"]  # 64 GB/s clears it, 1.75 GB/s of a shared drive does not
    assert sentence.endswith("recomputing the prompt: host.")
    assert f"{float(at['break_even_bandwidth']) / 1e9:.3g}" in sentence


PARALLEL = """
[sweep]
name = "techniques-dep"

[axes]
model = ["deepseek-v3"]
hardware = ["h200"]
tp = [1]
ep = [1, 8]
dp_attention = [true]
batch = [1, 64]
context = [2048]
prompt = [2048]
kv_dtype = ["fp8"]
weight_dtype = ["fp8"]
spec_tokens = [0, 2]
spec_acceptance = [0.8]
spec_draft = ["mtp"]
prefix_hit_rate = [0.0, 0.5]
kv_tier = ["hbm"]
"""


@pytest.mark.parametrize("name", list(techniques.BUILDERS))
def test_with_the_parallel_axes_a_technique_chart_draws_one_layout(name: str) -> None:
    # tp 1 at ep 1 does not fit DeepSeek-V3: the chart draws the DEP rank and names it
    ds = build_grid(parse_config(PARALLEL))
    _, has, builder = techniques.BUILDERS[name]
    assert has(ds)
    spec = builder(ds, "deepseek-v3").to_dict()
    assert "tp1 ep8+dp" in spec["title"]["subtitle"][0]
    rows = next(iter(spec["datasets"].values()))
    assert {row.get("ep", 8) for row in rows} == {8}  # one layout's rows, not both mixed
    if name == "speedup":
        dep = ds.sel(ep=8, spec_tokens=2, batch=1).squeeze()
        assert f"{float(dep['speedup']):.2f}x" in techniques.speedup_sentence(ds, "deepseek-v3")


def _dominated(xs: list[float], ys: list[float], i: int) -> bool:
    """The plain reading of a front: row ``i`` is beaten where another row is at least as
    fast and at least as frugal, and better in one (or the same, and listed first)."""
    for j in range(len(xs)):
        if j == i or xs[j] < xs[i] or ys[j] < ys[i]:
            continue
        if xs[j] > xs[i] or ys[j] > ys[i] or j < i:
            return True
    return False


@pytest.mark.parametrize("seed", range(40))
def test_the_front_is_the_rows_no_other_beats(seed: int) -> None:
    """An adversary: random groups with ties (small integers) against the pairwise loop."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    frame = pd.DataFrame(
        {
            "g": rng.choice(["a", "b", "c"], n),
            "x": rng.integers(0, 6, n).astype(float),
            "y": rng.integers(0, 6, n).astype(float),
        },
        index=rng.permutation(n) + 100,  # not a range: the result follows the index
    )
    got = techniques.on_front(frame, "x", "y", "g")
    for group in frame["g"].unique():
        rows = frame[frame["g"] == group]
        xs, ys = rows["x"].tolist(), rows["y"].tolist()
        expected = [not _dominated(xs, ys, i) for i in range(len(rows))]
        assert got[rows.index].tolist() == expected, (seed, group)


ENERGY = """
[sweep]
name = "energy"
[axes]
model = ["llama-3.1-70b"]
hardware = ["h200", "h100-sxm"]
tp = [2, 4, 8]
batch = [1, 4, 16, 64, 256]
context = [1024]
weight_dtype = ["fp8"]
kv_dtype = ["fp8"]
[serving]
prompt_tokens = [1024]
output_tokens = [128]
arrival_rate = [2.0]
"""


def test_energy_draws_each_device_as_a_front_not_a_zigzag() -> None:
    """The line of a device joins its front alone, in order of speed: along it, tokens per
    joule only fall (before, one line joined every tp and batch, up and down)."""
    grid = build_grid(parse_config(ENERGY))
    spec = techniques.energy_chart(grid, "llama-3.1-70b").to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert len(rows) > 2 * len({r["hardware"] for r in rows})  # several tp and batch a device
    filters = sorted(layer["transform"][0]["filter"] for layer in spec["layer"])
    assert filters == ["!datum.front", "datum.front"]
    line = next(
        layer for layer in spec["layer"] if layer["transform"][0]["filter"] == "datum.front"
    )
    assert line["mark"]["type"] == "line"
    for device in ("h200", "h100-sxm"):
        mine = [r for r in rows if r["hardware"] == device]
        front = sorted((r for r in mine if r["front"]), key=lambda r: r["tokens_per_s_per_user"])
        assert front
        energy = [r["serving_output_tokens_per_joule"] for r in front]
        assert energy == sorted(energy, reverse=True)
        for r in mine:  # every point off the front is beaten by one on it
            if not r["front"]:
                assert any(
                    f["tokens_per_s_per_user"] >= r["tokens_per_s_per_user"]
                    and f["serving_output_tokens_per_joule"] >= r["serving_output_tokens_per_joule"]
                    for f in front
                )
    assert "front" in " ".join(spec["title"]["subtitle"])


PREFIX_SLICES = """
[sweep]
name = "prefix-slices"
[axes]
model = ["deepseek-v3"]
hardware = ["h200", "b200"]
tp = [8]
batch = [1, 4]
context = [1024]
prompt = [2048, 8192]
kv_dtype = ["fp8"]
weight_dtype = ["fp8"]
prefix_hit_rate = [0.0, 0.5, 0.9]
kv_tier = ["hbm", "host"]
[options]
attention_flops = true
"""


@pytest.fixture(scope="module")
def prefix_grid() -> xr.Dataset:
    return build_grid(parse_config(PREFIX_SLICES))


def _saved(grid: xr.Dataset) -> dict[tuple[str, int], float]:
    """A plain loop: the share of TTFT the best hit rate and tier save, per device and prompt,
    at the first batch."""
    out = {}
    for device in grid["hardware"].values:
        for prompt in grid["prompt"].values:
            at = grid.sel(model="deepseek-v3", hardware=device, prompt=prompt).isel(batch=0)
            best = min(float(v) for v in at["prefix_ttft_s"].values.reshape(-1))
            out[(str(device), int(prompt))] = 1 - best / float(at["ttft_s"].squeeze())
    return out


def test_the_prefix_figure_is_drawn_where_caching_saves_most(prefix_grid: xr.Dataset) -> None:
    """Issue 46: the DeepSeek prefix figure drew a 0.15 % effect (three flat lines) at the
    first prompt; it is drawn at the device and prompt where caching saves the most."""
    saved = _saved(prefix_grid)
    (device, prompt), most = max(saved.items(), key=lambda item: item[1])
    assert saved[(device, 2048)] < 0.01 < most  # one slice flat, another not
    caption = " ".join(
        techniques.prefix_ttft_chart(prefix_grid, "deepseek-v3").to_dict()["title"]["subtitle"]
    )
    assert f"deepseek-v3 on {device}, tp 8" in caption
    assert f"prompt {prompt}." in caption
    assert f"is largest ({most:.1%})" in caption


def test_a_negligible_effect_is_said_with_its_size_and_why(prefix_grid: xr.Dataset) -> None:
    flat = prefix_grid.sel(prompt=[2048])
    most = max(_saved(flat).values())
    assert 0 < most < 0.01
    spec = techniques.prefix_ttft_chart(flat, "deepseek-v3").to_dict()
    caption = " ".join(spec["title"]["subtitle"])
    assert f"negligible on this grid: at most {most:.2%} on any slice" in caption
    assert "bound by reading the weights" in caption


def test_the_speedup_figure_is_drawn_where_speculation_gains_most(ds: xr.Dataset) -> None:
    at = ds.sel(model="llama-3.1-70b").isel(batch=0)
    gains = {
        (str(h), int(c)): float(
            at["speedup"].sel(hardware=h, context=c).where(at["spec_tokens"] > 0).max()
        )
        - 1
        for h in ds["hardware"].values
        for c in ds["context"].values
    }
    (device, context), most = max(gains.items(), key=lambda item: item[1])
    caption = " ".join(techniques.speedup_chart(ds, "llama-3.1-70b").to_dict()["title"]["subtitle"])
    assert f"on {device}," in caption
    assert f"context {context}." in caption
    assert f"gain over plain decode is largest ({most:.1%})" in caption
