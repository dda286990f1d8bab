"""Issue 24 items 3, 4, 5 and 6 through the CLI: structural limits checked before any work
(under a timeout, with bounded memory), values that would leave the exact range, signals,
stdout, the memory budget, and terminal output that cannot be hijacked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sweeps.cli.console import printable
from sweeps.grid import memory

from .test_hostile_outputs import MODEL, SMALL, invoke, one_error

DATA = Path(__file__).parent / "data" / "hf"


def cli(*args: str, cwd: Path, timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess:
    """``sweeps ARGS`` in a process of its own (signals, limits, closed streams)."""
    code = "from sweeps.cli.main import main; main()"
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        text=True,
        timeout=timeout,
        check=False,
        **streams,
    )


def test_a_20000_part_dotted_key_is_refused_at_once(tmp_path) -> None:
    config = tmp_path / "deep.toml"
    config.write_text(SMALL + "[options]\n" + ".".join(["a"] * 20_000) + " = 1\n", "utf-8")
    started = time.perf_counter()
    result = invoke("validate", str(config))
    assert time.perf_counter() - started < 5
    assert result.exit_code == 2
    assert "a dotted key of 20,000 parts" in one_error(result)
    assert "allowed: at most 16 parts" in result.stderr


def _huge(tmp_path: Path, family: str) -> Path:
    data = json.loads((DATA / family / "config.json").read_text("utf-8"))
    data["num_hidden_layers"] = 2**53
    path = tmp_path / f"{family}.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


@pytest.mark.parametrize("family", ["deepseek-v3", "qwen3-235b-a22b", "mixtral-8x7b"])
def test_2_53_layers_are_refused_when_read(tmp_path, family) -> None:
    path = _huge(tmp_path, family)
    result = invoke("import-model", str(path))
    assert result.exit_code == 2
    assert "'num_hidden_layers' = 9007199254740992 is not an integer from 1 to 1,024" in (
        one_error(result)
    )
    config = tmp_path / "m.toml"
    config.write_text(
        SMALL.replace('["llama-3-8b"]', '["m"]') + f'[models.m]\nconfig = "{path.name}"\n'
    )
    checked = invoke("validate", str(config))
    assert checked.exit_code == 2
    assert "models.m.config" in checked.stderr


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_big_structures_stay_small_in_memory(tmp_path) -> None:
    """The big-structure cases in one process: its peak RSS stays near an idle import."""
    deep = tmp_path / "deep.toml"
    deep.write_text(SMALL + "[options]\n" + ".".join(["a"] * 20_000) + " = 1\n", "utf-8")
    huge = _huge(tmp_path, "deepseek-v3")
    code = f"""
import resource, sys
from click.testing import CliRunner
from sweeps.cli.main import cli
codes = [CliRunner().invoke(cli, a).exit_code for a in (
    ["validate", {str(deep)!r}], ["import-model", {str(huge)!r}])]
