"""The adversary of the ``bound`` row: no named scheduler of the serving table passes it.

``bound`` (docs/serving.md s. 2) is the upper-right corner no scheduler passes at a point: no
request rate above its rate, no TTFT below its TTFT, no mean TPOT below its TPOT. Every named
scheduler's row of the same point is held to it, wherever that scheduler is feasible: on every
shipped config with serving, and on generated grids (dense, MoE and window models, tp,
pipeline stages, chunk budgets; prefix hits from HBM and from the host, speculation, both).

Under a ``[workload]`` trace the ``bound`` row's rate is the bound of the trace's distribution
while the named rows are their closed forms at the mean lengths, estimates whose rate is held
under that bound (``distribution.capped``; docs/workloads.md): the whole row is held to it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from sweeps.config import parse_config
from sweeps.grid import build_grid
from sweeps.schedulers import SCHEDULERS
from sweeps.studies.serving import serving

EXAMPLES = Path(__file__).resolve().parent.parent / "configs"

RELATIVE = 1e-9
"""Rounding: a sum of the same terms in another order differs in the last digits."""


def passes_the_bound(ds: xr.Dataset, bound: xr.Dataset | None = None) -> list[str]:
    """Each named scheduler's feasible rows that beat ``bound``'s row of the same point (of
    ``bound``, a table of the same points, where given)."""
    found = []
    bound = ds.sel(mode="bound") if bound is None else bound.sel(mode="bound")
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


SERVING = sorted(
    path for path in EXAMPLES.glob("*.toml") if "serving" in tomllib.loads(path.read_text("utf-8"))
)
"""Every shipped config with a ``[serving]`` table."""


def test_the_shipped_serving_configs_are_found() -> None:
    assert {path.stem for path in SERVING} >= {
        "serving-llama3-70b",
        "serving-azure-conv-llama3-70b",
    }


@pytest.mark.parametrize("path", SERVING, ids=[path.stem for path in SERVING])
def test_no_scheduler_passes_the_bound_in_a_shipped_config(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = path.read_text(encoding="utf-8")
    ds = build_grid(parse_config(text, str(path)))
    assert passes_the_bound(ds) == []
    if "workload" in tomllib.loads(text):
        # the cap is what holds it: uncapped, named rates at the means pass the distribution's
        monkeypatch.setattr(serving, "capped", lambda named, bound: named)
        uncapped = build_grid(parse_config(text, str(path)))
        assert any(" rate: " in line for line in passes_the_bound(uncapped))


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


TECHNIQUES = [
    "prefix_hit_rate = [0.5, 0.9]",
    'prefix_hit_rate = [0.7]\nkv_tier = ["host"]',
    "spec_tokens = [2, 4]\nspec_acceptance = [0.6, 0.9]",
    'spec_tokens = [3]\nspec_acceptance = [0.8]\nprefix_hit_rate = [0.5]\nkv_tier = ["host"]',
]
"""Prefix hits from HBM and reloaded from the host, speculation, and both, as ``[axes]``."""


@settings(
    max_examples=6,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # a grid a case: no shrinking
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    model=st.sampled_from([("llama-3-8b", 1), ("mixtral-8x7b", 2), ("gpt-oss-20b", 1)]),
    hardware=st.sampled_from(["h100-sxm", "mi300x"]),
    technique=st.sampled_from(TECHNIQUES),
    prompts=st.sampled_from(["16, 512", "100, 3000"]),
    budget=st.sampled_from([0, 2048, 8192]),
)
@example(  # chunked-paced 0.78 % over the bound before each prompt read its cached prefix
    model=("llama-3-8b", 1), hardware="h100-sxm", technique=TECHNIQUES[0], prompts="16, 512",
    budget=2048,
)  # fmt: skip
@example(
    model=("mixtral-8x7b", 2), hardware="mi300x", technique=TECHNIQUES[1], prompts="16, 512",
    budget=2048,
)  # fmt: skip
@example(  # chunked-greedy with every slot decoding gave prompts the whole leftover: +13.7 %
    model=("gpt-oss-20b", 1), hardware="h100-sxm", technique=TECHNIQUES[1], prompts="2048",
    budget=512,
)  # fmt: skip
@example(  # chunked-greedy at O = 1 took k + 1 rows a slot: B (k + 1) over the budget, TTFT < 0
    model=("llama-3-8b", 1), hardware="mi300x", technique=TECHNIQUES[2], prompts="16, 512",
    budget=512,
)  # fmt: skip
def test_no_scheduler_passes_the_bound_with_prefix_hits_and_speculation(
    model: tuple[str, int], hardware: str, technique: str, prompts: str, budget: int
) -> None:
    name, tp = model
    text = GRID.format(
        model=name, hardware=hardware, tp=tp, pp=technique, dtype="bf16", prompts=prompts,
        budget=budget,
    )  # fmt: skip
    ds = build_grid(parse_config(text, "<adversary>"))
    assert passes_the_bound(ds) == []


def test_speculation_changes_no_row_where_nothing_decodes() -> None:
    # O = 1: no slot verifies, so k is no part of any scheduler's row (chunked-greedy once
    # held B - 1 slots of k + 1 rows beside the prompt, past a budget of 512 at B = 256)
    text = GRID.format(
        model="llama-3-8b", hardware="mi300x", tp=1, dtype="bf16", prompts="16, 2048",
        budget=512, pp="spec_tokens = [0, 2, 4]\nspec_acceptance = [0.6]",
    )  # fmt: skip
    ds = build_grid(parse_config(text, "<adversary>")).sel(output_tokens=1)
    for name in ("output_tokens_per_s_per_device", "serving_ttft_s", "request_latency_s"):
        values = ds[name].where(ds["serving_feasible"].astype(bool))
        for k in (2, 4):
            xr.testing.assert_identical(
                values.sel(spec_tokens=k, drop=True), values.sel(spec_tokens=0, drop=True)
            )


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
