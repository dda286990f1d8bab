"""``sweeps calibrate``: every published measurement held against its roofline bound."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

from sweeps.calibrate import (
    COLUMNS,
    calibrate,
    load_measurements,
    shipped_measurements,
    summarize_efficiency,
    write_calibration,
)
from sweeps.calibrate.bounds import bounds
from sweeps.config import parse_config
from sweeps.errors import MeasurementsError
from sweeps.export import read_units
from sweeps.grid import build_grid

HEADER = ",".join(COLUMNS)
ROW = "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,{batch},2048,256,{metric},{value},device,test"


@pytest.fixture(scope="module")
def shipped() -> pl.DataFrame:
    return calibrate(shipped_measurements())


def test_no_shipped_measurement_beats_its_bound(shipped: pl.DataFrame) -> None:
    assert shipped.height == 116 + 94  # the earlier rows (A100 v0.6.1 once) and measurements-3
    assert not shipped["beats_bound"].any()
    bounded = shipped.filter(pl.col("bound").is_not_null())
    assert bounded["ratio"].min() > 0
    assert bounded["ratio"].max() <= 1
    # every row has a bound, the 44 ep+dp rows too (on the grid's ep and dp_attention axes)
    assert shipped.filter(pl.col("bound").is_null()).height == 0
    assert bounded.filter(pl.col("parallel") == "ep+dp").height == 44
    assert (bounded["reason"] == "").all()


def test_no_shipped_closed_loop_row_beats_its_bound(shipped: pl.DataFrame) -> None:
    # held against the serving bound mode (tests/test_calibrate_concurrency.py)
    closed = shipped.filter(pl.col("concurrency").is_not_null())
    assert closed["bound"].null_count() == 0
    assert not closed["beats_bound"].any()
    # the shipped file's own concurrency cells, read independently, are these rows
    with shipped_measurements().open(encoding="utf-8", newline="") as handle:
        cells = [row["concurrency"] for row in csv.DictReader(handle)]
    assert closed.height == sum(1 for cell in cells if cell.strip())


def test_the_shipped_rows_are_each_there_once(shipped: pl.DataFrame) -> None:
    reading = ["model", "hardware", "tp", "weight_dtype", "batch_given", "prompt_tokens"]
    reading += ["output_tokens", "metric", "value", "source"]
    assert shipped.select(reading).is_duplicated().sum() == 0
    ids = shipped["id"].filter(shipped["id"] != "")
    assert ids.len() == 94
    assert ids.n_unique() == 94


def _write(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "mine.csv"
    path.write_text("\n".join([header, *rows]) + "\n", "utf-8")
    return path


def test_bounds_are_the_grid_at_the_mean_context(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        ROW.format(batch=64, metric="output_tokens_per_s", value=1000.0),
        ROW.format(batch=64, metric="itl_s", value=0.5),
        ROW.format(batch=1, metric="ttft_s", value=1.0),
    )
    found = bounds(load_measurements(path))
    ds = build_grid(
        parse_config(
            '[sweep]\nname = "x"\n[axes]\nmodel = ["llama-3-8b"]\nhardware = ["h100-sxm"]\n'
            "batch = [1, 64]\ncontext = [2176]\nprompt = [2048]\n"
            "[options]\nmemory_reserve = 0.0\n"
        )
    )
    step = float(ds["step_time_s"].sel(batch=64, context=2176).squeeze())
    ttft = float(ds["ttft_s"].sel(batch=1, prompt=2048).squeeze())
    throughput, itl, first = found
    assert throughput.context == 2048 + 256 // 2 == 2176
    assert throughput.bound == pytest.approx(64 / step, rel=1e-12)
    assert throughput.ratio == pytest.approx(1000.0 / (64 / step), rel=1e-12)
    assert itl.bound == pytest.approx(step, rel=1e-12)
    assert itl.ratio == pytest.approx(step / 0.5, rel=1e-12)
    assert first.bound == pytest.approx(ttft, rel=1e-12)


def test_batch_max_is_the_memory_wall_without_reserve(tmp_path: Path) -> None:
    path = _write(tmp_path, ROW.format(batch="max", metric="output_tokens_per_s", value=10.0))
    (found,) = bounds(load_measurements(path))
    ds = build_grid(
        parse_config(
            '[sweep]\nname = "x"\n[axes]\nmodel = ["llama-3-8b"]\nhardware = ["h100-sxm"]\n'
            "batch = [1]\ncontext = [2176]\n[options]\nmemory_reserve = 0.0\n"
        )
    )
    assert found.batch == int(ds["max_batch"].squeeze())
    assert found.batch > 1


def test_a_latency_at_batch_max_is_bounded_at_one_sequence(tmp_path: Path) -> None:
    """Issue 44: a latency at ``max`` was held to the memory wall's step, not the fastest one
    (seven honest rows "beat" it by 2.1-3.7x); a step of one sequence bounds it."""
    metrics = ("itl_s", "ttft_s", "request_latency_s")
    rows = [ROW.format(batch=b, metric=m, value=1.0) for m in metrics for b in ("max", 1)]
    found = bounds(load_measurements(_write(tmp_path, *rows)))
    for at_max, at_one in zip(found[::2], found[1::2], strict=True):
        assert at_max.batch == at_one.batch == 1
        assert at_max.bound == at_one.bound


def test_a_row_that_beats_its_bound_is_flagged(tmp_path: Path) -> None:
    path = _write(tmp_path, ROW.format(batch=64, metric="output_tokens_per_s", value=1e9))
    frame = calibrate(path)
    assert frame["beats_bound"].to_list() == [True]
    assert frame["status"].to_list() == ["beats its bound"]


def test_request_latency_is_the_static_batch_summed_step_by_step(tmp_path: Path) -> None:
    """Bound: t_p(B, I) plus each of the O - 1 decode steps at its own context I + j."""
    row = "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,8,512,9,request_latency_s,{value},replica,test"
    ds = build_grid(
        parse_config(
            '[sweep]\nname = "x"\n[axes]\nmodel = ["llama-3-8b"]\nhardware = ["h100-sxm"]\n'
            "batch = [8]\ncontext = [513, 514, 515, 516, 517, 518, 519, 520]\nprompt = [512]\n"
            "[options]\nmemory_reserve = 0.0\nattention_flops = true\n"
        )
    )
    steps = [float(ds["step_time_s"].sel(batch=8, context=512 + j).squeeze()) for j in range(1, 9)]
    by_hand = float(ds["ttft_s"].sel(batch=8, prompt=512).squeeze()) + sum(steps)
    (found,) = bounds(load_measurements(_write(tmp_path, row.format(value=1.0))))
    assert found.bound == pytest.approx(by_hand, rel=1e-9)
    assert found.ratio == pytest.approx(by_hand / 1.0, rel=1e-9)
    assert found.status == "ok"
    # the prefill of 8 x 512 tokens (about 66 ms at the bf16 peak) outweighs the eight decode
    # steps (about 5 ms each): the row is as compute-bound as its larger phase
    assert found.bottleneck == "compute-bound"
    (beaten,) = bounds(load_measurements(_write(tmp_path, row.format(value=by_hand / 2))))
    assert beaten.ratio == pytest.approx(2.0, rel=1e-9)
    assert beaten.status == "beats its bound"


@pytest.mark.parametrize(
    ("row", "match"),
    [
        (
            "llama-9b,h100-sxm,1,bf16,bf16,bf16,1,128,1,ttft_s,0.1,device,x",
            r"mine\.csv: line 2: column 'model': unknown model 'llama-9b'",
        ),
        (
            "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,1,128,1,ttft_s,fast,device,x",
            r"mine\.csv: line 2: column 'value': 'fast' is not a number",
        ),
        (
            "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,1,128,1,ttft_s,inf,device,x",
            r"mine\.csv: line 2: column 'value': 'inf' must be a finite number > 0",
        ),
        (
            "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,0,128,1,ttft_s,0.1,device,x",
            r"mine\.csv: line 2: column 'batch': 0 is out of range",
        ),
        (
            "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,1,128,1,tpot,0.1,device,x",
            r"mine\.csv: line 2: column 'metric': unknown 'tpot'; allowed: output_tokens_per_s",
        ),
        (
            "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,1,128,1,ttft_s,0.1,gpu,x",
            r"mine\.csv: line 2: column 'basis': unknown 'gpu'; allowed: device, replica, system",
        ),
    ],
)
def test_a_malformed_row_names_file_line_and_column(tmp_path: Path, row: str, match: str) -> None:
    with pytest.raises(MeasurementsError, match=match):
        load_measurements(_write(tmp_path, row))


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    header = HEADER.replace(",basis", "")
    path = _write(tmp_path, "x", header=header)
    with pytest.raises(
        MeasurementsError, match=r"mine\.csv: line 1: missing column\(s\) 'basis' \(or 'per'\)"
    ):
        load_measurements(path)


def test_the_line_number_counts_from_the_header(tmp_path: Path) -> None:
    good = ROW.format(batch=1, metric="ttft_s", value=1.0)
    path = _write(tmp_path, good, good, good.replace("h100-sxm", "h100-sxn"))
    with pytest.raises(MeasurementsError, match=r"line 4: column 'hardware': unknown hardware"):
        load_measurements(path)


def test_written_table_reads_back_with_units(shipped: pl.DataFrame, tmp_path: Path) -> None:
    files = write_calibration(shipped, tmp_path)
    assert "calibration.parquet" in files
    back = pl.read_parquet(tmp_path / "calibration.parquet")
    assert back.equals(shipped)
    units = read_units(tmp_path / "calibration.parquet")
    assert units["ratio"]["unit"] == "1"
    assert units["what"]["description"].startswith("Column of the measurements file")
    assert (tmp_path / "calibration.html").stat().st_size > 1000


def test_the_chart_is_rendered(shipped: pl.DataFrame, tmp_path: Path) -> None:
    files = write_calibration(shipped, tmp_path)
    png = tmp_path / "calibration.png"
    assert "calibration.png" in files
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 20_000  # axes, points and legend, not a blank canvas


def test_efficiency_summary_per_device_and_bottleneck(shipped: pl.DataFrame) -> None:
    summary = summarize_efficiency(shipped)
    assert set(summary["bottleneck"]) == {"memory-bound", "compute-bound"}
    assert summary["rows"].sum() == shipped["in_medians"].sum()
    assert ((summary["min"] <= summary["median"]) & (summary["median"] <= summary["max"])).all()


FP4 = ("fp4", "nvfp4")


def test_the_fp4_split_is_tighter_and_still_above_every_shipped_fp4_row(
    shipped: pl.DataFrame, tmp_path: Path
) -> None:
    whole = calibrate(shipped_measurements(), attention_dtype="gemm")  # attention at FP4 peak
    fp4 = pl.col("weight_dtype").is_in(FP4) & pl.col("bound").is_not_null()
    split_rows, whole_rows = shipped.filter(fp4), whole.filter(fp4)
    assert split_rows.height == 43 + 32  # and the ep+dp rows, bounded on the parallel axes
    assert (split_rows["bound"] <= whole_rows["bound"] * (1 + 1e-12)).all()  # never looser
    assert (split_rows["value"] <= split_rows["bound"]).all()  # still a bound on every one
    # a compute-bound FP4 prefill and decode: attention at the fp8 KV's peak, not FP4's
    rows = [
        "llama-3.1-70b,b200,1,nvfp4,fp8,auto,8,32768,1,ttft_s,100.0,device,x",
        "llama-3-8b,b200,1,nvfp4,fp8,auto,4096,64,64,output_tokens_per_s,1.0,device,x",
    ]
    path = _write(tmp_path, *(row for row in rows))
    split, before = calibrate(path), calibrate(path, attention_dtype="gemm")
    assert split["bound"][0] > before["bound"][0]  # a longer TTFT floor: tighter
    assert split["bound"][1] < before["bound"][1]  # fewer tokens/s: tighter
    assert set(split["bottleneck"]) == {"compute-bound"}
