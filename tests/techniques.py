"""The grids the speculative and prefix tests share: a base sweep, the technique axes, a
fast custom tier, and exact equality of two arrays over their common dims."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from sweeps.config import parse_config
from sweeps.grid.build import build_grid

BASE = """
[sweep]
name = "spec"

[axes]
model = {models}
hardware = ["h100-sxm", "h200"]
batch = [1, 4, 16, 64, 256, 1024]
context = [2048, 5000]
{extra}
"""


def grid(models: str = '["llama-3.1-8b"]', extra: str = "", tables: str = "") -> xr.Dataset:
    text = BASE.format(models=models, extra=extra) + tables
    return build_grid(parse_config(text))


SPEC = """
spec_tokens = [0, 1, 4]
spec_acceptance = [0.0, 0.8, 1.0]
spec_draft = ["ngram", "mtp", "llama-3.2-1b"]
"""
PREFIX = """
prefix_hit_rate = [0.0, 0.5, 1.0]
kv_tier = ["hbm", "nvme", "fast"]
"""
FAST = """
[kv_tiers.fast]
bandwidth = 64e9
capacity = 512e9
"""


def same(a: Any, b: Any, name: str = "") -> None:
    a, b = xr.broadcast(a, b)
    np.testing.assert_array_equal(a.transpose(*b.dims).values, b.values, err_msg=name)


SERVING_VARIABLES = (
    "serving_ttft_s",
    "tpot_s",
    "request_latency_s",
    "output_tokens_per_s_per_device",
    "serving_feasible",
    "meets_slo",
    "pools_ttft_s",
    "pools_tpot_s",
    "devices",
    "pools_cost_per_million_output_tokens_usd",
)
"""The serving and pools variables a technique at its neutral value leaves bit for bit."""


def replayed_plan(config: Any, folder: Any, name: str = "replay") -> tuple[dict[str, Any], float]:
    """Run the sweep file ``config`` into ``folder`` by the CLI (exit 0), and give the one row
    of its ``simulated_expected.parquet`` (the replayed expected plan) and the request rate
    its serial-prefill expected plan (``pools_expected``) gives in closed form [1/s]."""
    import polars as pl
    from click.testing import CliRunner

    from sweeps.cli.main import cli

    result = CliRunner().invoke(cli, ["run", str(config), "--out", str(folder)])
    assert result.exit_code == 0, result.output
    replayed = pl.read_parquet(folder / name / "simulated_expected.parquet")
    assert replayed.height == 1
    pools = pl.read_parquet(folder / name / "pools_expected.parquet").filter(
        pl.col("pool_mode").cast(pl.String) == "serial-prefill"
    )
    return replayed.row(0, named=True), float(pools["expected_pools_request_rate"][0])
