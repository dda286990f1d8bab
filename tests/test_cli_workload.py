"""``sweeps workload``: its tables, its JSON, its figures written atomically, its errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sweeps.cli.main import cli
from sweeps.traces.data import shipped

MOONCAKE = str(shipped("mooncake-conversation.jsonl"))


def test_the_tables_say_the_workload() -> None:
    result = CliRunner().invoke(cli, ["workload", str(shipped("azure-conv-2023.csv"))])
    assert result.exit_code == 0, result.output
    assert "3,000 of 3,000 rows" in result.output
    assert "CV of inter-arrival times" in result.output
    assert "prefix reuse" not in result.output  # Azure's trace has no hashes


def test_json_and_figures(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["workload", MOONCAKE, "--json", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["format"] == "mooncake"
    assert doc["requests"] == 1000
    assert 0 < doc["reuse"]["unbounded_hit_rate"] < 1
    folder = tmp_path / "workload"
    assert doc["folder"] == str(folder)
    for name in ("arrival-rate", "burstiness", "lengths", "correlation", "prefix-reuse"):
        assert f"{name}.svg" in doc["files"]
        assert (folder / f"{name}.svg").read_text().startswith("<svg")
        assert (folder / f"{name}.html").stat().st_size > 0
    # a result there is not replaced unasked
    again = CliRunner().invoke(cli, ["workload", MOONCAKE, "--out", str(tmp_path)])
    assert again.exit_code == 2
    assert "already there" in again.output


def test_a_bad_trace_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,1\n1,x,1\n")
    result = CliRunner().invoke(cli, ["workload", str(bad), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "line 3: column 'prompt_tokens': 'x' is not a number" in result.output
    assert not (tmp_path / "out" / "workload").exists()
