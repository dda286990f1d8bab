"""The calibration page (docs/calibration.md) stays true: its conversion snippet runs, its
tables are the shipped file's summaries."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polars as pl
import pytest

from sweeps.calibrate import (
    calibrate,
    load_measurements,
    shipped_measurements,
    summarize_efficiency,
)

from .conftest import ROOT

SECTION = (ROOT / "docs" / "calibration.md").read_text("utf-8")

RESULT = {  # a made-up vLLM benchmark_serving.py --save-result document, in its shape
    "date": "20250101-120000",
    "backend": "vllm",
    "model_id": "meta-llama/Meta-Llama-3-8B",
    "num_prompts": 100,
    "request_rate": "inf",
    "max_concurrency": 16,
    "duration": 20.0,
    "completed": 100,
    "total_input_tokens": 100_050,
    "total_output_tokens": 20_099,
    "request_throughput": 5.0,
    "output_throughput": 1004.95,
    "total_token_throughput": 6007.45,
    "mean_ttft_ms": 60.0,
    "median_ttft_ms": 58.0,
    "mean_tpot_ms": 12.0,
    "median_tpot_ms": 11.9,
    "mean_itl_ms": 12.1,
    "median_itl_ms": 11.8,
    "input_lens": [1000] * 100,
    "output_lens": [200] * 100,
}


def test_the_vllm_conversion_runs_and_calibrates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = SECTION.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "vllm-result.json").write_text(json.dumps(RESULT), "utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (Calibration)", "exec"), {})
    throughput, ttft, itl = load_measurements(tmp_path / "mine.csv")
    assert (throughput.prompt_tokens, throughput.output_tokens) == (
        1000,
        200,
    )  # floors of the means
    assert throughput.batch == 16
    assert throughput.value == 1004.95
    assert ttft.batch == 1
    assert ttft.value == pytest.approx(0.060, rel=1e-12)
    assert itl.batch == math.floor(5.0 * 199 * 0.012) == 11  # Little's law on the decode phase
    assert itl.value == pytest.approx(0.0121, rel=1e-12)
    frame = calibrate(tmp_path / "mine.csv")
    assert not frame["beats_bound"].any()


def test_the_snippet_takes_max_without_a_concurrency_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = SECTION.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "vllm-result.json").write_text(json.dumps({**RESULT, "max_concurrency": None}))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (Calibration)", "exec"), {})
    assert load_measurements(tmp_path / "mine.csv")[0].batch is None  # max: the memory wall


def test_the_results_tables_are_the_shipped_summaries() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from update_calibration_docs import END, START, medians_block

    frame = calibrate(shipped_measurements())
    block = SECTION.split(START + "\n", 1)[1].split(END, 1)[0]
    assert block == medians_block(frame), "run: python scripts/update_calibration_docs.py"
    table = re.findall(
        r"^\| ([a-z0-9-]+) \| (memory|compute) \| (\d+) \| ([0-9.]+) \| ([0-9.]+)-([0-9.]+) \|$",
        block,
        flags=re.MULTILINE,
    )
    expected = [
        (
            row["hardware"],
            row["bottleneck"].removesuffix("-bound"),
            str(row["rows"]),
            f"{row['median']:.2f}",
            f"{row['min']:.2f}",
            f"{row['max']:.2f}",
        )
        for row in summarize_efficiency(frame).iter_rows(named=True)
    ]
    assert table == expected
    used = frame.filter(pl.col("in_medians"))
    medians = dict(used.group_by("bottleneck").agg(pl.col("ratio").median()).iter_rows())
    assert f"`bandwidth_efficiency = {medians['memory-bound']:.2f}`" in block
    assert f"`compute_efficiency = {medians['compute-bound']:.2f}`" in block
    assert f"{frame.height} published figures" in block