# VmHWM, not ru_maxrss: the latter keeps the forking parent's (pytest's) peak across exec
peak = next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]
print(codes, int(peak) // 1024)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    codes, peak = done.stdout.rsplit("]", 1)
    assert codes.strip() == "[2, 2", done.stderr
    assert int(peak) < 400, f"peak RSS {peak} MiB"


def test_many_distinct_workloads_are_refused_before_any_grid(tmp_path) -> None:
    header = (
        "model,hardware,tp,weight_dtype,kv_dtype,compute_dtype,batch,prompt_tokens,"
        "output_tokens,metric,value,per,source\n"
    )
    rows = "".join(
        f"llama-3-8b,h100-sxm,1,bf16,bf16,auto,{1 + i % 1000},{1 + i},128,itl_s,0.01,device,x\n"
        for i in range(3000)
    )
    path = tmp_path / "many.csv"
    path.write_text(header + rows, "utf-8")
    started = time.perf_counter()
    result = invoke("calibrate", str(path), "--out", str(tmp_path / "out"))
    assert time.perf_counter() - started < 20
    assert result.exit_code == 2
    assert "make a grid of" in one_error(result)
    assert "allowed: at most 1,000,000" in result.stderr


def test_a_measurement_past_the_configs_limits_names_its_line(tmp_path) -> None:
    header = (
        "model,hardware,tp,weight_dtype,kv_dtype,compute_dtype,batch,prompt_tokens,"
        "output_tokens,metric,value,per,source\n"
    )
    path = tmp_path / "tp.csv"
    path.write_text(header + "llama-3-8b,h100-sxm,4096,bf16,bf16,auto,1,512,128,itl_s,1,device,x\n")
    result = invoke("calibrate", str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert one_error(result).endswith(
        "line 2: column 'tp': 4096 is out of range; allowed: 1 to 1,024"
    )


def test_a_billion_workers_is_refused(tmp_path) -> None:
    config = tmp_path / "s.toml"
    config.write_text(SMALL, "utf-8")
    result = invoke("run", str(config), "--out", str(tmp_path / "out"), "--workers", "1000000000")
    assert result.exit_code == 2
    assert "--workers" in one_error(result)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("inproc://x", "not a scheduler address"),
        ("", "not a scheduler address"),
        ("tcp://[::1", "not an address"),
        ("http://host:8787/status", "the scheduler itself listens on tcp://host:8786"),
    ],
)
def test_scheduler_values_get_a_clear_error(tmp_path, address, says) -> None:
    pytest.importorskip("distributed")
    config = tmp_path / "s.toml"
    config.write_text(SMALL, "utf-8")
    result = invoke("run", str(config), "--out", str(tmp_path / "out"), "--scheduler", address)
    assert result.exit_code == 2
    line = one_error(result)
    assert says in line
    assert "allowed: [tcp|tls|ws|wss|ucx://]host:port" in line


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            "[models.m]\n"
            + MODEL.replace("1e9", "1e6")
            + "vocab_size = 128000\nhidden_size = 64\n",
            "models.m.vocab_size: the embedding (128,000 x 64 x 2 = 16,384,000 parameters) "
            "is not less than active_params = 1,000,000",
        ),
        (
            "[hardware.big]\nbandwidth = 1e12\nmemory = 1e20\n[hardware.big.peak_flops]\n"
            "bf16 = 1e15\n",
            "hardware.big.memory: Input should be less than or equal to 9007199254740992",
        ),
        ("[dtypes.tiny]\nbits = 0.001\n", "dtypes.tiny.bits: Input should be greater than or"),
    ],
)
def test_values_that_leave_the_exact_range_are_refused(tmp_path, extra, says) -> None:
    config = tmp_path / "r.toml"
    text = SMALL.replace('["llama-3-8b"]', '["m"]') if "models.m" in extra else SMALL
    if "hardware.big" in extra:
        text = text.replace('["h100-sxm"]', '["big"]')
    if "tiny" in extra:
        text = text.replace("[axes]", '[axes]\nkv_dtype = ["tiny"]')
    config.write_text(text + extra, "utf-8")
    result = invoke("validate", str(config))
    assert result.exit_code == 2
    assert says in one_error(result) or says in result.stderr


def test_classify_extremes_are_refused_or_finite() -> None:
    huge = invoke(
        "classify",
        "--params",
        "7e9",
        "--batch-size",
        str(10**400),
        "--bandwidth",
        "1e12",
        "--peak-flops",
        "1e15",
    )
    assert huge.exit_code == 2
    assert "--batch-size" in one_error(huge)
    top = invoke(
        "classify",
        "--params",
        "1e15",
        "--batch-size",
        "262144",
        "--sequence-length",
        "16777216",
        "--peak-flops",
        "1e3",
        "--bandwidth",
        "1e21",
        "--bytes-per-param",
        "64",
        "--json",
    )
    assert top.exit_code == 0
    assert "inf" not in top.stdout.lower()
    assert "nan" not in top.stdout.lower()
    low = invoke(
        "classify",
        "--params",
        "1",
        "--peak-flops",
        "1e24",
        "--bandwidth",
        "1e3",
        "--bytes-per-param",
        "0.125",
    )
    assert low.exit_code == 0
    assert "inf" not in low.stdout.lower()
    assert "nan" not in low.stdout.lower()


def test_control_characters_are_escaped_not_sent() -> None:
    assert (
        printable("a\x1b]0;owned\x07b\x1b[2J\x9b\tc\n") == "a\\x1b]0;owned\\x07b\\x1b[2J\\x9b\tc\n"
    )


