"""The adversary of the ``bound`` row: no named scheduler of the serving table passes it.

``bound`` (docs/serving.md s. 2) is the upper-right corner no scheduler passes at a point: no
request rate above its rate, no TTFT below its TTFT, no mean TPOT below its TPOT. Every named
scheduler's row of the same point is held to it, wherever that scheduler is feasible: on the
shipped example config with serving, and on generated grids (dense, MoE and window models, tp,
pipeline stages, chunk budgets).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sweeps.config import parse_config
from sweeps.grid import build_grid
from sweeps.schedulers import SCHEDULERS

EXAMPLES = Path(__file__).resolve().parent.parent / "configs"

RELATIVE = 1e-9
"""Rounding: a sum of the same terms in another order differs in the last digits."""


def passes_the_bound(ds: xr.Dataset) -> list[str]:
    """Each named scheduler's feasible rows that beat ``bound``'s row of the same point."""
    found = []
    bound = ds.sel(mode="bound")
    for mode in SCHEDULERS:
        if mode == "bound" or mode not in ds["mode"].values:
            continue
        row = ds.sel(mode=mode)
        feasible = row["serving_feasible"].astype(bool)
        checks = {
            "rate": row["output_tokens_per_s_per_device"]
            > bound["output_tokens_per_s_per_device"] * (1 + RELATIVE),
            "tpot": row["tpot_s"] < bound["tpot_s"] * (1 - RELATIVE),
            "ttft": row["serving_ttft_s"] < bound["serving_ttft_s"] * (1 - RELATIVE),
            "latency": row["request_latency_s"] < bound["request_latency_s"] * (1 - RELATIVE),
        }
        for name, beaten in checks.items():
            count = int((beaten & feasible).sum())
            if count:
                found.append(f"{mode} {name}: {count} rows")
    return found


def test_no_scheduler_passes_the_bound_in_the_shipped_example() -> None:
    path = EXAMPLES / "serving-llama3-70b.toml"
    ds = build_grid(parse_config(path.read_text(encoding="utf-8"), str(path)))
    assert passes_the_bound(ds) == []


GRID = """
[sweep]
name = "adversary"
[axes]
model = ["{model}"]
hardware = ["{hardware}"]
tp = [{tp}]
{pp}
batch = [1, 3, 16, 64, 256]
context = [4096]
weight_dtype = ["{dtype}"]
[serving]
prompt_tokens = [{prompts}]
output_tokens = [1, 2, 33, 700]
arrival_rate = [1.0]
chunk_tokens = {budget}
"""


@settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # a grid a case: no shrinking
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    model=st.sampled_from(
        [("llama-3-8b", 1), ("llama-3-8b", 2), ("mixtral-8x7b", 2), ("gpt-oss-20b", 1)]
    ),
    hardware=st.sampled_from(["h100-sxm", "b200", "mi300x"]),
    pp=st.sampled_from([1, 1, 2]),
    dtype=st.sampled_from(["bf16", "fp8"]),
    prompts=st.sampled_from(["16, 512", "100, 3000", "2048"]),
    budget=st.sampled_from([0, 512, 2048, 8192]),
)
def test_no_scheduler_passes_the_bound_on_generated_grids(
    model: tuple[str, int],
    hardware: str,
    pp: int,
    dtype: str,
    prompts: str,
    budget: int,
) -> None:
    name, tp = model
    text = GRID.format(
        model=name,
        hardware=hardware,
        tp=tp,
        pp=f"pp = [{pp}]" if pp > 1 else "",
        dtype=dtype,
        prompts=prompts,
        budget=budget,
    )
    ds = build_grid(parse_config(text, "<adversary>"))
    assert passes_the_bound(ds) == []


def test_the_adversary_finds_a_row_under_a_bound_moved_up() -> None:
    """The check can fail: a bound's TPOT raised by 1 % is passed by the schedulers."""
    path = EXAMPLES / "serving-llama3-70b.toml"
    ds = build_grid(parse_config(path.read_text(encoding="utf-8"), str(path)))
    tpot = ds["tpot_s"].copy()
    tpot.loc[{"mode": "bound"}] = tpot.sel(mode="bound") * 1.01
    assert any("tpot" in line for line in passes_the_bound(ds.assign(tpot_s=tpot)))
    assert np.isfinite(ds["tpot_s"].sel(mode="bound")).any()


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
