"""Config messages: every problem at once, TOML errors with a caret, duplicates by identity,
and input files read bounded (``/dev/zero``, FIFOs, huge or deep JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sweeps.config import load_config, parse_config
from sweeps.errors import ConfigError
from sweeps.limits import MAX_PROBLEMS

BASE = """
[sweep]
name = "t"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
"""


def _lines(text: str, path: str = "s.toml") -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, path)
    lines = str(info.value).splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines)
    return [line.removeprefix(f"{path}: ") for line in lines]


def test_schema_and_cross_check_problems_reported_together() -> None:
    text = (
        BASE.replace('["llama-3-8b"]', '["llama3-8b", "Bad/Name", "llama-3-8b"]')
        + 'kv_heads = ["native", 3]\n'
        + "[options]\nmemory_reserve = 1.5\n"
        + '[outputs]\nformats = ["jpg"]\n'
        + "[dtypes.q]\nbits = 0\n"
    )
    lines = _lines(text)
    assert lines[0] == (
        "axes.model[1]: 'Bad/Name' is not a valid name: a name starts with a-z or 0-9, holds "
        "only a-z, 0-9, '.', '_', '-', is at most 100 characters long and never contains "
        "'.tmp-' or '.old-'"
    )
    joined = "\n".join(lines)
    assert "options.memory_reserve: Input should be less than 1 (got 1.5)" in joined
    assert "outputs.formats[0]: must be one of 'html', 'png', 'svg' or 'pdf' (got 'jpg')" in joined
    assert "dtypes.q.bits: Input should be greater than or equal to 1 (got 0)" in joined
    # found only once the schema's view of the rest of the file is cross-checked
    assert "axes.model[0]: unknown model 'llama3-8b'; did you mean 'llama-3-8b'" in joined
    assert "axes.kv_heads[1]: 3 does not divide the 32 query heads" in joined
    assert len(lines) == 6


def test_a_broken_custom_table_is_not_also_an_unknown_name() -> None:
    text = BASE.replace('["llama-3-8b"]', '["mine"]') + "[models.mine]\nparams = true\n"
    assert _lines(text) == ["models.mine.params: must be a number, not bool (got True)"]


def test_a_broken_required_key_reports_the_schema_problems() -> None:
    assert _lines('[sweep]\nname = "t"\naxes = 3\n') == [
        "sweep.axes: unknown key; allowed: name, title",
        "axes: required key is missing",
    ]
    text = (
        '[sweep]\nname = "t"\n[axes]\nmodel = ["x"]\nhardware = 5\n[options]\nmemory_reserve = 2\n'
    )
    # without a hardware axis the names cannot be cross-checked: the schema's problems alone
    assert _lines(text) == [
        "axes.hardware: must be a list, not int (got 5)",
        "options.memory_reserve: Input should be less than 1 (got 2)",
    ]


def test_toml_error_shows_the_line_and_a_caret() -> None:
    text = BASE + "batch = [1, 2,, 4]\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, "s.toml")
    first, line, caret = str(info.value).splitlines()
    assert first.startswith("s.toml:7:15: not valid TOML: ")
    assert line == "    batch = [1, 2,, 4]"
    assert caret == "    " + " " * 14 + "^"


def test_toml_error_at_the_end_of_the_document() -> None:
    with pytest.raises(ConfigError, match=r"^s\.toml:2:8: not valid TOML: Invalid value"):
        parse_config("[sweep]\nname = ", "s.toml")


def test_deeply_nested_toml_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"^s\.toml: line 1: arrays and tables nested too deeply"):
        parse_config("a = " + "[" * 100_000, "s.toml")


@pytest.mark.parametrize(
    ("axis", "names", "pattern"),
    [
        (
            "hardware",
            ["h100-sxm", "nvidia-h100-sxm5-80gb"],
            r"axes\.hardware\[1\]: duplicate value 'nvidia-h100-sxm5-80gb' \(the same as 'h100-sxm'\), first at axes\.hardware\[0\]",
        ),
        (
            "model",
            ["mistral-7b-v0.1", "mistral-7b"],
            r"axes\.model\[1\]: duplicate value 'mistral-7b' \(the same as 'mistral-7b'\), first at axes\.model\[0\]",
        ),
        (
            "model",
            ["llama-3-8b", "llama-3-8b"],
            r"axes\.model\[1\]: duplicate value 'llama-3-8b', first at axes\.model\[0\]; give each once",
        ),
        (
            "kv_dtype",
            ["fp8", "bf16", "fp8"],
            r"axes\.kv_dtype\[2\]: duplicate value 'fp8', first at axes\.kv_dtype\[0\]",
        ),
    ],
)
def test_an_id_and_its_alias_are_duplicates(axis: str, names: list[str], pattern: str) -> None:
    text = BASE.replace(f"{axis} = ", f"old_{axis} = ") if axis in ("model", "hardware") else BASE
    text = text.replace("[axes]", f"[axes]\n{axis} = {json.dumps(names)}")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("old_"))
    with pytest.raises(ConfigError, match=pattern):
        parse_config(text)


def test_many_problems_are_counted_not_all_listed() -> None:
    names = [f"nope-{i}" for i in range(MAX_PROBLEMS + 30)]
    lines = _lines(BASE.replace('["h100-sxm"]', json.dumps(names)))
    assert len(lines) == MAX_PROBLEMS + 1
    assert lines[-1] == "... and 30 more problems"


def test_a_huge_value_is_shortened_in_the_message() -> None:
    lines = _lines(BASE + f'batch = ["{"x" * 10_000}"]\n')
    assert len(lines) == 1
    assert len(lines[0]) < 200


# --- files read bounded -------------------------------------------------------------------------


def test_config_file_must_be_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^/dev/zero: not a regular file; the config must be"):
        load_config("/dev/zero")
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"pipe\.toml: not a regular file; the config must be"):
        load_config(fifo)
    with pytest.raises(ConfigError, match=r"a folder; the config must be a regular file"):
        load_config(tmp_path)


def _model_config(tmp_path: Path, reference: str) -> Path:
    path = tmp_path / "s.toml"
    text = (
        BASE.replace('["llama-3-8b"]', '["m"]') + f"[models.m]\nconfig = {json.dumps(reference)}\n"
    )
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (
            None,
            r"models\.m\.config: '/dev/zero': /dev/zero: not a regular file; the config\.json must be",
        ),
        (
            '{"a": ' * 100_000,
            r"models\.m\.config: 'c\.json': .*c\.json: field 'a' nests deeper than a config\.json",
        ),
        (
            '{"model_type": "llama", "hidden_size": 1' + "0" * 5000 + "}",
            r"models\.m\.config: 'c\.json': .*c\.json: field 'hidden_size' = 1000.* \(5001 digits\)",
        ),
        (
            "[1, 2]",
            r"models\.m\.config: 'c\.json': .*c\.json: a config\.json must hold a JSON object",
        ),
    ],
)
def test_config_json_references_are_read_bounded(
    tmp_path: Path, content: str | None, pattern: str
) -> None:
    if content is None:
        path = _model_config(tmp_path, "/dev/zero")
    else:
        (tmp_path / "c.json").write_text(content, encoding="utf-8")
        path = _model_config(tmp_path, "c.json")
    with pytest.raises(ConfigError, match=pattern) as info:
        load_config(path)
    assert str(info.value).startswith(str(path))


def test_imported_shapes_meet_the_table_bounds(tmp_path: Path) -> None:
    fixture = Path(__file__).parent / "data" / "hf" / "falcon-7b" / "config.json"
    data = json.loads(fixture.read_text("utf-8"))
    data["n_layer"] = data["num_hidden_layers"] = 5000
    (tmp_path / "c.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        ConfigError,
        match=r"models\.m\.config: 'c\.json': .*c\.json: field 'num_hidden_layers' = 5000 is not "
        r"an integer from 1 to 1,024 \(sweeps' limit\)",
    ):
        load_config(_model_config(tmp_path, "c.json"))


def test_kv_heads_checked_once_per_head_count() -> None:
    tables = "".join(
        f"[models.m{i}]\nparams = 1e9\nlayers = 2\nheads = 64\nkv_heads = 8\nhead_dim = 64\n"
        for i in range(4)
    )
    models = json.dumps(["llama-3-8b", "m0", "m1", "m2", "m3"])
    text = BASE.replace('["llama-3-8b"]', models) + 'kv_heads = ["native", 3]\n' + tables
    assert _lines(text) == [
        "axes.kv_heads[1]: 3 does not divide the 32 query heads of model 'llama-3-8b'; "
        "allowed: 'native', [1, 2, 4, 8, 16, 32]",
        "axes.kv_heads[1]: 3 does not divide the 64 query heads of models 'm0', 'm1' and 2 more; "
        "allowed: 'native', [1, 2, 4, 8, 16, 32, 64]",
    ]


def test_a_key_that_is_not_bare_is_quoted_as_toml_writes_it() -> None:
    text = BASE + '[models."Bad Name"]\nparams = 1e9\n[models."llama-3.1-x"]\nparams = true\n'
    assert _lines(text) == [
        "models.\"Bad Name\": 'Bad Name' is not a valid name: a name starts with a-z or 0-9, "
        "holds only a-z, 0-9, '.', '_', '-', is at most 100 characters long and never "
        "contains '.tmp-' or '.old-'",
        'models."llama-3.1-x".params: must be a number, not bool (got True)',
    ]
