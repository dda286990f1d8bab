"""``scripts/measure.py``: its arguments and the calibrate CSV it writes (no GPU, no PyTorch)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sweeps.calibrate import COLUMNS, calibrate, load_measurements

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "tests" / "data" / "hf" / "llama-3-8b" / "config.json"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("measure", ROOT / "scripts" / "measure.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["measure"] = module
    spec.loader.exec_module(module)
    return module


measure = _script()


def test_columns_are_calibrates() -> None:
    assert measure.COLUMNS == COLUMNS


def test_arguments_parse_into_options(tmp_path: Path) -> None:
    options = measure.parse_args(
        [
            str(CONFIG),
            "--model",
            "llama-3-8b",
            "--hardware",
            "h200",
            "--batch",
            "1,8,64",
            "--context",
            "2048",
            "--out",
            str(tmp_path / "m.csv"),
            "--iters",
            "5",
        ]
    )
    assert options.batches == (1, 8, 64)
    assert options.contexts == (2048,)
    assert options.prompts == (512, 2048)
    assert options.iters == 5
    assert options.dtype == "bf16"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "1,x"], "write positive whole numbers separated by commas"),
        (["--batch", "0,8"], "every value must be a whole number >= 1"),
        (["--iters", "3,4"], "one whole number >= 1"),
        (["--dtype", "int3"], "invalid choice: 'int3'"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        measure.parse_args([str(CONFIG), "--model", "m", "--hardware", "h", *args])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_a_missing_config_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        measure.parse_args([str(tmp_path / "none.json"), "--model", "m", "--hardware", "h"])
    assert "none.json: no such config.json" in capsys.readouterr().err


def test_timings_become_rows_calibrate_reads(tmp_path: Path) -> None:
    options = measure.parse_args(
        [
            str(CONFIG),
            "--model",
            "llama-3-8b",
            "--hardware",
            "h200",
            "--out",
            str(tmp_path / "m.csv"),
        ]
    )
    timings = [("decode", 8, 2048, 0.004), ("prefill", 1, 512, 0.02)]
    table = measure.rows(options, timings)
    assert [r["metric"] for r in table] == ["itl_s", "output_tokens_per_s", "ttft_s"]
    assert table[1]["value"] == pytest.approx(8 / 0.004)
    measure.write_csv(table, options.out)
    parsed = load_measurements(options.out)
    assert [(m.batch, m.prompt_tokens, m.output_tokens) for m in parsed] == [
        (8, 2048, 1),
        (8, 2048, 1),
        (1, 512, 1),
    ]
    frame = calibrate(options.out)
    assert frame["context"].to_list() == [2048, 2048, 512]  # I + O // 2 is the measured cache
    assert not frame["beats_bound"].any()  # 4 ms for 8 x 2k tokens of an 8B model is slower


def test_an_unknown_phase_is_an_error() -> None:
    options = measure.parse_args([str(CONFIG), "--model", "m", "--hardware", "h"])
    with pytest.raises(ValueError, match="unknown phase 'train'; allowed: decode, prefill"):
        measure.rows(options, [("train", 1, 1, 1.0)])
