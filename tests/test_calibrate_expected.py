"""``sweeps.calibrate.expected``: the expected value of each measured row and its error."""

from __future__ import annotations

import pytest

from sweeps.calibrate.bounds import bounds
from sweeps.calibrate.expected import engine_of, error_summary, expected_rows
from sweeps.calibrate.measurements import parse_measurements

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
    summary = error_summary(frame)
    assert summary["rows"].to_list() == [1]
    assert summary["median"][0] == pytest.approx(abs(h100["error"]))


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
    import polars as pl

    frame = pl.read_parquet(out / "calibration" / "calibration.parquet")
    assert {"engine", "regime", "expected", "error", "expected_reason"} <= set(frame.columns)
    plain = CliRunner().invoke(cli, ["calibrate", str(csv), "--out", str(tmp_path / "plain")])
    assert "expected against measured" not in plain.output
    columns = pl.read_parquet(tmp_path / "plain" / "calibration" / "calibration.parquet").columns
    assert "expected" not in columns
