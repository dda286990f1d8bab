"""Save the expected pass's results on a small grid as an oracle (tests/data/expected_oracle.npz).

The grid crosses dense, GQA, MoE, sliding-window and MLA models, devices with and without
data, two tensor-parallel degrees, both KV and weight formats and the three engines, at
batches and contexts that fall on, between and outside the measured points. The oracle was
first written by the per-shape pass (one lookup and one composition per shape, before the
pass was vectorized); ``tests/test_expected_vectorized.py`` holds the pass to it bit for bit.
Regenerate only when the numbers move on purpose, and say why:

    PYTHONPATH=$PWD python scripts/expected_oracle.py [OUT]
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np

CONFIG = """
[sweep]
name = "expected-oracle"

[axes]
model = ["llama-3.1-8b", "qwen3-32b", "qwen3-235b-a22b", "gpt-oss-20b", "deepseek-v3"]
hardware = ["h100-sxm", "b200", "mi300x"]
tp = [1, 4]
batch = [1, 3, 8, 64, 300]
context = [128, 1000, 8192, 40000]
kv_dtype = ["bf16", "fp8"]
weight_dtype = ["bf16", "fp8"]
engine = ["vllm", "trtllm", "sglang"]
"""
"""The oracle's grid: 3,600 decode points, 43,200 kernel rows (the saved oracle holds 36,000,
its ten operations: ``dispatch`` and ``handoff``, appended since, are zero on a grid without
``ep`` or ``pp``, and its test holds them so)."""

VARIABLES = (
    "expected_step_time_s",
    "expected_tokens_per_s",
    "expected_ttft_s",
    "expected_token_time_b1_s",
    "expected_device_tokens_per_s_b1",
    "expected_token_time_wall_s",
    "expected_device_tokens_per_s_wall",
    "roofline_share",
    "below_bound",
    "expected_basis",
    "expected_reason",
    "kernel_expected_s",
    "kernel_bound_s",
    "kernel_roofline_share",
    "kernel_basis",
)
"""The expected study's variables the oracle holds (every one it declares)."""

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "expected_oracle.npz"


def results(config: str = CONFIG) -> dict[str, np.ndarray]:
    """The grid's expected variables, each as an array in its dims' order."""
    from sweeps.config import parse_config
    from sweeps.grid import build_grid

    ds = build_grid(parse_config(config, "<expected-oracle>"))
    out = {}
    for name in VARIABLES:
        values = ds[name].values
        out[name] = values.astype(str) if values.dtype == object else values
    return out


def main(out: Path = DEFAULT) -> None:
    arrays = results()
    np.savez_compressed(
        out, config=np.array(CONFIG), database=np.array(version("aiconfigurator-core")), **arrays
    )
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
