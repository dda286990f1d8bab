"""Every caption sentence of the decode charts against a recomputation from the grid it
describes, slice by slice, on the shipped decode studies: plain loops over the settings (context
x KV heads x KV dtype) of each selection, and the cells themselves as the witness."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

from sweeps.charts.captions import crossing_text, ridge_text, wall_text
from sweeps.charts.data import Selection, choose, select
from sweeps.charts.report import condensed_row
from sweeps.charts.theme import number, percent
from sweeps.config import load_config
from sweeps.grid import build_grid

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
STUDIES = (
    "seed-llama3-8b-h100",
    "llama3-70b-h200-gqa-kv",
    "llama3.1-8b-five-accelerators",
    "long-context-windows",
    "moe-mla-study",
)


@pytest.fixture(scope="module")
def selections() -> list[tuple[str, Selection]]:
    """Each slice a shipped decode study's charts draw, where the model fits."""
    out = []
    for name in STUDIES:
        ds = build_grid(load_config(CONFIGS / f"{name}.toml"))
        for model in ds["model"].values:
            for device in ds["hardware"].values:
                if choose(ds, str(model), str(device)).fits:
                    out.append((name, select(ds, str(model), str(device))))
    return out


def _settings(sel: Selection) -> list[dict[str, Any]]:
    """Each setting of a selection, as the labels that pick it."""
    ds = sel.ds
    return [
        {"context": c, "kv_heads": h, "kv_dtype": d}
        for c in ds["context"].values
        for h in ds["kv_heads"].values
        for d in ds["kv_dtype"].values
    ]


def _at(sel: Selection, where: dict[str, Any], name: str) -> Any:
    da = sel.ds[name]
    return da.sel({d: v for d, v in where.items() if d in da.dims})


def test_the_wall_sentence_is_the_span_and_count_of_the_settings(
    selections: list[tuple[str, Selection]],
) -> None:
    for study, sel in selections:
        shares = []
        for where in _settings(sel):
            share = float(_at(sel, where, "wall_fraction_of_ceiling"))
            if math.isnan(share):
                continue
            shares.append(share)
            # the witness: no cell below the wall reaches more than the wall itself
            cells = _at(sel, where, "fraction_of_ceiling").where(_at(sel, where, "feasible"))
            best = float(cells.max())
            assert math.isnan(best) or best <= share * (1 + 1e-9), (study, sel.model, where)
        text = wall_text(sel)
        lo, hi = percent(min(shares)), percent(max(shares))
        span = lo if lo == hi else f"{lo} to {hi}"
        assert text.startswith(f"At the memory wall decode reaches {span} of the ceiling"), text
        goal = percent(sel.threshold)
        hits = sum(math.floor(s * 100 + 1e-6) >= round(sel.threshold * 100) for s in shares)
        if hits == 0:
            assert f"never {goal}" in text
        elif hits < len(shares):
            assert f"{hits} of {len(shares)} settings reach {goal}" in text
        moe = bool(np.any(np.atleast_1d(sel.ds["experts"].values) > 1))
        assert ("mixture of experts" in text) == moe
        same = lo == hi and sel.ds.sizes["context"] > 1 and not moe
        assert ("whatever the context" in text) == same


def test_the_crossing_sentence_counts_the_settings_below_the_ridge(
    selections: list[tuple[str, Selection]],
) -> None:
    for study, sel in selections:
        below = [
            float(_at(sel, w, "ceiling")) < float(_at(sel, w, "ridge_point"))
            for w in _settings(sel)
        ]
        n, m = sum(below), len(below)
        text = crossing_text(sel)
        if n == 0:
            assert "stays above" in text, (study, text)
            assert "every context" in text, (study, text)
        elif n == m:
            assert "never turns compute-bound" in text, (study, text)
            assert "every context" in text, (study, text)
        else:
            assert "every context" not in text, (study, text)
            kv = sel.ds.sizes["kv_heads"] * sel.ds.sizes["kv_dtype"]
            assert f"in {n} of {m} settings" in text if kv > 1 else "tokens" in text
        # below the ridge yet compute-bound at the split roof (attention at its own peak): a
        # finite ridge_batch, counted apart; the witness: the others have no compute-bound cell
        turns = 0
        for where, under in zip(_settings(sel), below, strict=True):
            if under and not math.isnan(float(_at(sel, where, "ridge_batch"))):
                turns += 1
            elif under:
                assert int(_at(sel, where, "bottleneck").max()) == 0, (study, where)
        said = f"{turns} of these {n} settings turn compute-bound all the same"
        assert (said in text) == (turns > 0), (study, text)


def test_the_70b_chart_no_longer_says_every_context(
    selections: list[tuple[str, Selection]],
) -> None:
    (sel,) = [s for name, s in selections if name == "llama3-70b-h200-gqa-kv"]
    text = crossing_text(sel)
    assert "every context" not in text
    assert "in 26 of 45 settings" in text
    # one setting (an fp8 cache, bf16 weights: attention at twice the GEMM peak) has its
    # ceiling below the ridge point and still turns compute-bound at the split roof
    assert "never for 25 of 45 settings" in ridge_text(sel)
    assert "1 of these 26 settings turn compute-bound all the same" in text


def test_the_ridge_sentence_is_the_span_and_the_settings_without_a_bar(
    selections: list[tuple[str, Selection]],
) -> None:
    for _, sel in selections:
        ridges, walls = [], []
        for where in _settings(sel):
            ridges.append(float(_at(sel, where, "ridge_batch")))
            walls.append(float(_at(sel, where, "max_batch")))
        text = ridge_text(sel)
        found = [r for r in ridges if not math.isnan(r)]
        if not found:
            assert text == ""
            continue
        lo, hi = number(min(found)), number(max(found))
        assert f"ridge batch {lo if lo == hi else f'{lo} to {hi}'}" in text
        never = len(ridges) - len(found)
        assert (f"never for {never} of {len(ridges)} settings" in text) == bool(never)
        beyond = sum(not math.isnan(r) and r > w for r, w in zip(ridges, walls, strict=True))
        assert (f"beyond the memory wall for {beyond} of" in text) == bool(beyond)


def test_the_report_table_says_what_the_chart_says(
    selections: list[tuple[str, Selection]],
) -> None:
    for _, sel in selections:
        whole = sel.ds.expand_dims(
            model=[sel.model], hardware=[sel.hardware], tp=[sel.tp], weight_dtype=[sel.weight_dtype]
        )
        row = condensed_row(whole, sel.model, sel.device_name, sel.choice)
        share = row["share of ceiling at the memory wall"]
        assert wall_text(sel).startswith(f"At the memory wall decode reaches {share} of")


def test_deepseek_on_b200_reads_the_moe_share_in_table_and_chart(
    selections: list[tuple[str, Selection]],
) -> None:
    (sel,) = [s for _, s in selections if s.model == "deepseek-v3" and s.hardware == "b200"]
    cells = sel.ds["fraction_of_ceiling"].where(sel.ds["feasible"]).max()
    assert float(cells) > 0.2  # the 24 % cells
    text = wall_text(sel)
    assert "to 24%" in text  # not the dense formula's 2-3 %
    share: xr.DataArray = sel.ds["wall_fraction_of_ceiling"]
    assert float(share.max()) >= float(cells)
