"""The named schedulers' closed forms and the bound over every scheduler, against plain loops.

The loops of ``tests/schedulers.py`` run each scheduler step by step, every step priced by the
grid's own per-step functions at the point (``Costs``, held equal here to the decode and
prefill tables). Each closed form of the serving table matches its scheduler's loop within
0.5 % on throughput and mean TPOT at pinned points (serving.md's check point, two
budget-limited points, MoE, tp 2, B = 1, short and long prompts); and on hypothesis-generated
points no scheduler, from an empty start, ever completes requests faster than ``bound`` or
gives a first token sooner.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweeps.config import parse_config
from sweeps.grid import build_grid
from sweeps.schedulers import CHUNKED, SCHEDULERS

from .schedulers import Costs, saturate

CONFIG = """
[sweep]
name = "schedulers"
[axes]
model = ["{model}"]
hardware = ["{hardware}"]
tp = [{tp}]
batch = [{batch}]
context = [{context}]
prompt = [{prompt}]
kv_heads = ["native"]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
[options]
attention_flops = true
[serving]
prompt_tokens = [{prompt}]
output_tokens = [{output}]
arrival_rate = [1.0]
chunk_tokens = {budget}
"""


@lru_cache(maxsize=64)
def point(
    model: str, hardware: str, tp: int, batch: int, prompt: int, output: int, budget: int
) -> tuple[Costs, xr.Dataset]:
    """The step costs and the grid of one operating point (budget 0: chunking off)."""
    text = CONFIG.format(
        model=model,
        hardware=hardware,
        tp=tp,
        batch=batch,
        context=prompt + output,
        prompt=prompt,
        output=output,
        budget=budget,
    )
    sweep = parse_config(text, "<point>")
    return Costs(sweep), build_grid(sweep)


def closed(ds: xr.Dataset, mode: str) -> dict[str, float]:
    """The serving table's rate [request/s per replica], TPOT and TTFT of ``mode``."""
    row = ds.sel(mode=mode)
    output, tp = float(ds["output_tokens"].values[0]), float(ds["tp"].values[0])

    def one(name: str) -> float:
        return float(row[name].squeeze())

    return {
        "rate": one("output_tokens_per_s_per_device") * tp / output,
        "tpot": one("tpot_s"),
        "ttft": one("serving_ttft_s"),
    }


def test_costs_price_the_grid_tables() -> None:
    """A step of ``B`` decodes at one context costs the decode table's step; a step of ``m``
    whole prompts the prefill table's ``t_p(m, I)``: the loops price what the grid prices."""
    for model, tp in (("llama-3-8b", 1), ("mixtral-8x7b", 2), ("gpt-oss-20b", 1)):
        costs, ds = point(model, "h100-sxm", tp, 32, 700, 100, 0)
        step = costs.step(np.full(32, 800.0), [])
        assert step == pytest.approx(float(ds["step_time_s"].squeeze()), rel=1e-12)
        costs1, ds1 = point(model, "h100-sxm", tp, 1, 700, 100, 0)
        alone = costs1.step(np.zeros(0), [(0, 700, True)])
        assert alone == pytest.approx(float(ds1["ttft_s"].squeeze()), rel=1e-12)
        # three prompts, two pieces each: the pieces' FLOPs and writes add up to the whole
        split = [(0, 300, False), (300, 400, True)]
        flops_whole = costs1._prompt(700)
        flops_split = sum(
            costs1._prompt(p + c) - costs1._prompt(p) + (costs1._prompt(0) if last else 0.0)
            for p, c, last in split
        )
        assert flops_split == pytest.approx(flops_whole, rel=1e-12)


PINNED = [
    # serving.md's check point: Llama-3 8B, H100, B 64, I 2048, O 256, tau 2048
    ("llama-3-8b", "h100-sxm", 1, 64, 2048, 256, 2048),
    # short prompts at a large batch, where batching the prefills wins 2.24x (serving.md s. 0)
    ("llama-3-8b", "h100-sxm", 1, 256, 128, 16, 4096),
    ("llama-3-8b", "h100-sxm", 1, 128, 256, 32, 4096),
    # two budget-limited points: B + B I / (O - 1) > tau
    ("llama-3-8b", "h100-sxm", 1, 256, 512, 64, 2048),
    ("llama-3-8b", "h100-sxm", 1, 128, 2048, 129, 1024),
    # MoE at tp 2, a window model, one slot
    ("mixtral-8x7b", "h100-sxm", 2, 32, 512, 64, 2048),
    ("gpt-oss-20b", "h100-sxm", 1, 96, 300, 200, 4096),
    ("llama-3-8b", "h100-sxm", 1, 1, 512, 64, 2048),
]


@pytest.mark.parametrize("where", PINNED, ids=lambda p: "-".join(map(str, p[3:])))
def test_each_closed_form_matches_its_scheduler(where: tuple[Any, ...]) -> None:
    costs, ds = point(*where)
    batch, prompt, output, budget = where[3:]
    for scheduler in SCHEDULERS:
        loop = saturate(costs, scheduler, batch, prompt, output, budget, cycles=8)
        form = closed(ds, scheduler)
        assert form["rate"] == pytest.approx(loop["rate"], rel=5e-3), scheduler
        assert form["tpot"] == pytest.approx(loop["tpot"], rel=5e-3), scheduler


def test_the_check_point_is_budget_free_and_the_limited_ones_are_limited() -> None:
    for where, limited in ((PINNED[0], False), (PINNED[3], True), (PINNED[4], True)):
        ds = point(*where)[1]
        assert bool(ds["budget_limited"].sel(mode="chunked-paced").squeeze()) is limited


MODELS = st.sampled_from([("llama-3-8b", 1), ("llama-3-8b", 2), ("mixtral-8x7b", 2)])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=MODELS,
    batch=st.sampled_from([1, 2, 8, 32, 96]),
    prompt=st.sampled_from([16, 100, 512, 2048, 4000]),
    output=st.sampled_from([1, 2, 17, 64, 200]),
    budget=st.sampled_from([0, 128, 512, 2048, 8192]),
)
def test_no_scheduler_beats_the_bound(
    model: tuple[str, int], batch: int, prompt: int, output: int, budget: int
) -> None:
    if budget and budget <= batch:
        budget = batch + 1 + budget  # a chunked step carries every decode and a prompt token
    name, tp = model
    costs, ds = point(name, "h100-sxm", tp, batch, prompt, output, budget)
    bound = closed(ds, "bound")
    tau = budget if budget else math.inf
    for scheduler in SCHEDULERS:
        if scheduler in CHUNKED and not budget:
            continue
        loop = saturate(costs, scheduler, batch, prompt, output, tau, cycles=3, warm=False)
        assert loop["best_rate"] <= bound["rate"] * (1 + 1e-9), scheduler
        assert loop["min_ttft"] >= bound["ttft"] * (1 - 1e-9), scheduler
