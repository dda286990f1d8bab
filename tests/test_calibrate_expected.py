"""``sweeps.calibrate.expected``: the expected value of each measured row and its error."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sweeps.calibrate.bounds import Bound, bounds
from sweeps.calibrate.expected import (
    _config,
    basis_summary,
    engine_of,
    error_summary,
    expected_rows,
    least_certain,
)
from sweeps.calibrate.measurements import parse_measurements
from sweeps.measured.kernels import BASES
from sweeps.studies.expected.step import Config, step

pytest.importorskip("aiconfigurator_core")

HEADER = (
    "model,hardware,tp,weight_dtype,kv_dtype,compute_dtype,batch,prompt_tokens,output_tokens,"
    "metric,value,basis,source\n"
)
ROWS = HEADER + (
    # NVIDIA/TensorRT-LLM docs/source/performance.md @138f96d (shipped calibration rows)
    "llama-2-7b,h100-sxm,1,fp8,fp8,fp8,80,2048,128,output_tokens_per_s,2244.0,device,"
    "NVIDIA/TensorRT-LLM performance.md\n"
    "llama-2-7b,mi300x,1,fp8,fp8,fp8,80,2048,128,output_tokens_per_s,2244.0,device,"
    "TensorRT-LLM on a device the database does not hold (made up)\n"
    "llama-2-7b,h100-sxm,1,fp8,fp8,fp8,1,2048,1,ttft_s,0.036,replica,"
    "NVIDIA/TensorRT-LLM performance.md\n"
)


def test_a_row_gets_its_expected_value_and_error_and_a_device_without_data_a_reason() -> None:
    frame = expected_rows(bounds(parse_measurements(ROWS)))
    h100, mi300x = frame.row(0, named=True), frame.row(1, named=True)
    assert h100["engine"] == "trtllm"
    assert h100["regime"] == "large-batch throughput"
    assert h100["error"] == pytest.approx(h100["expected"] / 2244.0 - 1)
    assert abs(h100["error"]) < 0.25
    assert h100["expected"] < h100["bound"]  # an expectation never beats its bound here
    assert mi300x["expected"] is None
    assert mi300x["expected_reason"] == "device 'mi300x' not in the database"
    summary = error_summary(frame).filter(pl.col("regime") == "large-batch throughput")
    assert summary["rows"].to_list() == [1]
    assert summary["median"][0] == pytest.approx(abs(h100["error"]))


def _step_bases(found: Bound) -> tuple[str, str]:
    """The decode and prefill steps' bases of a row, composed here from its own shape."""
    config = _config(found, "trtllm")
    assert isinstance(config, Config)
    m, batch = found.measurement, np.array([found.batch or 1])
    decode = step(config, batch, np.array([max(1, found.context)]))
    prefill = step(config, batch, np.array([m.prompt_tokens]), prefill=True)
    return str(decode.step_basis()[0, 0]), str(prefill.step_basis()[0, 0])


def test_each_row_says_the_least_certain_basis_of_the_steps_it_is_priced_from() -> None:
    found = bounds(parse_measurements(ROWS))
    frame = expected_rows(found)
    assert frame["expected_basis"].dtype == pl.String
    throughput, ttft = _step_bases(found[0]), _step_bases(found[2])
    # a throughput is priced from its prefill and its decode steps, a TTFT from its prefill
    assert frame["expected_basis"][0] == least_certain(*throughput)
    assert frame["expected_basis"][2] == ttft[1]
    assert frame["expected_basis"][1] is None  # no expectation: no basis
    assert least_certain("measured", "extrapolated", "interpolated") == "extrapolated"
    assert least_certain("measured") == "measured"
    summary = basis_summary(frame)
    assert summary["expected_basis"][-1] == "all"
    assert summary.filter(pl.col("expected_basis") == "all")["rows"].item() == 2
    assert summary["rows"].sum() == 4  # each row once by its basis, once in all
    assert set(summary["expected_basis"][:-1]) <= set(BASES)
    ranks = [BASES.index(b) for b in summary["expected_basis"][:-1]]
    assert ranks == sorted(ranks)
    for row in summary.iter_rows(named=True):
        errors = frame.filter(
            pl.col("error").is_not_null(),
            (pl.col("expected_basis") == row["expected_basis"]) | (row["expected_basis"] == "all"),
        )["error"]
        assert row["median"] == pytest.approx(float(np.median(np.abs(errors.to_numpy()))))


def test_the_engine_is_the_rows_column_else_the_one_its_source_names() -> None:
    assert engine_of({"engine": "vLLM"}, "TensorRT-LLM docs") == "vllm"
    assert engine_of({}, "NVIDIA TensorRT-LLM perf-overview") == "trtllm"
    assert engine_of({}, "a blog") is None


def test_sweeps_calibrate_engine_adds_the_columns_and_the_error_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from sweeps.cli.main import cli

    csv = tmp_path / "rows.csv"
    csv.write_text(ROWS, encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["calibrate", str(csv), "--engine", "source", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "expected against measured" in result.output
    assert "per engine and basis" in result.output
    assert "all" in result.output.split("per engine and basis")[1]

    frame = pl.read_parquet(out / "calibration" / "calibration.parquet")
    assert {"engine", "regime", "expected", "error", "expected_basis", "expected_reason"} <= set(
        frame.columns
    )
    assert frame["expected_basis"].null_count() == frame["expected"].null_count() == 1
    import json

    shown = CliRunner().invoke(
        cli, ["calibrate", str(csv), "--engine", "source", "--out", str(out), "--force", "--json"]
    )
    found = json.loads(shown.stdout)["expected"]
    by_basis = {row["expected_basis"]: row for row in found["by_basis"]}
    assert by_basis["all"]["rows"] == 2  # the throughput and the TTFT; mi300x has none
    assert by_basis["all"]["median"] == pytest.approx(frame["error"].abs().median())
    assert sum(row["rows"] for row in found["by_regime"]) == 2
    plain = CliRunner().invoke(cli, ["calibrate", str(csv), "--out", str(tmp_path / "plain")])
    assert "expected against measured" not in plain.output
    columns = pl.read_parquet(tmp_path / "plain" / "calibration" / "calibration.parquet").columns
    assert "expected" not in columns
