"""Shared fixtures: small configs written as text, parsed and built on demand."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis draws the same examples on every run of the suite (``derandomize``), so CI passes
# or fails on the tree, not on the draw; `HYPOTHESIS_PROFILE=explore` draws afresh each run
# (300 examples where a test names no budget) to hunt; what it finds is pinned as an ``@example``
settings.register_profile("suite", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment, and a piped
# `sweeps` lays its tables out to COLUMNS (sweeps.cli.console): the suite runs as a user's pipe
# does, with no width named; a test that wants one names it
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
SEED_CONFIG = CONFIGS / "seed-llama3-8b-h100.toml"

BASE_CONFIG = """
[sweep]
name = "t"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
"""
"""The smallest valid config, for tests that add or break one key."""

# The note's abstract inputs: P = 8e9 at 2 bytes (2P = 16e9 bytes); one layer, one KV head of
# dim 31250 gives kv_tok = 2 * 1 * 31250 * 2 * 1 = 125,000 bytes, so KV_seq = 1e9 bytes at
# 8000 tokens and 0.064e9 bytes at 512 tokens, exactly the note's figures.
NOTE_CONFIG = """
[sweep]
name = "note"
[axes]
model = ["note-8b"]
hardware = ["h100-sxm"]
batch = [1, 16, 64, 256]
context = [8000, 512]
[options]
attention_flops = false
[models.note-8b]
params = 8e9
layers = 1
heads = 1
kv_heads = 1
head_dim = 31250
"""


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write config text to ``tmp_path/<name>.toml`` and return its path."""

    def write(text: str, name: str = "sweep") -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


KEYS = ["model", "hardware", "tp", "batch", "context", "kv_heads", "kv_dtype", "weight_dtype"]


def in_sweep_order(folder, phase, sweep):  # type: ignore[no-untyped-def]
    """The partitioned dataset read back in the sweep's order: models, then parts."""
    import polars as pl

    files = [part for m in sweep.models for part in [folder / phase / f"{m.id}.parquet"]]
    return pl.read_parquet(files)
