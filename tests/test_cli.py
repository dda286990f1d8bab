"""The command line: exit codes, output, and nothing written on a bad config."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.grid.memory import BASE_BYTES, estimate_bytes

from .conftest import SEED_CONFIG

GOOD = """
[sweep]
name = "cli-run"
title = "CLI test"
[axes]
model = ["llama-3-8b", "llama-3-70b"]
hardware = ["h100-sxm"]
batch = [1, 64, 512]
context = [512, 32768]
[outputs]
charts = []
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_run_writes_outputs_and_prints_the_summary(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    path = write_config(GOOD)
    out = tmp_path / "out"
    result = runner.invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "cli-run" / "decode.parquet").is_file()
    assert "CLI test: decode summary" in result.output
    assert "never" in result.output  # Llama-3 8B decode never turns compute-bound on an H100
    assert "does not fit" in result.output  # 70B in bf16 at 32k on one H100
    flat = " ".join(result.output.split())  # the terminal may wrap the line
    assert "(decode 12 rows, prefill 12 rows, hardware 1 row, models 2 rows)" in flat
    # a second run without --force fails with exit 1 and leaves the result alone
    before = (out / "cli-run" / "manifest.json").read_bytes()
    again = runner.invoke(cli, ["run", str(path), "--out", str(out)])
    assert again.exit_code == 1
    assert "a result is already there; pass --force" in again.output
    assert (out / "cli-run" / "manifest.json").read_bytes() == before
    forced = runner.invoke(cli, ["run", str(path), "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output


def test_run_summary_of_a_large_sweep_is_cut_short(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    many = GOOD.replace("context = [512, 32768]", "context = [512, 1024, 2048, 4096, 8192]")
    many = many.replace('hardware = ["h100-sxm"]', 'hardware = ["h100-sxm", "h200", "a100-80gb"]')
    many = many.replace("[outputs]", 'kv_dtype = ["bf16", "fp8", "int4"]\n[outputs]')
    result = runner.invoke(cli, ["run", str(write_config(many)), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "first 40 of 90 configurations; decode.parquet has every one" in flat
    assert flat.count("llama-3-") == 40  # one model cell per row shown
    # streamed, the rows are in the same file (the layout is the config's), as the summary says
    sweep = parse_config(many)
    budget = estimate_bytes(sweep) - 1
    args = ["run", str(write_config(many)), "--out", str(tmp_path / "streamed")]
    streamed = runner.invoke(cli, [*args, "--memory-budget", str(budget)])
    assert streamed.exit_code == 0, streamed.output
    flat = " ".join(streamed.output.split())
    assert "first 40 of 90 configurations; decode.parquet has every one" in flat


def test_streamed_run_prints_the_summary_too(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    budget = str(BASE_BYTES + 4000)  # the grid needs 6,150 bytes, one batch size of it 2,050
    args = ["run", str(write_config(GOOD)), "--out", str(tmp_path), "--memory-budget", budget]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "CLI test: decode summary" in flat
    assert "does not fit" in flat  # 70B in bf16 at 32k on one H100, as in memory
    assert "(decode 12 rows, prefill 12 rows," in flat
    # what the config asks for but a streamed grid cannot give is said, not silently missing
    assert "not written: grid.nc, figures (they need the whole grid in memory;" in flat
    manifest = json.loads((tmp_path / "cli-run" / "manifest.json").read_text())
    assert manifest["layout"]["skipped"] == ["grid.nc", "figures"]
    assert not (tmp_path / "cli-run" / "grid.nc").exists()
    assert not (tmp_path / "cli-run" / "report.html").exists()


def test_run_on_a_local_dask_cluster(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    """``--workers`` evaluates on a local cluster, which always streams, and says so."""
    pytest.importorskip("distributed")
    args = ["run", str(write_config(GOOD)), "--out", str(tmp_path), "--workers", "1"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "(decode 12 rows, prefill 12 rows," in flat
    assert "not written: grid.nc, figures" in flat
    assert "a run on a dask cluster always streams" in flat
    manifest = json.loads((tmp_path / "cli-run" / "manifest.json").read_text())
    assert manifest["layout"]["engine"] == "dask.distributed"


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        (GOOD.replace("[axes]", "[axes]\nbatchs = [1]"), "axes.batchs"),
        (GOOD.replace('["h100-sxm"]', '["h100"]'), "axes.hardware[0]"),
        (GOOD.replace("[1, 64, 512]", "[0, 64]"), "axes.batch[0]"),
        (GOOD.replace("[1, 64, 512]", '"all"'), "axes.batch"),
        (GOOD.replace("[axes]", "[axes]\nkv_heads = [5]"), "axes.kv_heads[0]"),
        (GOOD.replace("[512, 32768]", "[]"), "axes.context"),
        (GOOD.replace('name = "cli-run"', 'name = "a/b"'), "sweep.name"),
    ],
)
def test_bad_config_exits_2_names_the_key_and_writes_nothing(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path, bad: str, key: str
) -> None:
    path = write_config(bad)
    out = tmp_path / "out"
    result = runner.invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {path}: ")
    assert f": {key}: " in result.output
    assert not out.exists()


def test_every_config_is_validated_before_any_runs(
    runner: CliRunner, write_config: Callable[[str, str], Path], tmp_path: Path
) -> None:
    good = write_config(GOOD, "good")
    bad = write_config(GOOD.replace('["h100-sxm"]', '["h100"]'), "bad")
    result = runner.invoke(cli, ["run", str(good), str(bad), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert not (tmp_path / "out").exists()


def test_validate_reports_each_file(
    runner: CliRunner, write_config: Callable[[str, str], Path]
) -> None:
    bad = write_config(GOOD.replace('["h100-sxm"]', '["h100"]'), "bad")
    result = runner.invoke(cli, ["validate", str(bad), str(SEED_CONFIG)])
    assert result.exit_code == 2
    assert f"Error: {bad}: axes.hardware[0]: unknown hardware 'h100'" in result.output
    assert "ok: seed-llama3-8b-h100" in result.output


def test_validate(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["validate", str(SEED_CONFIG)])
    assert result.exit_code == 0, result.output
    assert "ok: seed-llama3-8b-h100: decode 18 points" in result.output
    assert "estimated memory" in result.output


@pytest.mark.parametrize(
    ("what", "expected"),
    [("hardware", "h100-sxm"), ("models", "llama-3-8b"), ("dtypes", "0.515625")],
)
def test_list(runner: CliRunner, what: str, expected: str) -> None:
    result = runner.invoke(cli, ["list", what])
    assert result.exit_code == 0
    assert expected in result.output


def test_classify_matches_the_textbook_check_value(runner: CliRunner) -> None:
    result = runner.invoke(
        cli,
        [
            "classify",
            "--params",
            "7e9",
            "--sequence-length",
            "512",
            "--batch-size",
            "8",
            "--peak-flops",
            "989e12",
            "--bandwidth",
            "3.35e12",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ridge point 295.2239" in result.output
    assert "2.7098 %" in result.output
    assert "memory-bound" in result.output
    assert "compute-bound" in result.output


def test_classify_bad_input_exits_2(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["classify", "--params", "7e9"])
    assert result.exit_code == 2
    assert "give --hardware, or both --peak-flops and --bandwidth" in result.output
    result = runner.invoke(cli, ["classify", "--params", "-1", "--hardware", "h100-sxm"])
    assert result.exit_code == 2
    assert "--params must be > 0 (got -1.0)" in result.output


def test_console_script_help_has_an_example() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sweeps", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert "sweeps run configs/seed-llama3-8b-h100.toml" in done.stdout
