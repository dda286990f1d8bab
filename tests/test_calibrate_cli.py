"""``sweeps calibrate``: exit codes, what it prints, what it writes into ``<out>/calibration/``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner, Result

from sweeps.calibrate import COLUMNS, calibrate, shipped_measurements
from sweeps.cli.main import cli

HEADER = ",".join(COLUMNS)
OK = "llama-3-8b,h100-sxm,1,bf16,bf16,bf16,64,2048,256,output_tokens_per_s,1000.0,device,mine"
FAST = OK.replace(",1000.0,", ",1e9,")  # a billion tokens/s from one H100: beats any bound


def _csv(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "mine.csv"
    path.write_text("\n".join([header, *rows]) + "\n", "utf-8")
    return path


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["calibrate", *args])


def test_the_shipped_file_by_default_prints_rows_and_summary_and_writes(tmp_path: Path) -> None:
    result = _invoke("--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "measured against the roofline bound" in result.stdout
    (line2,) = re.findall(r"^ *2 .*$", result.stdout, flags=re.MULTILINE)
    assert "19,694" in line2  # TRT-LLM's H100 FP8 Llama-2 7B figure, token/s
    assert "56,838" in line2  # its bound: 768 / t_d(768, 192)
    assert "achieved share of the bound, per device" in result.stdout
    assert not re.search(r"\d\.\d{3}!", result.stdout)  # no ratio flagged
    assert f"wrote {tmp_path / 'calibration'}/" in result.stderr
    folder = tmp_path / "calibration"
    back = pl.read_parquet(folder / "calibration.parquet")
    assert back.equals(calibrate(shipped_measurements()))
    assert (folder / "calibration.html").read_text("utf-8").count("vega") > 0
    assert (folder / "calibration.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_a_long_path_never_breaks_the_title_or_the_caption(tmp_path: Path) -> None:
    deep = tmp_path / ("a-folder-with-a-long-name-" * 4) / "and-deeper"
    deep.mkdir(parents=True)
    mine = deep / "mine.csv"
    mine.write_text(f"{HEADER}\n{OK}\n", "utf-8")
    result = _invoke(str(mine), "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"{mine}: measured against the roofline bound" in lines
    assert any(line.startswith("memory: bandwidth_efficiency; compute:") for line in lines)


def test_an_earlier_calibration_needs_force_like_a_run(tmp_path: Path) -> None:
    mine = _csv(tmp_path, OK)
    assert _invoke(str(mine), "--out", str(tmp_path)).exit_code == 0
    before = (tmp_path / "calibration" / "calibration.parquet").read_bytes()
    again = _invoke(str(mine), "--out", str(tmp_path))
    assert again.exit_code == 2
    assert "a result is already there; pass --force to replace it" in again.stderr
    assert (tmp_path / "calibration" / "calibration.parquet").read_bytes() == before
    forced = _invoke(str(_csv(tmp_path, OK, OK)), "--out", str(tmp_path), "--force")
    assert forced.exit_code == 0, forced.output
    assert pl.read_parquet(tmp_path / "calibration" / "calibration.parquet").height == 2


def test_a_row_that_beats_its_bound_is_flagged_and_exits_1(tmp_path: Path) -> None:
    result = _invoke(str(_csv(tmp_path, OK, FAST)), "--out", str(tmp_path), "-q")
    assert result.exit_code == 1
    (flagged,) = re.findall(r"^ *3 .*$", result.stdout, flags=re.MULTILINE)
    assert re.search(r"\d\.\d{3}!", flagged)  # line 3's ratio carries the flag
    assert result.stderr.startswith("Error: ")
    assert "mine.csv: 1 measurement(s) beat their bound (line 3)" in result.stderr
    # the calibration is still written: it shows which row and by how much
    back = pl.read_parquet(tmp_path / "calibration" / "calibration.parquet")
    assert back["beats_bound"].to_list() == [False, True]


@pytest.mark.parametrize(
    ("rows", "header", "message"),
    [
        ((OK.replace("llama-3-8b", "llama-9b"),), HEADER, "line 2: column 'model': unknown model"),
        ((OK.replace(",1000.0,", ",fast,"),), HEADER, "line 2: column 'value': 'fast' is not a"),
        (
            (OK.rsplit(",", 2)[0],),
            HEADER.replace(",basis", ""),
            "line 1: missing column(s) 'basis' (or 'per')",
        ),
    ],
)
def test_a_malformed_file_is_bad_input_naming_file_line_and_column(
    tmp_path: Path, rows: tuple[str, ...], header: str, message: str
) -> None:
    result = _invoke(str(_csv(tmp_path, *rows, header=header)), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {tmp_path / 'mine.csv'}: {message}")
    assert "Traceback" not in result.output
    assert not (tmp_path / "calibration").exists()  # nothing written


def test_a_missing_file_is_bad_input(tmp_path: Path) -> None:
    result = _invoke(str(tmp_path / "nowhere.csv"), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "nowhere.csv" in result.stderr


def test_json_is_the_rows_and_the_summary_in_si(tmp_path: Path) -> None:
    row = OK.replace("output_tokens_per_s,1000.0", "itl_s,0.02")
    result = _invoke(str(_csv(tmp_path, OK, row)), "--out", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    throughput, itl = document["measurements"]
    assert throughput["value"] == 1000.0
    assert throughput["unit"] == "token/s"
    assert itl["unit"] == "s"
    assert itl["value"] == 0.02  # seconds, not milliseconds
    assert itl["bound"] == pytest.approx(64 / throughput["bound"], rel=1e-12)  # t_d = B / (B/t_d)
    assert document["beating"] == []
    assert document["summary"] == [
        {
            "hardware": "h100-sxm",
            "bottleneck": "memory-bound",
            "rows": 2,
            "median": pytest.approx((throughput["ratio"] + itl["ratio"]) / 2, rel=1e-12),
            "min": min(throughput["ratio"], itl["ratio"]),
            "max": max(throughput["ratio"], itl["ratio"]),
        }
    ]
    assert document["files"][:2] == ["calibration.parquet", "calibration.html"]


def test_a_narrow_terminal_loses_the_by_and_line_columns_first() -> None:
    from rich.console import Console

    from sweeps.cli.calibration import measurement_rows, rows_table
    from sweeps.cli.render import _width

    rows = measurement_rows(calibrate(shipped_measurements()))
    console = Console(width=80)
    wide = rows_table(rows, "x", console, None)
    narrow = rows_table(rows, "x", console, 80)
    assert [c.header.plain for c in wide.columns][-2:] == ["ratio", "by"]
    assert [c.header.plain for c in narrow.columns][:2] == ["model", "hardware"]
    assert "by" not in [c.header.plain for c in narrow.columns]
    assert "left out to fit the terminal: by, line" in narrow.footing.plain
    assert _width(console, narrow) <= 80


def test_no_bounded_row_still_writes_the_chart_and_the_table(tmp_path: Path) -> None:
    """Issue 44: with no bounded row the chart ended in a traceback (a zero-size array)."""
    unfit = OK.replace("llama-3-8b", "deepseek-v3")  # 671 B parameters on one H100
    result = _invoke(str(_csv(tmp_path, unfit)), "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    folder = tmp_path / "calibration"
    back = pl.read_parquet(folder / "calibration.parquet")
    assert back["bound"].null_count() == back.height == 1
    assert back["reason"][0]
    assert "no row has a bound" in (folder / "calibration.html").read_text("utf-8")
