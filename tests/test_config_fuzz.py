"""Hostile configs: random TOML documents and random values for every key of the schema.

The only outcomes allowed are a ``Sweep`` or a ``ConfigError`` whose message starts with the
file name: never another exception.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from sweeps.config import Sweep, load_config, schema
from sweeps.errors import ConfigError
from sweeps.grid import DECODE_DIMS

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    """``value`` as a TOML value (inline tables and arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("-inf" if value < 0 else "inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"


def to_toml(document: dict[str, Any]) -> str:
    """A TOML document: every top-level entry as a table of inline values."""
    lines = []
    for table, body in document.items():
        if not isinstance(body, dict):
            lines.append(f"{_key(table)} = {_value(body)}")
            continue
        lines.append(f"[{_key(table)}]")
        lines += [f"{_key(k)} = {_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-3, 5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["native", "auto", "bf16", "fp8", "llama-3-8b", "h100-sxm", "zarr", ".."]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["start", "stop", "step", "geometric", "factor", "bf16", "x"]),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=8,
)


GOOD: dict[str, list[Any]] = {
    "model": [["llama-3-8b"], ["m"], ["m", "mistral-7b"]],
    "hardware": [["h100-sxm"], ["g"], ["g", "a100-80gb"]],
    "kv_dtype": [["fp8"], ["q"]],
    "weight_dtype": [["int4"], ["q", "fp8"]],
    "kv_heads": [["native", 8], [1, 2]],
    "batch": [[1, 2, 512], {"start": 1, "stop": 64, "geometric": True}],
    "context": [{"start": 1, "stop": 100000}, [8192]],
    "tp": [[1, 2, 4]],
    "compute_dtype": ["auto", "fp8"],
    "params": [8e9, 70e9],
    "layers": [32, 1],
    "heads": [32, 64],
    "head_dim": [128],
    "kv_lora_rank": [512],
    "peak_flops": [{"bf16": 1e15}, {"bf16": 1e15, "fp8": 2e15}],
    "bandwidth": [3e12],
    "memory": [8e10],
    "bits": [4, 3.5],
    "group_size": [32],
    "scale_bytes": [1],
    "chunk_tokens": [0, 4096],
    "arrival_rate": [[0.5, 100]],
}
"""Values that pass the schema, per key name: a drawn config often reaches the cross-checks."""


def _is_table(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _table(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Random values for a random subset of ``model``'s keys (sub-tables recursively)."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model.model_fields.items():
        annotation = info.annotation
        options = [VALUES]
        plausible = [*GOOD.get(name, [])]
        if isinstance(info.default, int | float | str | list) and info.default is not None:
            plausible.append(info.default)
        if plausible:  # values that pass, so that the cross-checks behind the schema run too
            options.append(st.sampled_from(plausible))
        tables = [a for a in (annotation, *get_args(annotation)) if _is_table(a)]
        if tables:  # a table, or an optional one (``ServingTable | None``)
            options.append(_table(tables[0]))
        elif get_origin(annotation) is dict:
            inner = get_args(annotation)[1]
            if _is_table(inner):
                names = st.sampled_from(["m", "g", "q", "llama-3-8b", "Bad Name"])
                options.append(st.dictionaries(names, _table(inner), max_size=2))
        fields[name] = st.one_of(*options)
    return st.fixed_dictionaries({}, optional=fields)


VALID = {
    "sweep": {"name": "t"},
    "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"], "batch": [1, 8]},
}


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A valid config with random keys replaced, a random document, or a mangled one."""
    kind = draw(st.sampled_from(["edited", "random", "mangled"]))
    if kind == "random":
        return to_toml(draw(_table(schema.ConfigFile)))
    document = {table: dict(body) for table, body in VALID.items()}
    edits = draw(_table(schema.ConfigFile))
    for table, body in edits.items():
        if isinstance(body, dict) and isinstance(document.get(table), dict):
            document[table].update(body)
        else:
            document[table] = body
    text = to_toml(document)
    if kind == "mangled":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=6)) + text[at:]
    return text


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents())
def test_a_config_is_a_sweep_or_a_config_error(folder: Path, text: str) -> None:
    path = folder / "fuzz.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        sweep = load_config(path)
    except ConfigError as error:
        message = str(error)
    else:
        assert isinstance(sweep, Sweep)
        assert sweep.points(DECODE_DIMS) >= 1
        return
    assert message.startswith(str(path))


# --- issue 24 item 7: the whole CLI path, random bytes, and the measurements reader ---------


def _cli(*args: str) -> int:
    """Exit code of ``sweeps ARGS``; fails on a traceback or any exception but SystemExit."""
    from click.testing import CliRunner

    from sweeps.cli.main import cli

    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    if result.exit_code:
        assert [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    return result.exit_code


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents())
def test_validate_answers_0_or_2_for_any_document(folder: Path, text: str) -> None:
    path = folder / "cli.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert _cli("validate", str(path)) in (0, 2)


@settings(max_examples=20, deadline=None)
@given(data=st.binary(max_size=300) | st.text(max_size=200).map(lambda t: t.encode()))
def test_validate_answers_0_or_2_for_any_bytes(folder: Path, data: bytes) -> None:
    path = folder / "bytes.toml"
    path.write_bytes(b"[sweep]\nname = 't'\n" + data if data[:1] == b"#" else data)
    assert _cli("validate", str(path)) in (0, 2)


HEADER = (
    "model,hardware,tp,weight_dtype,kv_dtype,compute_dtype,batch,prompt_tokens,"
    "output_tokens,metric,value,per,source"
)
CELLS = {
    "model": ["llama-3-8b", "LLAMA", "", "x" * 300],
    "hardware": ["h100-sxm", "h200", "nope"],
    "tp": ["1", "2", "0", "4096", "1e3", "-1", str(2**70)],
    "weight_dtype": ["bf16", "fp8", "q"],
    "kv_dtype": ["bf16", "fp8"],
    "compute_dtype": ["auto", "bf16", "fp9"],
    "batch": ["1", "64", "max", "0", "262145", "nan"],
    "prompt_tokens": ["512", "16777216", "0", "1.5"],
    "output_tokens": ["128", "16777216", "x"],
    "metric": ["itl_s", "ttft_s", "output_tokens_per_s", "request_latency_s", "speed"],
    "value": ["0.01", "1e300", "inf", "nan", "-1", "0", "1e-300"],
    "per": ["device", "replica", "node"],
    "source": ["paper", "", '"quoted, comma"', "\x1b]0;x\x07"],
}
ROWS = st.lists(
    st.fixed_dictionaries({column: st.sampled_from(cells) for column, cells in CELLS.items()}),
    min_size=0,
    max_size=4,
)


@settings(max_examples=30, deadline=None)
@given(rows=ROWS, noise=st.text(max_size=20), where=st.integers(0, 400))
def test_a_measurements_file_is_rows_or_a_measurements_error(rows, noise, where) -> None:
    from sweeps.calibrate.measurements import parse_measurements
    from sweeps.errors import MeasurementsError

    text = HEADER + "\n" + "".join(",".join(r.values()) + "\n" for r in rows)
    text = text[:where] + noise + text[where:]
    try:
        parsed = parse_measurements(text, "m.csv")
    except MeasurementsError as error:
        message = str(error)
    else:
        assert parsed
        return
    assert message.startswith("m.csv: ")


@settings(max_examples=15, deadline=None)
@given(data=st.binary(max_size=200), rows=ROWS)
def test_calibrate_answers_an_error_line_for_any_bytes(folder: Path, data: bytes, rows) -> None:
    path = folder / "m.csv"
    good = HEADER + "\n" + "".join(",".join(r.values()) + "\n" for r in rows[:1])
    path.write_bytes(data if data[:1] != b"m" else good.encode())
    assert _cli("calibrate", str(path), "--out", str(folder / "cal"), "--force") in (0, 1, 2)
