"""``--json``: one document on stdout, every key documented in docs/cli.md's "JSON output"."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sweeps.cli.main import cli
from sweeps.grid.memory import BASE_BYTES

from .conftest import ROOT, SEED_CONFIG
from .test_cli import GOOD

SECTION = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("## JSON output\n", 1)[1]
SECTION = SECTION.split("\n## ", 1)[0]


def documented(command: str) -> dict[str, str]:
    """The keys (and units) docs/cli.md documents for ``command``, e.g. ``sweeps run --json``."""
    block = SECTION.split(f"#### `{command}`\n", 1)[1].split("\n#### ", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|", block, flags=re.MULTILINE))


def paths(value: Any, prefix: str = "") -> set[str]:
    """Every leaf of a JSON document as a path: ``runs[].rows.decode``."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in paths(v, f"{prefix}.{k}" if prefix else k)}
    if isinstance(value, list):
        found = {p for item in value for p in paths(item, f"{prefix}[]")}
        return found or {f"{prefix}[]"}
    return {prefix}


def pattern(key: str) -> re.Pattern[str]:
    return re.compile(
        re.sub(r"<[a-z]+>", r"[^.\\[]+", re.escape(key).replace(r"\<", "<").replace(r"\>", ">"))
    )


def check(document: Any, command: str, optional: tuple[str, ...] = ()) -> None:
    keys = documented(command)
    assert keys, command
    leaves = paths(document)
    patterns = {key: pattern(key) for key in keys}
    undocumented = [p for p in leaves if not any(r.fullmatch(p) for r in patterns.values())]
    assert not undocumented, f"{command}: document these keys in docs/cli.md: {undocumented}"
    missing = [
        k
        for k, r in patterns.items()
        if k not in optional and not any(r.fullmatch(p) for p in leaves)
    ]
    assert not missing, f"{command}: docs/cli.md documents keys the document lacks: {missing}"
    if (
        isinstance(document, dict) and "units" in document
    ):  # the documented units are the document's
        for field, unit in document["units"].items():
            field_key = re.compile(rf"(^|\.){re.escape(field)}(\.<[a-z]+>)?$")
            key = next(k for k in keys if field_key.search(k) and not k.startswith("units"))
            assert keys[key] == unit, (key, unit)


def stdout_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (0, 2), result.output
    return result, json.loads(result.stdout)  # stdout is the document alone


def test_run_json_is_the_table_and_the_lines_with_documented_keys(
    write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    result, document = stdout_json("run", str(write_config(GOOD)), "--out", str(tmp_path), "--json")
    assert result.exit_code == 0
    check(document, "sweeps run --json", optional=("runs[].plans[].<column>",))
    run = document["runs"][0]
    for field, unit in run["units"].items():  # the documented units are the document's
        assert documented("sweeps run --json")[f"runs[].summary[].{field}"] == unit
    assert run["rows"] == {"decode": 12, "prefill": 12, "hardware": 1, "models": 2, "summary": 4}
    rows = {(r["model"], r["context"]): r for r in run["summary"]}
    small = rows[("llama-3-8b", 512)]
    assert isinstance(small["knee_batch"], int)  # whole sequences
    assert small["ridge_batch"] is None  # never compute-bound on an H100
    assert rows[("llama-3-70b", 32768)]["fits"] is False
    for row in run["summary"]:  # the per-row units of the table are the units map's
        for field in run["units"]:
            assert field in row
    assert result.stdout.startswith("{")  # nothing before the document


def test_a_streamed_run_json_says_what_was_skipped(
    write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    budget = str(BASE_BYTES + 5000)
    args = (
        "run",
        str(write_config(GOOD)),
        "--out",
        str(tmp_path),
        "--memory-budget",
        budget,
        "--json",
    )
    _, document = stdout_json(*args)
    check(document, "sweeps run --json", optional=("runs[].plans[].<column>",))
    assert document["runs"][0]["layout"] == "single"  # the config decides, not the budget
    assert document["runs"][0]["chunks"] > 1
    assert document["runs"][0]["skipped"] == ["grid.zarr"]  # the figures come slice by slice


def test_validate_json_has_every_config_good_or_bad(
    write_config: Callable[[str, str], Path],
) -> None:
    bad = write_config(GOOD.replace('["h100-sxm"]', '["h100"]'), "bad")
    result, document = stdout_json("validate", str(SEED_CONFIG), str(bad), "--json")
    assert result.exit_code == 2
    check(document, "sweeps validate --json")
    good, wrong = document["configs"]
    assert good["ok"] is True
    assert good["rows"]["decode"] == 18
    assert wrong == {"config": str(bad), "ok": False, "error": wrong["error"]}
    assert "unknown hardware 'h100'" in wrong["error"]


@pytest.mark.parametrize("what", ["hardware", "models", "dtypes"])
def test_list_json(what: str) -> None:
    _, document = stdout_json("list", what, "--json")
    check(document, f"sweeps list {what} --json")
    assert document["list"] == what
    if what == "hardware":
        h100 = next(item for item in document["items"] if item["id"] == "h100-sxm")
        assert h100["peak_flops"]["bf16"] == 989.4e12  # the datasheet's 989.4 TFLOP/s, SI
        assert h100["bandwidth"] == 3.35e12
        assert h100["ridge_point"] == pytest.approx(989.4e12 / 3.35e12, rel=1e-12)


def test_classify_json_is_the_textbook_result_and_its_inputs() -> None:
    args = [
        "classify",
        "--params",
        "7e9",
        "--batch-size",
        "8",
        "--peak-flops",
        "989e12",
        "--bandwidth",
        "3.35e12",
    ]
    _, document = stdout_json(*args, "--json")
    check(document, "sweeps classify --json")
    assert document["ridge_point"] == 295.2239
    assert document["decode"]["utilization_percent"] == 2.7098
    assert document["inputs"]["sequence_length"] == 512


def test_the_check_fails_on_an_undocumented_key() -> None:
    with pytest.raises(AssertionError, match="document these keys"):
        check(
            {"list": "dtypes", "items": [{"name": "x", "surprise": 1}], "units": {}},
            "sweeps list dtypes --json",
            optional=("items[].bits",),
        )


def test_calibrate_json_has_every_row_and_the_summary_with_documented_keys(
    tmp_path: Path,
) -> None:
    result, document = stdout_json("calibrate", "--out", str(tmp_path), "--json")
    assert result.exit_code == 0
    check(document, "sweeps calibrate --json")
    assert len(document["measurements"]) == document["measurements"][-1]["line"] - 1
    assert document["beating"] == []
    first = document["measurements"][0]
    assert first["unit"] == "token/s"
    assert first["extra"]["what"] == "H100 FP8 LLaMA 7B out tok/s/GPU"
