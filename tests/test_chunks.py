"""Memory estimate, chunk planning and the blocked evaluation of the grid (issue 4)."""

from __future__ import annotations

import polars as pl
import pytest

import sweeps.grid.build as build
from sweeps.axes import categories
from sweeps.cli.options import parse_size
from sweeps.config import parse_config
from sweeps.errors import ConfigError
from sweeps.export.frame import decode_frame, prefill_frame
from sweeps.grid import DECODE_DIMS, PREFILL_DIMS
from sweeps.grid.chunks import needs_chunks, plan_chunks
from sweeps.grid.memory import BASE_BYTES, check_budget, estimate_bytes
from sweeps.pipeline import run_to_folder

CONFIG = """
[sweep]
name = "chunky"
[axes]
model = ["llama-3-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b"]
hardware = ["h100-sxm", "b200", "l4"]
batch = { start = 1, stop = 40 }
context = [512, 8192, 32768]
prompt = [128, 4096]
kv_dtype = ["bf16", "fp8"]
weight_dtype = ["bf16", "int4"]
tp = [1, 2]
"""


def small_budget(sweep, parts=20):
    """A budget about 1/``parts`` of what ``sweep`` needs beyond the fixed base [byte]."""
    return BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // parts


@pytest.fixture(scope="module")
def sweep():
    return parse_config(CONFIG, "chunky.toml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2GiB", 2 * 2**30),
        ("512MB", 512 * 10**6),
        ("1.5e9", 1_500_000_000),
        ("640 mib", 640 * 2**20),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "lots", "2XB", "0", "-1GiB"])
def test_parse_size_rejects(text):
    with pytest.raises(ConfigError, match="--memory-budget"):
        parse_size(text)


def test_a_budget_below_what_a_run_holds_is_refused(sweep, tmp_path):
    """No run could keep to it: the interpreter and its libraries alone hold more."""
    expected = r"--memory-budget: '64MiB' is less than a run holds before any grid \(448 MiB"
    with pytest.raises(ConfigError, match=expected + r".*allowed: at least 448MiB"):
        parse_size("64MiB")
    with pytest.raises(ConfigError, match=r"^memory budget: 1,000 bytes is less than a run"):
        run_to_folder(sweep, tmp_path, memory_budget=1000)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written
    assert parse_size("448MiB") == BASE_BYTES


@pytest.mark.parametrize("installed", [True, False])
def test_the_budget_floor_names_numba_only_where_it_is_installed(monkeypatch, installed):
    """The floor's message listed numba on an install without it (the fast extra)."""
    import importlib.util

    find_spec = importlib.util.find_spec

    def spec(name, *args):
        if name == "numba":
            return find_spec("json") if installed else None
        return find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", spec)
    for call in (lambda: parse_size("64MiB"), lambda: check_budget(1000)):
        with pytest.raises(ConfigError) as caught:
            call()
        assert "(448 MiB: Python, numpy, xarray, Polars" in str(caught.value)
        assert ("numba" in str(caught.value)) is installed


def test_estimate_counts_the_materialised_grid(sweep):
    ds = build.build_grid(sweep)
    grid = sum(ds[v].nbytes for v in ds.data_vars)
    assert estimate_bytes(sweep) > grid
    bigger = parse_config(CONFIG.replace("stop = 40", "stop = 400"), "big.toml")
    assert estimate_bytes(bigger) - BASE_BYTES > 5 * (estimate_bytes(sweep) - BASE_BYTES)


def test_plan_covers_every_point_in_order(sweep):
    budget = small_budget(sweep)
    assert needs_chunks(sweep, budget)
    chunks = plan_chunks(sweep, budget)
    assert len(chunks) > len(sweep.models)
    for dims in (DECODE_DIMS, PREFILL_DIMS):
        assert sum(c.sweep.points(dims) for c in chunks) == sweep.points(dims)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.model for c in chunks] == sorted(
        (c.model for c in chunks), key=[m.id for m in sweep.models].index
    )
    for chunk in chunks:
        assert len(chunk.sweep.models) == 1
        assert estimate_bytes(chunk.sweep) <= budget
    parts = [c.part for c in chunks if c.model == chunks[0].model]
    assert parts == list(range(len(parts)))


def test_plan_without_need_is_one_chunk_per_model(sweep):
    chunks = plan_chunks(sweep, 2**40)
    assert [c.model for c in chunks] == [m.id for m in sweep.models]
    assert not needs_chunks(sweep, 2**40)


def test_chunk_frames_concatenate_to_the_whole_frames(sweep):
    ds = build.build_grid(sweep)
    names = categories(sweep)
    chunks = plan_chunks(sweep, small_budget(sweep))
    grids = [build.build_grid(c.sweep) for c in chunks]
    for make in (decode_frame, prefill_frame):
        whole = make(ds)
        joined = pl.concat([make(g, names) for g in grids])
        assert joined.schema == whole.schema
        assert joined.equals(whole)


@pytest.mark.parametrize("use_kernel", [True, False])
def test_roofline_pass_matches_whole_array_physics(sweep, use_kernel):
    """The roofline pass (compiled or numpy) gives bit-for-bit what xarray broadcasting of the
    same physics gives."""
    from sweeps import physics

    if use_kernel:
        pytest.importorskip("numba")
    ds = build.build_grid(sweep, use_kernel=use_kernel)
    step = physics.roofline_time(
        ds["flops"],
        ds["bytes"],
        ds["peak_flops"] * sweep.options.compute_efficiency,
        ds["bandwidth"] * sweep.options.bandwidth_efficiency,
    )
    expected = step.transpose(*ds["step_time_s"].dims).values
    assert (expected == ds["step_time_s"].values).all()
    tokens = physics.tokens_per_second(ds["batch"], ds["step_time_s"])
    assert (tokens.transpose(*ds["tokens_per_s"].dims).values == ds["tokens_per_s"].values).all()
