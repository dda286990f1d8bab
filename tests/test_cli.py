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
    # the summary is the result (stdout), where it went is status (stderr)
    assert "CLI test: decode summary" in result.stdout
    assert "never" in result.stdout  # Llama-3 8B decode never turns compute-bound on an H100
    assert "does not fit" in result.stdout  # 70B in bf16 at 32k on one H100
    assert "wrote " not in result.stdout
    assert (
        "(decode 12 rows, prefill 12 rows, hardware 1 row, models 2 rows, summary 4 rows)"
        in result.stderr
    )
    # a second run without --force is refused before any work (exit 2: the arguments) and
    # leaves the result alone
    before = (out / "cli-run" / "manifest.json").read_bytes()
    again = runner.invoke(cli, ["run", str(path), "--out", str(out)])
    assert again.exit_code == 2
    assert again.stderr.startswith("Error: ")
    assert "a result is already there" in again.stderr
    assert "--force" in again.stderr
    assert (out / "cli-run" / "manifest.json").read_bytes() == before
    forced = runner.invoke(cli, ["run", str(path), "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output


def test_quiet_keeps_the_results_and_verbose_adds_the_plan_and_timings(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    path = str(write_config(GOOD))
    quiet = runner.invoke(cli, ["run", path, "--out", str(tmp_path), "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stderr == ""
    assert "CLI test: decode summary" in quiet.stdout
    verbose = runner.invoke(cli, ["run", path, "--out", str(tmp_path), "--force", "-v"])
    assert verbose.exit_code == 0, verbose.output
    assert f"{path}: ok: cli-run: decode 12 points" in verbose.stderr  # the plan, first
    assert verbose.stderr.index("ok: cli-run") < verbose.stderr.index("wrote ")
    assert any(
        line.split()[:1] == ["grid"] and line.endswith(" s") for line in verbose.stderr.splitlines()
    )
    assert verbose.stdout == quiet.stdout  # the results do not depend on how much is said


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
    budget = str(BASE_BYTES + 5000)  # the grid needs 8,240 bytes, one batch size of it 2,746
    args = ["run", str(write_config(GOOD)), "--out", str(tmp_path), "--memory-budget", budget]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "CLI test: decode summary" in flat
    assert "does not fit" in flat  # 70B in bf16 at 32k on one H100, as in memory
    assert "(decode 12 rows, prefill 12 rows," in flat
    # what the config asks for but a streamed grid cannot give is said, not silently missing:
    # the lazy grid's Zarr store needs a device's whole grid within the budget; the report is built one model and
    # device at a time
    assert "not written: grid.zarr (they need the whole grid in memory;" in flat
    manifest = json.loads((tmp_path / "cli-run" / "manifest.json").read_text())
    assert manifest["layout"]["skipped"] == ["grid.zarr"]
    assert not (tmp_path / "cli-run" / "grid.zarr").exists()
    assert (tmp_path / "cli-run" / "report.html").exists()


def test_the_summary_grid_never_outgrows_a_streamed_run(
    write_config: Callable[[str], Path],
) -> None:
    """A streamed run holds two chunks (one batch size each, at least) under its budget; the
    summary's grid is one batch size and one prompt, so whatever budget streams also summarizes."""
    from sweeps.config import load_config
    from sweeps.grid.chunks import plan_chunks
    from sweeps.pipeline.stream import configurations

    sweep = load_config(write_config(GOOD))
    smallest = min(estimate_bytes(c.sweep) for c in plan_chunks(sweep, BASE_BYTES + 1))
    budget = BASE_BYTES + 2 * (smallest - BASE_BYTES)
    assert configurations(sweep, budget) is not None
    assert configurations(sweep, BASE_BYTES) is None  # and below, the run says so


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
    assert "not written: grid.zarr" in flat
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
    assert "ok: seed-llama3-8b-h100: decode 18 points" in result.stdout
    assert "estimated memory 448.0 MiB; in memory, single files; grid.zarr written" in result.stdout
    assert "; figures written" in result.stdout


@pytest.mark.parametrize(
    ("what", "expected"),
    [("hardware", "h100-sxm"), ("models", "llama-3-8b"), ("dtypes", "0.515625")],
)
def test_list(runner: CliRunner, what: str, expected: str) -> None:
    result = runner.invoke(cli, ["list", what])
    assert result.exit_code == 0
    assert expected in result.stdout


def test_list_prints_sources_whole_and_counts_as_people_read_them(runner: CliRunner) -> None:
    from sweeps.catalog import load_catalog

    catalog = load_catalog()
    source = catalog.lookup_hardware("h100-sxm").source
    assert len(source) > 80  # the old listing cut it at 80 characters
    result = runner.invoke(cli, ["list", "hardware"])
    assert result.exit_code == 0
    assert source in result.stdout  # a numbered note under the table, whole
    assert "3.35 Tbyte/s" in result.stdout  # the registry's spelling of byte/s
    wide = runner.invoke(cli, ["list", "hardware", "--wide"])
    assert any(line.rstrip().endswith(source) for line in wide.stdout.splitlines())
    models = runner.invoke(cli, ["list", "models"])
    row = next(line for line in models.stdout.splitlines() if line.startswith("llama-2-13b "))
    assert " 13 B " in row  # billions of parameters are B, not G
    assert " G " not in models.stdout


CLASSIFY = ["classify", "--params", "7e9", "--sequence-length", "512", "--batch-size", "8"]
PEAKS = ["--peak-flops", "989e12", "--bandwidth", "3.35e12"]


def test_classify_matches_the_textbook_check_value(runner: CliRunner) -> None:
    result = runner.invoke(cli, [*CLASSIFY, *PEAKS])
    assert result.exit_code == 0, result.output
    assert "ridge point 295.2239 FLOP/byte" in result.stdout
    assert "2.7098 %" in result.stdout
    assert "memory-bound" in result.stdout
    assert "compute-bound" in result.stdout
    assert "[FLOP/B]" not in result.stdout


def test_classify_peaks_given_next_to_hardware_override_the_catalog(runner: CliRunner) -> None:
    result = runner.invoke(cli, [*CLASSIFY, "--hardware", "h100-sxm", "--peak-flops", "670e12"])
    assert result.exit_code == 0, result.output
    assert "ridge point 200.0 FLOP/byte" in result.stdout  # 670e12 / 3.35e12, not 989e12's


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--params", "7e9"], "give --hardware, or both --peak-flops and --bandwidth"),
        (["--params", "-1", "--hardware", "h100-sxm"], "'-1' must be a finite number > 0"),
        (["--params", "inf", "--hardware", "h100-sxm"], "'inf' must be a finite number > 0"),
        (["--params", "7e9", "--hardware", "h100-sxm", "--peak-flops", "0"], "'0' must be a"),
        (["--params", "7e9", "--peak-flops", "1e15", "--bandwidth", "inf"], "'inf' must be a"),
        (["--params", "7e9", "--peak-flops", "1e15", "--bandwidth", "nan"], "'nan' must be a"),
        (["--params", "7e9", "--batch-size", "0", "--hardware", "h100-sxm"], "--batch-size"),
        (["--params", "7e9", "--hardware", "h100"], "unknown hardware 'h100'; did you mean"),
    ],
)
def test_classify_bad_input_exits_2(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["classify", *args])
    assert result.exit_code == 2, result.output
    assert "Error: " in result.stderr
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output


def test_import_model_puts_the_toml_on_stdout_and_the_report_on_stderr(
    runner: CliRunner, tmp_path: Path
) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = runner.invoke(cli, ["import-model", str(path), "--id", "mine"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("[models.mine]")
    # 2 (K and V) x 8 heads x 128 dims x 2 bytes x 32 layers, from Model.kv_bytes_per_token
    assert "kv bytes/token   131,072 in bf16, all layers" in result.stderr
    parse_config(
        '[sweep]\nname = "x"\n[axes]\nmodel = ["mine"]\nhardware = ["h100-sxm"]\n'
        + result.stdout.replace(str(path), path.as_posix()),
        str(tmp_path / "s.toml"),
    )


def test_console_script_help_has_an_example() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sweeps", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert "sweeps run configs/seed-llama3-8b-h100.toml" in done.stdout
    assert "sweeps init my-sweep" in done.stdout


SERVED = (
    GOOD.replace('model = ["llama-3-8b", "llama-3-70b"]', 'model = ["llama-3-8b"]')
    + """
[serving]
prompt_tokens = [1024]
output_tokens = [256]
arrival_rate = [2.0, 50.0]
"""
)


def test_a_serving_run_prints_its_cheapest_plans(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    args = ["run", str(write_config(SERVED)), "--out", str(tmp_path)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "CLI test: cheapest serving plans" in flat
    assert "idle capacity paid for, at the devices' dated prices" in flat
    document = json.loads(runner.invoke(cli, [*args, "--force", "--json"]).stdout)
    from .test_cli_json import check

    check(document, "sweeps run --json")  # every plan's key documented in docs/cli.md
    plans = document["runs"][0]["plans"]
    assert [p["arrival_rate"] for p in plans] == [2.0, 50.0]
    assert all(p["cost_per_million_output_tokens_usd"] > 0 for p in plans)  # H100 has a price


def test_run_into_head_exits_0_quietly(write_config: Callable[[str], Path], tmp_path: Path) -> None:
    path = write_config(GOOD)
    sweeps = Path(sys.executable).parent / "sweeps"
    command = f"set -o pipefail; '{sweeps}' run '{path}' --out '{tmp_path / 'out'}' | head -1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1
    assert "Error" not in done.stderr
    assert "Traceback" not in done.stderr
    assert "BrokenPipe" not in done.stderr


def test_the_wrote_line_says_the_wall_time(
    runner: CliRunner, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    path = write_config(GOOD.replace("charts = []", 'charts = ["ceiling"]\nformats = ["html"]'))
    result = runner.invoke(cli, ["run", str(path), "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    line = next(x for x in result.stderr.splitlines() if x.startswith("wrote "))
    said = float(line.rsplit(" in ", 1)[1].removesuffix(" s").replace(",", ""))
    manifest = json.loads((tmp_path / "cli-run" / "manifest.json").read_text("utf-8"))
    assert said < sum(run["seconds"].values())  # the phases overlap; their sum is more
    assert said >= manifest["timings_s"]["outputs"] - 0.01  # and no phase outlasts the run


def test_version_prints_the_package_version_and_the_install_agrees(runner: CliRunner) -> None:
    """``sweeps --version`` prints ``sweeps.__version__`` with no metadata lookup (an editable
    install lists the import name under the distribution twice, which click's lookup refused),
    and the installed distribution's version is that same one fact."""
    from importlib import metadata

    from sweeps import __version__
    from sweeps.distribution import DISTRIBUTION

    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"sweeps, version {__version__}"
    assert metadata.version(DISTRIBUTION) == __version__


def test_out_as_a_url(
    runner: CliRunner,
    write_config: Callable[[str], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file:// URL is its local folder; another URL is refused before any work (exit 2)
    where fsspec cannot open it or is missing, never taken as a local folder ``memory:/x``
    (a URL that opens is committed there: tests/test_remote.py)."""
    path = write_config(GOOD)
    done = runner.invoke(cli, ["run", str(path), "--out", (tmp_path / "o").as_uri()])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "o" / "cli-run" / "decode.parquet").is_file()
    monkeypatch.chdir(tmp_path)
    unknown = runner.invoke(cli, ["run", str(path), "--out", "nosuch://x"])
    assert unknown.exit_code == 2
    assert "--out nosuch://x: fsspec cannot open nosuch:// (Protocol not known: nosuch)" in (
        unknown.stderr
    )
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if not installed
    missing = runner.invoke(cli, ["run", str(path), "--out", "memory://x"])
    assert missing.exit_code == 2
    assert "a memory:// URL needs fsspec, which is not installed; install the remote extra" in (
        missing.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o", "sweep.toml"]  # no memory:
