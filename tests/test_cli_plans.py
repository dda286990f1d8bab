"""The printed cheapest-plans table (``sweeps.cli.render_plans``): the speculation and prefix
cache a plan takes (``k``, the draft, the acceptance; the hit rate, the tier), where the run
has their axes, and none of those columns where it has not."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

import sweeps
from sweeps.cli.render_plans import plans_table
from sweeps.views.plans import cheapest_plans

AXES = {
    "model": ["llama-3.1-70b"], "hardware": ["h200"], "tp": [1], "batch": [8, 32],
    "context": [2048], "weight_dtype": ["fp8"], "kv_dtype": ["fp8"],
}  # fmt: skip
TECHNIQUES = {
    "spec_tokens": [0, 3], "spec_acceptance": [0.8], "spec_draft": ["ngram", "llama-3.1-8b"],
    "prefix_hit_rate": [0.0, 0.9], "kv_tier": ["hbm", "nvme"],
}  # fmt: skip
SERVING = {"prompt_tokens": [1024], "output_tokens": [129], "arrival_rate": [8.0]}


@cache
def plans(techniques: bool) -> list[dict[str, Any]]:
    axes = {**AXES, **(TECHNIQUES if techniques else {})}
    ds = sweeps.run({"sweep": {"name": "plans"}, "axes": axes, "serving": SERVING})
    return list(cheapest_plans(ds).to_dicts())


def text(rows: list[dict[str, Any]]) -> list[str]:
    from rich.console import Console

    console = Console(width=240, record=True, color_system=None)
    console.print(plans_table(rows, "T"))
    return [" ".join(line.split()) for line in console.export_text().splitlines()]


def test_the_table_says_which_speculation_and_tier_a_plan_takes() -> None:
    rows = plans(True)
    lines = text(rows)
    assert "devices k draft accept hit tier $/M tok TTFT ms TPOT ms decode share" in lines[1]
    body = [line for line in lines if line.startswith("llama-3.1-70b")]
    assert len(body) == len(rows) == 2  # one a hit rate, at one acceptance and rate
    for row, line in zip(rows, body, strict=True):
        k, hit = row["spec_tokens"], row["prefix_hit_rate"]
        draft = row["spec_draft"] if k else "-"
        tier = row["kv_tier"] if hit else "-"
        assert f" 1 {k} {draft} 0.8 {hit:.0%} {tier} $" in line, line
    # at the 90 % hit rate the plan takes a tier; at 0 % none is in the plan
    assert any(" 90% hbm " in line or " 90% nvme " in line for line in body)
    assert any(" 0% - " in line for line in body)


@pytest.mark.parametrize("k", [0, 3])
def test_a_plan_without_speculation_names_no_draft(k: int) -> None:
    row = {**plans(True)[0], "spec_tokens": k, "spec_draft": "llama-3.1-8b"}
    line = next(line for line in text([row]) if line.startswith("llama-3.1-70b"))
    assert (" 3 llama-3.1-8b 0.8 " in line) == (k == 3)
    assert (" 0 - 0.8 " in line) == (k == 0)


def test_a_run_without_the_techniques_has_no_such_columns() -> None:
    lines = text(plans(False))
    assert "devices $/M tok TTFT ms TPOT ms decode share" in lines[1]
    assert " draft " not in lines[1]
    assert " tier " not in lines[1]
