"""Config schema: strict types, the second-round keys, and the JSON Schema for editors."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sweeps.catalog import COMPUTE_DTYPES, load_catalog
from sweeps.config import parse_config, schema
from sweeps.errors import ConfigError

from .conftest import BASE_CONFIG as BASE
from .conftest import CONFIGS

CUSTOM_MODEL = """
[models.m]
params = 8e9
layers = 32
heads = 32
kv_heads = 8
head_dim = 128
"""

CUSTOM_HW = """
[hardware.g]
peak_flops = { bf16 = 1e15 }
bandwidth = 3e12
memory = 80e9
"""


def _error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "s.toml")
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            "[options]\nattention_flops = 1",
            r"options\.attention_flops: must be true or false, not int \(got 1\)",
        ),
        (
            "[options]\nbandwidth_efficiency = true",
            r"options\.bandwidth_efficiency: must be a number, not bool \(got True\)",
        ),
        (
            '[options]\nmemory_reserve = "0.1"',
            r"options\.memory_reserve: must be a number, not str",
        ),
        (
            "[options]\nmax_chart_cells = 10.0",
            r"options\.max_chart_cells: must be an integer, not float",
        ),
        (
            "[options]\nceiling_fraction = nan",
            r"options\.ceiling_fraction: .*finite number \(got nan\)",
        ),
        ("[outputs]\nduckdb = 1", r"outputs\.duckdb: must be true or false, not int"),
        ("batch = [true]", r"axes\.batch\[0\]: must be an integer, not bool"),
        ("context = [512.0]", r"axes\.context\[0\]: must be an integer, not float"),
        ("kv_heads = [true]", r"axes\.kv_heads\[0\]: must be an integer, not bool"),
    ],
)
def test_no_bool_for_a_number_no_number_for_a_bool(text: str, pattern: str) -> None:
    message = _error(BASE + text + "\n")
    assert message.startswith("s.toml: ")
    assert re.search(pattern, message), message


@pytest.mark.parametrize(
    ("field", "value", "pattern"),
    [
        ("params", "true", r"models\.m\.params: must be a number, not bool \(got True\)"),
        ("params", '"8e9"', r"models\.m\.params: must be a number, not str \(got '8e9'\)"),
        ("layers", "32.0", r"models\.m\.layers: must be an integer, not float"),
        ("tie_word_embeddings", "1", r"models\.m\.tie_word_embeddings: must be true or false"),
        ("vocab_size", "-1", r"models\.m\.vocab_size: .*greater than or equal to 0 \(got -1\)"),
        ("vocab_size", "true", r"models\.m\.vocab_size: must be an integer, not bool"),
    ],
)
def test_model_table_types_are_strict(field: str, value: str, pattern: str) -> None:
    lines = [line for line in CUSTOM_MODEL.splitlines() if not line.startswith(f"{field} =")]
    text = BASE.replace('["llama-3-8b"]', '["m"]') + "\n".join(lines) + f"\n{field} = {value}\n"
    assert re.search(pattern, _error(text))


def test_vocabulary_fields_reach_the_record() -> None:
    text = (
        BASE.replace('["llama-3-8b"]', '["m"]')
        + CUSTOM_MODEL
        + ("vocab_size = 128256\ntie_word_embeddings = true\n")
    )
    model = parse_config(text).models[0]
    assert (model.vocab_size, model.tie_word_embeddings) == (128256, True)
    plain = parse_config(BASE.replace('["llama-3-8b"]', '["m"]') + CUSTOM_MODEL).models[0]
    assert (plain.vocab_size, plain.tie_word_embeddings) == (0, False)


@pytest.mark.parametrize(
    ("table", "pattern"),
    [
        (
            "bits = 4\ngroup_size = 0\nscale_bytes = 2",
            r"dtypes\.q: scale_bytes = 2\.0 needs a group_size of 1 or more \(got 0\)",
        ),
        (
            "bits = 4\ngroup_size = 32\nscale_bytes = inf",
            r"dtypes\.q\.scale_bytes: .*finite number \(got inf\)",
        ),
        ("bits = true", r"dtypes\.q\.bits: must be a number, not bool"),
        (
            'bits = 4\ncompute = "fp16"',
            r"dtypes\.q\.compute: must be one of 'bf16', 'fp8', 'int8', 'fp4' or 'fp32'",
        ),
    ],
)
def test_dtype_table_rules(table: str, pattern: str) -> None:
    text = BASE + "[dtypes.q]\n" + table + "\n"
    assert re.search(pattern, _error(text))


def test_price_per_hour() -> None:
    text = BASE.replace('["h100-sxm"]', '["g"]') + CUSTOM_HW
    assert parse_config(text).hardware[0].price_per_hour is None
    assert parse_config(text + "price_per_hour = 3.10\n").hardware[0].price_per_hour == 3.10
    for bad, pattern in [
        ("0", r"hardware\.g\.price_per_hour: Input should be greater than 0 \(got 0\)"),
        ("inf", r"hardware\.g\.price_per_hour: .*finite number \(got inf\)"),
        ('"3.10"', r"hardware\.g\.price_per_hour: must be a number, not str"),
    ]:
        assert re.search(pattern, _error(text + f"price_per_hour = {bad}\n"))


def test_outputs_layout_duckdb_and_grid() -> None:
    sweep = parse_config(BASE)
    assert (sweep.layout, sweep.duckdb, sweep.grid_format) == ("auto", False, "zarr")
    text = BASE + '[outputs]\nlayout = "partitioned"\nduckdb = true\ngrid = "zarr"\n'
    sweep = parse_config(text)
    assert (sweep.layout, sweep.duckdb, sweep.grid_format) == ("partitioned", True, "zarr")
    message = _error(BASE + '[outputs]\nlayout = "parts"\n')
    assert (
        "outputs.layout: must be one of 'auto', 'single' or 'partitioned' (got 'parts')" in message
    )
    message = _error(BASE + '[outputs]\ngrid = "hdf5"\n')
    assert "outputs.grid: must be one of 'netcdf', 'zarr' or 'none' (got 'hdf5')" in message


def test_compute_dtype_auto() -> None:
    catalog = load_catalog()
    sweep = parse_config(
        BASE.replace('["h100-sxm"]', '["h100-sxm", "a100-80gb"]')
        + 'weight_dtype = ["fp8", "int4", "bf16"]\n[options]\ncompute_dtype = "auto"\n'
    )
    fp8, int4, bf16 = sweep.weight_dtype
    h100, a100 = sweep.hardware
    assert sweep.options.compute_dtype == "auto"
    assert sweep.compute_dtype_for(fp8, h100) == "fp8"
    assert sweep.compute_dtype_for(fp8, a100) == "bf16"  # A100 has no fp8 peak
    assert sweep.compute_dtype_for(int4, h100) == catalog.lookup_dtype("int4").compute
    assert sweep.compute_dtype_for(bf16, a100) == "bf16"
    explicit = parse_config(BASE + '[options]\ncompute_dtype = "fp8"\n')
    assert explicit.compute_dtype_for(bf16, h100) == "fp8"
    message = _error(BASE + '[options]\ncompute_dtype = "fp9"\n')
    assert message == (
        "s.toml: options.compute_dtype: must be one of 'auto', 'bf16', 'fp8', 'int8', 'fp4' or "
        "'fp32' (got 'fp9'); did you mean 'fp8' or 'fp4'?"
    )


SERVING = """
[serving]
prompt_tokens = [512, 2048]
output_tokens = { start = 128, stop = 512, geometric = true }
arrival_rate = [1.0, 10]
ttft_slo_s = 2.0
tpot_slo_s = 0.05
chunk_tokens = 2048
kv_link_bandwidth = 50e9
"""


def test_serving_table() -> None:
    assert parse_config(BASE).studies.get("serving") is None
    assert parse_config(BASE).prompt_tokens == ()
    sweep = parse_config(BASE + SERVING)
    assert sweep.prompt_tokens == (512, 2048)
    assert sweep.output_tokens == (128, 256, 512)
    assert sweep.arrival_rate == (1.0, 10.0)
    assert sweep.studies.get("serving") is not None
    serving = sweep.studies["serving"]
    assert (serving.ttft_slo_s, serving.tpot_slo_s) == (2.0, 0.05)
    assert (serving.chunk_tokens, serving.kv_link_bandwidth) == (2048, 50e9)
    defaults = parse_config(BASE + "[serving]\n")
    assert defaults.studies.get("serving") is not None
    assert defaults.studies.get("serving").kv_link_bandwidth == 50e9
    assert defaults.studies.get("serving").chunk_tokens == 2048
    assert defaults.prompt_tokens == (512, 2048)


def test_serving_schedulers_key() -> None:
    """Every mode by default; a chosen few (the first round's names read as this round's),
    bound and static always there; a chunked one needs a budget."""
    from sweeps.axes import AXIS
    from sweeps.schedulers import SCHEDULERS

    every = parse_config(BASE + "[serving]\n")
    assert every.studies.get("serving") is not None
    assert every.studies.get("serving").schedulers == list(SCHEDULERS)
    assert AXIS["mode"].labels(every) == ["bound", "static", *SCHEDULERS]
    old = parse_config(BASE + '[serving]\nschedulers = ["colocated", "chunked", "colocated"]\n')
    assert old.studies.get("serving") is not None
    assert old.studies.get("serving").schedulers == ["serial-prefill", "chunked-paced"]
    assert AXIS["mode"].labels(old) == ["bound", "static", "serial-prefill", "chunked-paced"]
    off = parse_config(BASE + "[serving]\nchunk_tokens = 0\n")
    assert AXIS["mode"].labels(off) == ["bound", "static", "serial-prefill", "batched-prefill"]
    with pytest.raises(
        ConfigError,
        match=r"serving\.schedulers: \['chunked-greedy'\] need a token budget, and chunk_tokens "
        r"is 0 \(off\); allowed without one: \['serial-prefill', 'batched-prefill'\]",
    ):
        parse_config(BASE + '[serving]\nchunk_tokens = 0\nschedulers = ["chunked-greedy"]\n')
    with pytest.raises(ConfigError, match=r"serving\.schedulers\[0\]: .*'serial-prefill'"):
        parse_config(BASE + '[serving]\nschedulers = ["fifo"]\n')


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (
            ("arrival_rate = [1.0, 10]", "arrival_rate = [-1.0]"),
            r"serving\.arrival_rate\[0\]: Input should be greater than 0 \(got -1\.0\)",
        ),
        (
            ("arrival_rate = [1.0, 10]", "arrival_rate = [inf]"),
            r"serving\.arrival_rate\[0\]: .*finite number",
        ),
        (
            ("arrival_rate = [1.0, 10]", "arrival_rate = []"),
            r"serving\.arrival_rate: the axis is empty",
        ),
        (
            ("output_tokens = {", "output_tokens = [0]\nx = {"),
            r"serving\.output_tokens\[0\]: Input should be greater than 0 \(got 0\)",
        ),
        (
            ("ttft_slo_s = 2.0", "ttft_slo_s = 0"),
            r"serving\.ttft_slo_s: Input should be greater than 0 \(got 0\)",
        ),
        (
            ("tpot_slo_s = 0.05", "tpot_slo_s = true"),
            r"serving\.tpot_slo_s: must be a number, not bool",
        ),
        (
            ("chunk_tokens = 2048", "chunk_tokens = 256"),
            r"serving\.chunk_tokens: 256 is not larger than the largest batch, 512.*allowed: 0 \(off\) or more than 512",
        ),
        (
            ("chunk_tokens = 2048", "chunk_tokens = -1"),
            r"serving\.chunk_tokens: .*greater than or equal to 0",
        ),
        (
            ("kv_link_bandwidth = 50e9", "kv_link_bandwidth = 0.0"),
            r"serving\.kv_link_bandwidth: Input should be greater than 0",
        ),
        (
            ("chunk_tokens = 2048", "chunk_token = 2048"),
            r"serving\.chunk_token: unknown key; did you mean 'chunk_tokens'",
        ),
        (
            ("prompt_tokens = [512, 2048]", "prompt_tokens = [512, 512]"),
            r"serving\.prompt_tokens: duplicate values \[512\]",
        ),
    ],
)
def test_serving_mistakes_name_key_value_and_allowed(edit: tuple[str, str], pattern: str) -> None:
    message = _error(BASE + SERVING.replace(*edit))
    assert re.search(pattern, message), message
    assert message.startswith("s.toml: ")


def test_chunk_budget_off_or_above_the_batch() -> None:
    assert parse_config(BASE + SERVING.replace("chunk_tokens = 2048", "chunk_tokens = 0"))
    big = BASE + "batch = [1, 4096]\n" + "[serving]\n"
    assert (
        "serving.chunk_tokens: 2048 (the default) is not larger than the largest batch, 4096"
        in (_error(big))
    )


# --- JSON Schema ------------------------------------------------------------------------------


def _properties(node: Any, defs: dict[str, Any], path: str = "") -> list[tuple[str, Any]]:
    """Every (key path, property schema) of the JSON Schema, through $refs and unions."""
    if isinstance(node, dict) and "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    out: list[tuple[str, Any]] = []
    if not isinstance(node, dict):
        return out
    for key, prop in node.get("properties", {}).items():
        out.append((f"{path}.{key}".lstrip("."), prop))
        out += _properties(prop, defs, f"{path}.{key}")
    for branch in node.get("anyOf", []) + node.get("oneOf", []):
        out += _properties(branch, defs, path)
    for table in node.get("patternProperties", {}).values():
        out += _properties(table, defs, f"{path}.*")
    return out


def test_json_schema_describes_every_key() -> None:
    document = schema.ConfigFile.model_json_schema()
    json.dumps(document)  # serializable
    props = _properties(document, document["$defs"])
    keys = {key for key, _ in props}
    assert {"sweep.name", "axes.batch", "options.compute_dtype", "serving.chunk_tokens"} <= keys
    assert {"hardware.*.price_per_hour", "models.*.vocab_size", "outputs.layout"} <= keys
    undocumented = sorted({key for key, prop in props if not prop.get("description")})
    assert undocumented == []
    layout = dict(props)["outputs.layout"]
    assert layout["enum"] == ["auto", "single", "partitioned"]


def test_compute_dtype_lists_agree_with_the_catalog() -> None:
    assert tuple(schema.PeakFlops.model_fields) == COMPUTE_DTYPES
    assert schema.ComputeDType.__args__ == COMPUTE_DTYPES


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_configs_validate_against_the_json_schema(path: Path) -> None:
    document = schema.ConfigFile.model_json_schema()
    jsonschema.validate(tomllib.loads(path.read_text("utf-8")), document)


@pytest.mark.parametrize(
    "text",
    [
        BASE + "bacth = [1]\n",
        BASE + "batch = [0, 2, -4]\n",
        BASE + "batch = { start = 1, stop = 10, stp = 2 }\n",
        BASE.replace('name = "t"', 'name = ".."'),
        BASE + '[options]\nattention_flops = "yes"\n',
        BASE + "[serving]\narrival_rate = []\n",
    ],
)
def test_json_schema_rejects_bad_configs(text: str) -> None:
    document = schema.ConfigFile.model_json_schema()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(tomllib.loads(text), document)