def test_an_escape_in_a_title_never_reaches_the_terminal(tmp_path) -> None:
    config = tmp_path / "esc.toml"
    config.write_text(
        SMALL.replace('name = "small"', 'name = "small"\ntitle = "x\\u001b]0;owned\\u0007y"')
    )
    done = cli("run", str(config), "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert "x\\x1b]0;owned" in done.stdout


def test_an_escape_in_a_path_is_escaped_in_the_error(tmp_path) -> None:
    result = invoke("validate", str(tmp_path / "a\x1b[2Jb.toml"))
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr
    assert "a\\x1b[2Jb.toml" in one_error(result)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_on_a_full_device_is_not_a_disk_full_hint(tmp_path) -> None:
    config = tmp_path / "s.toml"
    config.write_text(SMALL, "utf-8")
    with open("/dev/full", "w") as full:
        done = cli(
            "run",
            str(config),
            "--out",
            "out",
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
        )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: stdout: the device it writes to is full; the results were not all written"
    )
    assert "Traceback" not in done.stderr


def test_a_closed_stdout_is_one_line(tmp_path) -> None:
    config = tmp_path / "s.toml"
    config.write_text(SMALL, "utf-8")
    done = cli(
        "run",
        str(config),
        "--out",
        "out",
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        close_fds=True,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: stdout: closed; the results were not all written"
    )


STREAMED = SMALL.replace("batch = [1, 8]", "batch = { start = 1, stop = 4096 }").replace(
    '["llama-3-8b"]', '["llama-3-8b", "llama-3-70b", "mistral-7b", "qwen2.5-7b"]'
)


@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGTERM, 143, "Terminated"), (signal.SIGHUP, 129, "Hung up")]
)
def test_sigterm_and_sighup_end_a_run_like_ctrl_c(tmp_path, sig, code, word) -> None:
    config = tmp_path / "big.toml"
    config.write_text(STREAMED, "utf-8")
    budget = str(memory.BASE_BYTES + 200_000)
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from sweeps.cli.main import main; main()",
            "run",
            str(config),
            "--out",
            "out",
            "--memory-budget",
            budget,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    staging = tmp_path / "out" / ".sweeps-staging"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(staging.rglob("*.parquet")):
        time.sleep(0.05)
    assert any(staging.rglob("*.parquet")), "the run never started writing"
    process.send_signal(sig)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    assert err.strip().splitlines()[-1] == f"{word} ({signal.Signals(sig).name}): stopped."
    assert "Traceback" not in err
    assert not staging.exists() or not any(staging.iterdir())
    assert not (tmp_path / "out" / "small").exists()


def test_the_cgroup_limit_is_read(tmp_path) -> None:
    limited = tmp_path / "memory.max"
    limited.write_text("1073741824\n")
    assert memory.cgroup_limit((str(limited),)) == 2**30
    limited.write_text("max\n")
    assert memory.cgroup_limit((str(limited),)) is None
    assert memory.cgroup_limit((str(tmp_path / "none"),)) is None


def test_the_default_budget_follows_the_tightest_limit(monkeypatch) -> None:
    monkeypatch.setattr(memory, "physical_memory", lambda: 64 * 2**30)
    monkeypatch.setattr(memory, "cgroup_limit", lambda: 4 * 2**30)
    monkeypatch.setattr(memory, "address_space_limit", lambda: None)
    assert memory.default_budget() == 2 * 2**30
    monkeypatch.setattr(memory, "cgroup_limit", lambda: None)
    space = memory.MIN_ADDRESS_SPACE + 2 * 2**30
    monkeypatch.setattr(memory, "address_space_limit", lambda: space)
    assert memory.default_budget() == (2 * 2**30 + memory.BASE_BYTES) // 2


def test_a_small_address_space_is_a_message_not_sigabrt(tmp_path) -> None:
    import resource

    config = tmp_path / "s.toml"
    config.write_text(SMALL, "utf-8")
    limit = memory.MIN_ADDRESS_SPACE - 2**20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = cli("run", str(config), "--out", "out", cwd=tmp_path, preexec_fn=cap)
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: the address-space limit (RLIMIT_AS, ulimit -v) is ")
    assert not (tmp_path / "out" / "small").exists()


def test_the_documented_minimum_budget_runs(tmp_path) -> None:
    from .conftest import SEED_CONFIG

    result = invoke(
        "run", str(SEED_CONFIG), "--out", str(tmp_path), "--memory-budget", "512MiB", "-q"
    )
    assert result.exit_code == 0, result.stderr
