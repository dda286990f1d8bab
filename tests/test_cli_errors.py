"""One error path: every expected failure is an ``Error:`` line with an exit code, never a
traceback (issue 15 item 4). 2: bad input, before any work; 1: a run that failed; 130: Ctrl-C."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import sweeps.pipeline.execute
from sweeps.cli import cluster, options
from sweeps.cli.main import cli

from .conftest import SEED_CONFIG as SEED
from .test_cli import GOOD


@pytest.fixture
def config(write_config: Callable[[str], Path]) -> Path:
    return write_config(GOOD)


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def test_workers_with_a_scheduler_is_refused_before_any_work(config: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(
        "run", str(config), "--out", str(out), "--workers", "2", "--scheduler", "tcp://x:1"
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --workers starts a local cluster and --scheduler")
    assert "give one of them" in result.stderr
    assert not out.exists()


def test_a_scheduler_that_does_not_answer_is_a_failed_run(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    assert cluster.CONNECT_TIMEOUT <= 10  # the bound; the test waits less
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1.0)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = invoke(
        "run", str(config), "--out", str(tmp_path / "out"), "--scheduler", f"tcp://127.0.0.1:{port}"
    )
    assert result.exit_code == 1
    assert f"Error: --scheduler tcp://127.0.0.1:{port}: no answer within 1 s" in result.stderr
    assert "check the address and that the scheduler is running" in result.stderr
    assert not (tmp_path / "out" / "cli-run").exists()


def test_out_naming_a_file_is_bad_input(config: Path, tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("not a folder", encoding="utf-8")
    result = invoke("run", str(config), "--out", str(target))
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"Error: --out {target}: a file is there, not a folder; name a folder (it is created if missing)\n"
    )
    assert target.read_text(encoding="utf-8") == "not a folder"


def test_a_file_in_the_way_of_out_is_bad_input_not_a_permission(
    config: Path, tmp_path: Path
) -> None:
    target = tmp_path / "taken"
    target.write_text("not a folder", encoding="utf-8")
    result = invoke("run", str(config), "--out", str(target / "deeper"))
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: --out {target / 'deeper'}: {target} is a file, not a folder, so no folder can "
        "be made under it; name a folder (it is created if missing)\n"
    )
    assert "permission" not in result.stderr


def test_out_that_cannot_be_written_is_a_failed_run(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tests may run as root, whom a read-only mode does not stop: answer for os.access
    monkeypatch.setattr(options, "writable", lambda folder: False)
    result = invoke("run", str(config), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert (
        "cannot be written (read-only or no permission); choose a writable folder" in result.stderr
    )


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (errno.ENOSPC, "the disk is full; free some space or choose another --out"),
        (errno.EACCES, "permission denied; choose another --out that you can write"),
        (errno.EROFS, "the file system is read-only; choose another --out that you can write"),
    ],
)
def test_an_os_error_during_the_run_is_one_line_and_exit_1(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, hint: str
) -> None:
    where = str(tmp_path / "out" / "cli-run" / "decode.parquet")

    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError(code, "from the file system", where)

    monkeypatch.setattr(sweeps.pipeline.execute, "run_to_folder", failing)
    result = invoke("run", str(config), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {where}: {hint}\n"


def test_ctrl_c_exits_130_with_a_short_line(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sweeps.pipeline.execute, "run_to_folder", interrupted)
    result = invoke("run", str(config), "--out", str(tmp_path / "out"))
    assert result.exit_code == 130
    assert result.stderr.strip() == "Interrupted."


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--memory-budget", "lots"], "Error: --memory-budget: cannot read 'lots' as a size"),
        (["--memory-budget", "1MiB"], "Error: --memory-budget: '1MiB' is less than a run holds"),
    ],
)
def test_a_bad_budget_is_bad_input(
    config: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    result = invoke("run", str(config), "--out", str(tmp_path / "out"), *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert not (tmp_path / "out").exists()


def test_a_missing_config_and_a_missing_model_file_are_bad_input(tmp_path: Path) -> None:
    missing = tmp_path / "none.toml"
    result = invoke("run", str(missing))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {missing}: no such config")
    model = invoke("import-model", str(tmp_path / "config.json"))
    assert model.exit_code == 2
    assert model.stderr.startswith(f"Error: {tmp_path / 'config.json'}: ")


def test_an_os_error_outside_a_run_names_no_flag_the_command_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweeps.cli import init

    def full(path: Path, text: str, force: bool) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(init, "write_config", full)
    result = invoke("init", "mine")
    assert result.exit_code == 1
    assert (
        result.stderr
        == "Error: mine.toml: the disk is full; free some space or choose another folder\n"
    )


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ("1e999", "'1e999' is larger than any machine; allowed: at most 4 EiB"),
        ("", "cannot read '' as a size; write e.g. 2GiB"),
        ("0", "'0' is less than a run holds before any grid"),
    ],
)
def test_a_memory_budget_is_a_size_or_a_usage_error(budget: str, message: str) -> None:
    result = invoke("validate", str(SEED), "--memory-budget", budget)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: --memory-budget: {message}")


def test_two_configs_of_one_name_are_refused_before_any_run(config: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("run", str(config), str(config), "--out", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {config} and {config} both write ")
    assert "allowed: one config per sweep name in a run" in result.stderr
    assert not out.exists()  # the first was not written either


def test_an_existing_result_stops_every_config_before_any_runs(
    config: Path, write_config: Callable[..., Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert invoke("run", str(config), "--out", str(out)).exit_code == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    other = write_config(GOOD.replace('name = "cli-run"', 'name = "other"'), "other")
    result = invoke("run", str(other), str(config), "--out", str(out))
    assert result.exit_code == 2
    assert "a result is already there; pass --force to replace it" in result.stderr
    assert not (out / "other").exists()  # nothing ran
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
