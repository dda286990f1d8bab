"""Calibration's third-round columns (``basis``, ``gpus``, ``parallel``, ``load``,
``concurrency``), the rows it cannot bound and says why, and files that try to break the reader."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from sweeps.calibrate import (
    COLUMNS,
    calibrate,
    load_measurements,
    parse_measurements,
    summarize_efficiency,
)
from sweeps.calibrate.measurements import WRITTEN
from sweeps.calibrate.table import UNITS
from sweeps.cli.main import cli
from sweeps.errors import MeasurementsError

HEADER = ",".join([*COLUMNS, "gpus", "parallel", "load", "concurrency"])
BASE = "llama-3-8b,h100-sxm,{tp},bf16,bf16,bf16,64,2048,256,{metric},{value},{basis},test"


def _row(
    tp: int = 1,
    metric: str = "output_tokens_per_s",
    value: float = 100.0,
    basis: str = "device",
    gpus: str = "",
    parallel: str = "",
    load: str = "",
    concurrency: str = "",
) -> str:
    base = BASE.format(tp=tp, metric=metric, value=value, basis=basis)
    return f"{base},{gpus},{parallel},{load},{concurrency}"


def _write(tmp_path: Path, *rows: str, header: str = HEADER, name: str = "mine.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n", "utf-8")
    return path


def test_the_basis_scales_a_throughput_bound_by_replicas(tmp_path: Path) -> None:
    frame = calibrate(
        _write(
            tmp_path,
            _row(tp=2, basis="replica"),
            _row(tp=2, basis="device"),
            _row(tp=2, basis="system", gpus="8"),
        )
    )
    replica, device, system = frame["bound"].to_list()
    assert device == pytest.approx(replica / 2)  # one replica is 2 devices
    assert system == pytest.approx(replica * 4)  # 8 GPUs are 4 replicas of tp 2
    assert frame["basis"].to_list() == ["replica", "device", "system"]
    assert frame["gpus"].to_list() == [2, 2, 8]  # gpus defaults to tp


def test_per_is_read_as_basis_and_both_must_agree(tmp_path: Path) -> None:
    old = ",".join(COLUMNS).replace(",basis,", ",per,")
    (m,) = load_measurements(_write(tmp_path, BASE.format(tp=1, metric="ttft_s", value=1, basis="replica"), header=old))  # fmt: skip
    assert (m.basis, m.per) == ("replica", "replica")
    both = HEADER + ",per"
    with pytest.raises(MeasurementsError, match=r"line 2: column 'per': 'system' disagrees"):
        load_measurements(_write(tmp_path, _row() + ",system", header=both))


def test_gpus_must_make_whole_replicas(tmp_path: Path) -> None:
    with pytest.raises(
        MeasurementsError, match=r"mine\.csv: line 2: column 'gpus': 6 GPUs do not make whole"
    ):
        load_measurements(_write(tmp_path, _row(tp=4, basis="system", gpus="6")))


@pytest.mark.parametrize(
    ("parallel", "gpus", "reason"),
    [
        (
            "ep+dp",
            "4",
            "ep+dp over 4 GPUs at tp 1 is ep 4, and llama-3-8b has no routed experts to split "
            "that way",
        ),
        ("pp", "3", "pp over 3 GPUs at tp 1 is 3 stages of 32 layers"),
    ],
)
def test_a_layout_the_grid_cannot_build_gets_a_reason_not_a_tp_reading(
    tmp_path: Path, parallel: str, gpus: str, reason: str
) -> None:
    frame = calibrate(_write(tmp_path, _row(gpus=gpus, parallel=parallel), _row()))
    first = frame.row(0, named=True)
    assert first["bound"] is None
    assert first["ratio"] is None
    assert first["beats_bound"] is None
    assert first["status"] == "no bound"
    assert first["reason"] == reason
    assert not first["in_medians"]
    assert frame.row(1, named=True)["bound"] is not None


def test_a_pipeline_row_is_bounded_over_all_its_gpus(tmp_path: Path) -> None:
    # pp 4 of llama-3-8b's 32 layers: a replica of 4 devices, the per-device bound over 4
    frame = calibrate(_write(tmp_path, _row(gpus="4", parallel="pp", basis="replica"),
                             _row(gpus="4", parallel="pp")))  # fmt: skip
    replica, device = frame["bound"].to_list()
    assert device == pytest.approx(replica / 4)
    assert frame["reason"].to_list() == ["", ""]


def test_latency_under_load_is_flagged_and_kept_out_of_the_medians(tmp_path: Path) -> None:
    idle = _row(metric="ttft_s", value=10.0, load="idle")
    loaded = _row(metric="ttft_s", value=20.0, load="under-load")
    frame = calibrate(_write(tmp_path, idle, loaded))
    assert frame["in_medians"].to_list() == [True, False]
    assert frame["bound"].null_count() == 0  # bounded, only left out of the medians
    summary = summarize_efficiency(frame)
    assert summary["rows"].sum() == 1
    assert summary["median"][0] == pytest.approx(frame["ratio"][0])


def test_a_model_that_does_not_fit_gets_no_bound_and_says_so(tmp_path: Path) -> None:
    row = "llama-3.1-405b,l4,1,bf16,bf16,auto,max,128,128,output_tokens_per_s,5,device,x"
    frame = calibrate(_write(tmp_path, row, header=",".join(COLUMNS)))
    assert frame["bound"].to_list() == [None]
    assert not frame["beats_bound"].any()
    reason = frame["reason"][0]
    assert reason.startswith("the model does not fit: 811.7 GB of weights per device at tp 1")
    assert "24.0 GB of l4" in reason


def test_every_written_column_has_a_unit_and_is_refused_as_input(tmp_path: Path) -> None:
    assert set(WRITTEN) <= set(UNITS)
    for column in ("beats_bound", "status", "ratio"):
        path = _write(tmp_path, _row() + ",false", header=HEADER + f",{column}")
        with pytest.raises(MeasurementsError, match=rf"mine\.csv: line 1, column 18: '{column}'"):
            load_measurements(path)


def test_a_beats_bound_column_exits_2_naming_it(tmp_path: Path) -> None:
    fast = _row(value=1e12) + ",false"  # a trillion tokens/s that its own column says is fine
    path = _write(tmp_path, fast, header=HEADER + ",beats_bound")
    result = CliRunner().invoke(cli, ["calibrate", str(path), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "'beats_bound' is a column sweeps calibrate writes" in result.stderr
    assert not (tmp_path / "calibration").exists()


def test_the_table_shows_the_basis_and_lists_the_rows_without_a_bound(tmp_path: Path) -> None:
    path = _write(tmp_path, _row(basis="replica"), _row(parallel="ep+dp", gpus="4"))
    result = CliRunner().invoke(cli, ["calibrate", str(path), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(" rep " in line and line.lstrip().startswith("2") for line in lines)
    assert "1 row(s) without a bound" in result.stdout
    assert any(line.lstrip().startswith("3") and "is ep 4" in line for line in lines)


# --- files that try to break the reader --------------------------------------------------------


def test_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(("\ufeff" + HEADER + "\n" + _row() + "\n").encode("utf-8"))
    (m,) = load_measurements(path)
    assert m.model == "llama-3-8b"


def test_a_quoted_newline_is_read_and_later_lines_keep_their_numbers(tmp_path: Path) -> None:
    header = HEADER + ",note"
    quoted = _row() + ',"two\nlines"'
    path = _write(tmp_path, quoted, _row(tp=0) + ",x", header=header)
    with pytest.raises(MeasurementsError, match=r"line 4: column 'tp': 0 is out of range"):
        load_measurements(path)
    (m,) = load_measurements(_write(tmp_path, quoted, header=header))
    assert (m.line, m.extra["note"]) == (2, "two\nlines")


def test_a_200_kb_cell_is_read_or_named_short(tmp_path: Path) -> None:
    big = "x" * 200_000
    (m,) = load_measurements(_write(tmp_path, f"{_row()},{big}", header=HEADER + ",note"))
    assert len(m.extra["note"]) == 200_000
    path = _write(tmp_path, _row(value=big))  # type: ignore[arg-type]
    with pytest.raises(MeasurementsError, match=r"line 2: column 'value': 'x{40}\.\.\.' is not"):
        load_measurements(path)


def test_a_nul_is_named_with_its_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, _row(), _row().replace("test", "te\x00st"))
    with pytest.raises(MeasurementsError, match=r"line 3: column 'source': contains a NUL"):
        load_measurements(path)


@pytest.mark.parametrize("digits", ["\u0668", "\uff18", "\u0664\u0662"])  # Arabic-Indic, full-width
def test_non_ascii_digits_are_refused_naming_line_and_column(tmp_path: Path, digits: str) -> None:
    path = _write(tmp_path, _row().replace(",64,", f",{digits},"))
    with pytest.raises(
        MeasurementsError, match=r"line 2: column 'batch': .* \(ASCII digits only\)"
    ):
        load_measurements(path)


def test_a_row_longer_than_the_header_is_named(tmp_path: Path) -> None:
    with pytest.raises(MeasurementsError, match=r"line 2: 1 cell\(s\) more than the header"):
        parse_measurements(f"{HEADER}\n{_row()},extra\n", "mine.csv")


def test_a_column_given_twice_is_named(tmp_path: Path) -> None:
    with pytest.raises(MeasurementsError, match=r"line 1: column\(s\) 'gpus' given twice"):
        parse_measurements(f"{HEADER},gpus\n{_row()},2\n", "mine.csv")


def test_a_frame_with_only_unbounded_rows_still_has_typed_columns(tmp_path: Path) -> None:
    frame = calibrate(_write(tmp_path, _row(parallel="ep+dp", gpus="2")))
    assert frame.schema["bound"] == pl.Float64
    assert frame.schema["beats_bound"] == pl.Boolean
    assert summarize_efficiency(frame).height == 0


def test_the_attention_format_is_an_option_of_the_command(tmp_path: Path) -> None:
    row = "llama-3.1-70b,b200,1,nvfp4,fp8,auto,8,32768,1,ttft_s,100.0,device,x"
    path = _write(tmp_path, row, header=",".join(COLUMNS))
    bounds = {}
    for choice in ("auto", "gemm"):
        out = tmp_path / choice
        result = CliRunner().invoke(
            cli, ["calibrate", str(path), "--attention-dtype", choice, "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        bounds[choice] = pl.read_parquet(out / "calibration" / "calibration.parquet")["bound"][0]
    assert bounds["auto"] > bounds["gemm"]  # attention at fp8, not at the FP4 peak: tighter
    bad = CliRunner().invoke(cli, ["calibrate", str(path), "--attention-dtype", "fp6"])
    assert bad.exit_code == 2
