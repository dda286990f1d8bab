"""``sweeps.catalog.hf.read`` and ``fields``: every hostile ``config.json`` is an
``ImportModelError`` naming the file (and the field where one is at fault), never a traceback.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from sweeps.catalog.hf import load_model, read_config
from sweeps.catalog.hf.fields import MAX_INTEGER, Fields, Oversized, parse_int
from sweeps.catalog.hf.read import _nesting_key
from sweeps.errors import ImportModelError

HF = Path(__file__).resolve().parent / "data" / "hf"
LLAMA = json.loads((HF / "llama-3-8b" / "config.json").read_text())


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("literal", "shown"),
    [
        ("1" + "0" * 400, r"100000000000\.\.\. \(401 digits\)"),  # 10**400
        ("1" + "0" * 5000, r"\(5001 digits\)"),  # past Python's int-string limit
        ("-" + "9" * 30, r"\(30 digits\)"),
        ("1e400", "inf"),  # a float literal too large: inf
        ("NaN", "nan"),
        (str(MAX_INTEGER + 1), str(MAX_INTEGER + 1)),
    ],
)
def test_numbers_no_shape_can_hold_name_file_and_field(
    tmp_path: Path, literal: str, shown: str
) -> None:
    text = json.dumps(LLAMA).replace('"num_hidden_layers": 32', f'"num_hidden_layers": {literal}')
    path = _write(tmp_path, text)
    with pytest.raises(ImportModelError) as info:
        load_model(path)
    message = str(info.value)
    assert message.startswith(f"{path}: field 'num_hidden_layers' = ")
    assert "is not an integer from 1 to 1,024 (sweeps' limit)" in message
    assert re.search(shown, message), message


def test_a_huge_integer_in_a_field_not_read_is_harmless(tmp_path: Path) -> None:
    path = _write(tmp_path, json.dumps(dict(LLAMA, bos_token_id=10**30)))
    assert load_model(path).params == 8_030_261_248
    assert isinstance(read_config(path)["bos_token_id"], Oversized)


def test_parse_int_keeps_only_shape_sized_integers() -> None:
    assert parse_int("128256") == 128256
    assert parse_int("-" + "9" * 20) == -(10**20 - 1)  # 20 digits: still an int
    assert parse_int("1" + "0" * 20) == Oversized("1" + "0" * 20)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            json.dumps(LLAMA)[:-1] + ', "rope_scaling": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "field 'rope_scaling' nests deeper than a config.json can",
        ),
        ("[" * 100_000 + "]" * 100_000, "the JSON nests deeper than a config.json can"),
    ],
)
def test_deep_nesting_names_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ImportModelError, match=needle) as info:
        load_model(path)
    assert str(info.value).startswith(f"{path}: ")


def test_nesting_key_skips_brackets_inside_strings() -> None:
    text = '{"a": "[[[{", "b": {"c": [[1]]}, "d": [2]}'
    assert _nesting_key(text) == "b"
    assert _nesting_key('{"x\\"[": [[[]]]}') == 'x\\"['
    assert _nesting_key("[[1]]") is None


def test_files_that_are_not_small_regular_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ImportModelError, match=r"fifo: not a regular file; the config.json"):
        load_model(fifo)  # returns at once: a FIFO is never opened for a blocking read
    with pytest.raises(ImportModelError, match=r"^/dev/zero: not a regular file"):
        load_model("/dev/zero")
    with pytest.raises(ImportModelError, match=r"config\.json: no such config\.json"):
        load_model(tmp_path)  # a model folder is read for its config.json
    (tmp_path / "nested" / "config.json").mkdir(parents=True)
    with pytest.raises(ImportModelError, match=r"a folder; the config\.json must be a regular"):
        load_model(tmp_path / "nested")
    big = _write(tmp_path, " " * (4 * 2**20 + 1))
    with pytest.raises(ImportModelError, match="larger than 4 MiB"):
        load_model(big)
    with pytest.raises(ImportModelError, match=r"no such config\.json"):
        load_model(tmp_path / "none.json")


def _fields(data: dict[str, Any], defaults: dict[str, Any] | None = None) -> Fields:
    return Fields(data, "cfg.json", "llama", defaults)


def test_fields_value_aliases_and_defaults() -> None:
    f = _fields({"n_embed": 64, "num_key_value_heads": 2}, {"multi_query": True})
    assert f.value("hidden_size") == 64  # old Falcon spelling
    assert f.value("num_kv_heads") == 2  # the second alias
    assert f.value("multi_query") is True  # the family default
    assert f.has("multi_query")
    assert not f.has("vocab_size")
    assert f.opt_int("vocab_size") is None
    assert f.integer("vocab_size", 7) == 7
    with pytest.raises(ImportModelError, match="'vocab_size' is missing or null; it is needed"):
        f.integer("vocab_size", why="x")


@pytest.mark.parametrize(
    ("value", "call", "needle"),
    [
        (True, "integer", "= True is not an integer"),
        (0, "integer", "= 0 is not an integer from 1"),
        (2.0, "integer", "= 2.0 is not an integer"),
        ("yes", "flag", "= 'yes' is not true or false"),
        ([1, "2"], "indices", "= [1, '2'] is not a list of layer indices"),
        ([True], "indices", "= [True] is not a list of layer indices"),
    ],
)
def test_fields_reject_wrong_types(value: object, call: str, needle: str) -> None:
    f = _fields({"k": value})
    read = (lambda: f.flag("k", False)) if call == "flag" else getattr(f, call)
    with pytest.raises(ImportModelError, match=re.escape(f"cfg.json: field 'k' {needle}")):
        read() if call == "flag" else read("k")
