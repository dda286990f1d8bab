"""Issue 24 items 1, 2 and 4: names, links, optional extras and writers' failures, through the
CLI. Each case: its exit code, one ``Error:`` line naming the thing, no traceback, and where
data could be lost, the earlier result byte for byte as it was."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sweeps.cli.main import cli
from sweeps.export import database, failures
from sweeps.pipeline import extras

SMALL = """
[sweep]
name = "small"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 8]
context = [512, 2048]
[outputs]
charts = []
grid = "none"
"""

MODEL = "params = 1e9\nlayers = 2\nheads = 4\nkv_heads = 4\nhead_dim = 64\n"


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def one_error(result: Any) -> str:
    """The one ``Error:`` line of a failed command (the whole of stderr)."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture
def earlier(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """A config with ``duckdb = true``, its complete result, and that result's bytes."""
    config = tmp_path / "small.toml"
    config.write_text(SMALL.replace('grid = "none"', 'grid = "none"\nduckdb = true'), "utf-8")
    out = tmp_path / "out"
    assert invoke("run", str(config), "--out", str(out), "-q").exit_code == 0
    return config, out, snapshot(out)


def test_duckdb_not_installed_is_said_before_any_work(earlier, monkeypatch) -> None:
    config, out, before = earlier
    monkeypatch.setattr(extras, "installed", lambda module: module != "duckdb")
    result = invoke("run", str(config), "--out", str(out), "--force")
    assert result.exit_code == 2
    line = one_error(result)
    assert "outputs.duckdb: needs DuckDB" in line
    assert "pip install 'roofline-sweeps[duckdb]'" in line
    assert snapshot(out) == before
    checked = invoke("validate", str(config))
    assert checked.exit_code == 2
    assert "pip install 'roofline-sweeps[duckdb]'" in one_error(checked)


def test_netcdf_writer_not_installed_is_said_before_any_work(tmp_path, monkeypatch) -> None:
    config = tmp_path / "nc.toml"
    config.write_text(SMALL.replace('grid = "none"', 'grid = "netcdf"'), "utf-8")
    monkeypatch.setattr(extras, "installed", lambda module: module not in ("h5netcdf", "h5py"))
    result = invoke("run", str(config), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "outputs.grid: needs the NetCDF writer" in one_error(result)
    assert "pip install 'roofline-sweeps[netcdf]'" in result.stderr
    assert not (tmp_path / "out").exists()


SERVING = """
[serving]
prompt_tokens = [512]
output_tokens = [64]
arrival_rate = [4.0]
simulate = {requests}
"""
SIMULATED = SMALL + SERVING


def test_a_large_simulation_without_numba_names_the_fast_extra_before_any_work(
    tmp_path, monkeypatch
) -> None:
    config = tmp_path / "sim.toml"
    config.write_text(SIMULATED.format(requests=10_001), "utf-8")
    monkeypatch.setattr(extras, "installed", lambda module: module != "numba")
    result = invoke("run", str(config), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    line = one_error(result)
    assert f"{config}: serving.simulate = 10001: needs the simulator's compiled loop" in line
    assert "allowed without it: simulate <= 10000" in line
    assert "pip install 'roofline-sweeps[fast]'" in line
    assert not (tmp_path / "out").exists()
    assert invoke("validate", str(config)).exit_code == 2


def test_a_small_simulation_runs_interpreted_without_numba(tmp_path, monkeypatch) -> None:
    config = tmp_path / "sim.toml"
    config.write_text(SIMULATED.format(requests=10_000), "utf-8")
    monkeypatch.setattr(extras, "installed", lambda module: module != "numba")
    assert invoke("validate", str(config)).exit_code == 0  # the run itself: test_simulate_run


def test_the_database_failing_puts_the_earlier_result_back(earlier, monkeypatch) -> None:
    config, out, before = earlier

    def full(*args: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(database, "_build", full)
    result = invoke("run", str(config), "--out", str(out), "--force")
    assert result.exit_code == 1
    line = one_error(result)
    assert line.endswith("sweep.duckdb: the disk is full; free some space or write elsewhere")
    assert snapshot(out) == before  # the earlier result, the staging folder gone


def test_a_database_that_lacks_its_views_is_an_error_not_exit_0(earlier, monkeypatch) -> None:
    config, out, before = earlier
    monkeypatch.setattr(database, "_build", lambda building, folder, tables: None)
    monkeypatch.setattr(database, "_check", database._check)
    result = invoke("run", str(config), "--out", str(out), "--force")
    assert result.exit_code == 1
    assert "sweep.duckdb: cannot be written" in one_error(result)
    assert snapshot(out) == before


def test_polars_transport_error_on_a_full_disk_is_one_line(earlier, monkeypatch) -> None:
    import polars as pl

    config, out, before = earlier

    def thrift(*args: Any, **kwargs: Any) -> None:
        msg = "parquet: Invalid thrift: transport error"
        raise pl.exceptions.ComputeError(msg)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", thrift)
    monkeypatch.setattr(failures, "_free", lambda path: 0)
    result = invoke("run", str(config), "--out", str(out), "--force")
    assert result.exit_code == 1
    line = one_error(result)
    assert line.startswith("Error: ")
    assert ".parquet: the disk is full" in line
    assert snapshot(out) == before


def test_a_writers_own_failure_names_the_file(tmp_path, monkeypatch) -> None:
    config = tmp_path / "z.toml"
    config.write_text(SMALL.replace('grid = "none"', 'grid = "zarr"'), "utf-8")

    def broken(*args: Any, **kwargs: Any) -> None:
        msg = "codec pipeline failed"
        raise ValueError(msg)

    monkeypatch.setitem(__import__("sweeps.export.grid").export.grid.WRITERS, "zarr", broken)
    result = invoke("run", str(config), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert one_error(result).endswith("grid.zarr: cannot be written: codec pipeline failed")
    assert not (tmp_path / "out" / "small").exists()


def test_force_through_a_symlinked_result_folder_never_touches_its_target(tmp_path) -> None:
    config = tmp_path / "small.toml"
    config.write_text(SMALL, "utf-8")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work", "utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "small").symlink_to(precious)
    result = invoke("run", str(config), "--out", str(out), "--force")
    assert result.exit_code == 2
    assert "small: a symbolic link" in one_error(result)
    assert (precious / "thesis.tex").read_text("utf-8") == "years of work"
    assert (out / "small").is_symlink()


@pytest.mark.parametrize(
    ("where", "name", "key"),
    [
        ("model", ".", 'models."."'),
        ("model", "..", 'models.".."'),
        ("model", "m" * 250, "models.m"),
        ("hardware", "d" * 250, "hardware.d"),
        ("dtype", "q" * 250, "dtypes.q"),
        ("sweep", "small\n", "sweep.name"),
        ("sweep", "s" * 250, "sweep.name"),
    ],
)
def test_names_that_become_files_are_refused_by_validate(tmp_path, where, name, key) -> None:
    text = SMALL
    quoted = '"' + name.replace("\n", "\\n") + '"'
    if where == "model":
        text = text.replace('["llama-3-8b"]', f"[{quoted}]") + f"[models.{quoted}]\n{MODEL}"
    elif where == "hardware":
        text = text.replace('["h100-sxm"]', f"[{quoted}]") + (
            f"[hardware.{quoted}]\nbandwidth = 1e12\nmemory = 8e10\n"
            f"[hardware.{quoted}.peak_flops]\nbf16 = 1e15\n"
        )
    elif where == "dtype":
        text = text.replace("[axes]", f"[axes]\nkv_dtype = [{quoted}]") + (
            f"[dtypes.{quoted}]\nbits = 4\n"
        )
    else:
        text = text.replace('"small"', quoted)
    config = tmp_path / "bad.toml"
    config.write_text(text, "utf-8")
    for command in (["validate", str(config)], ["run", str(config), "--out", str(tmp_path)]):
        result = invoke(*command)
        assert result.exit_code == 2
        assert "is not a valid name" in result.stderr
        assert key.split(".")[0] in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["bad.toml"]


def test_an_empty_config_path_is_refused_not_a_placeholder_model(tmp_path) -> None:
    config = tmp_path / "empty.toml"
    config.write_text(
        SMALL.replace('["llama-3-8b"]', '["m"]') + '[models.m]\nconfig = ""\n', "utf-8"
    )
    result = invoke("validate", str(config))
    assert result.exit_code == 2
    assert one_error(result) == f"Error: {config}: models.m.config: must not be empty (got '')"


def test_nul_in_a_title_is_refused_before_any_work(tmp_path) -> None:
    config = tmp_path / "nul.toml"
    config.write_text(SMALL.replace('name = "small"', 'name = "small"\ntitle = "a\\u0000b"'))
    result = invoke("run", str(config), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "sweep.title: holds a NUL character" in one_error(result)
    assert not (tmp_path / "out").exists()
