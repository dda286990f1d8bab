"""Config: the TOML schema, axis forms, custom tables, and one error per kind of mistake."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sweeps.config import load_config, parse_config
from sweeps.errors import ConfigError
from sweeps.grid import DECODE_DIMS

from .conftest import CONFIGS

BASE = """
[sweep]
name = "t"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
"""


def test_defaults_fill_missing_axes() -> None:
    sweep = parse_config(BASE)
    assert sweep.batch == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    assert sweep.context == (512, 2048, 8192, 32768)
    assert sweep.prompt == sweep.context  # prefill prompts default to the contexts
    assert sweep.kv_heads == ("native",)
    assert [d.name for d in sweep.kv_dtype] == ["bf16"]
    assert sweep.tp == (1,)
    assert sweep.options.attention_flops is True
    assert sweep.options.memory_reserve == 0.10
    assert sweep.options.ceiling_fraction == 0.90
    assert sweep.title == "t"


def test_range_forms() -> None:
    sweep = parse_config(
        BASE
        + """
batch = { start = 1, stop = 1024, geometric = true }
context = { start = 1024, stop = 4096, step = 1024 }
prompt = [128, 512]
"""
    )
    assert sweep.batch == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert sweep.context == (1024, 2048, 3072, 4096)
    assert sweep.prompt == (128, 512)


def test_custom_model_hardware_and_dtype_tables() -> None:
    sweep = parse_config("""
[sweep]
name = "custom"
[axes]
model = ["my-8b", "llama-3-8b"]
hardware = ["my-gpu"]
kv_dtype = ["int3"]
[models.my-8b]
params = 8.03e9
layers = 32
heads = 32
kv_heads = 8
head_dim = 128
[hardware.my-gpu]
peak_flops = { bf16 = 989.4e12, fp8 = 1978.9e12 }
bandwidth = 3.35e12
memory = 85.9e9
[dtypes.int3]
bits = 3
group_size = 64
scale_bytes = 2
""")
    mine = sweep.models[0]
    assert (mine.id, mine.attention, mine.active_params) == ("my-8b", "gqa", 8.03e9)
    assert sweep.hardware[0].peak_flops["fp8"] == 1978.9e12
    assert sweep.kv_dtype[0].bytes_per_element == pytest.approx(3 / 8 + 2 / 64)


def test_sha256_and_text_kept() -> None:
    sweep = load_config(CONFIGS / "seed-llama3-8b-h100.toml")
    assert len(sweep.sha256) == 64
    assert "[sweep]" in sweep.text


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        # unknown key, with the closest allowed key
        (("[axes]", "[axes]\nbatchs = [1]"), r"axes\.batchs: unknown key; did you mean 'batch'"),
        # unknown catalog id, with the closest id
        (
            ('["h100-sxm"]', '["h100"]'),
            r"axes\.hardware\[0\]: unknown hardware 'h100'; did you mean",
        ),
        (
            ('["llama-3-8b"]', '["llama3-8b"]'),
            r"axes\.model\[0\]: unknown model 'llama3-8b'; did you mean 'llama-3-8b'",
        ),
        # wrong type
        (
            ("[axes]", '[axes]\nbatch = "8"'),
            r"axes\.batch: must be a list of positive integers \(at most 262,144\) or a range table",
        ),
        (("[axes]", '[axes]\ncontext = [512, "2k"]'), r"axes\.context\[1\]: .*integer.*got '2k'"),
        # negative or zero size
        (
            ("[axes]", "[axes]\nbatch = [0, 1]"),
            r"axes\.batch\[0\]: Input should be greater than 0 \(got 0\)",
        ),
        (
            ("[axes]", "[axes]\ncontext = [-512]"),
            r"axes\.context\[0\]: .*greater than 0 \(got -512\)",
        ),
        # kv_heads that do not divide the model's heads
        (
            ("[axes]", '[axes]\nkv_heads = ["native", 3]'),
            r"axes\.kv_heads\[1\]: 3 does not divide the 32 query heads of model 'llama-3-8b'; allowed: 'native', \[1, 2, 4, 8, 16, 32\]",
        ),
        # an empty axis
        (("[axes]", "[axes]\nkv_dtype = []"), r"axes\.kv_dtype: the axis is empty"),
        # a name with a slash
        (('name = "t"', 'name = "runs/t"'), r"sweep\.name: 'runs/t' is not a valid name"),
        # unknown dtype, option out of range, unknown table
        (("[axes]", '[axes]\nkv_dtype = ["fp9"]'), r"axes\.kv_dtype\[0\]: unknown dtype 'fp9'"),
        (
            ("[axes]", "[options]\nmemory_reserve = 1.5\n[axes]"),
            r"options\.memory_reserve: .*less than 1 \(got 1\.5\)",
        ),
        (("[axes]", "[output]\n[axes]"), r"output: unknown key; did you mean 'outputs'"),
        (("[axes]", "[axes]\nbatch = [4, 4]"), r"axes\.batch: duplicate values \[4\]"),
        (
            ("[axes]", "[axes]\nbatch = { start = 8, stop = 2 }"),
            r"axes\.batch: .*stop \(2\) is below start \(8\)",
        ),
    ],
)
def test_each_mistake_names_file_key_and_value(
    write_config: Callable[[str], Path], edit: tuple[str, str], pattern: str
) -> None:
    path = write_config(BASE.replace(*edit, 1))
    with pytest.raises(ConfigError, match=pattern) as info:
        load_config(path)
    assert str(info.value).startswith(str(path))


def test_all_mistakes_reported_together() -> None:
    text = BASE.replace('["h100-sxm"]', '["h100"]').replace('["llama-3-8b"]', '["llama3-8b"]')
    with pytest.raises(ConfigError) as info:
        parse_config(text, "x.toml")
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert all(line.startswith("x.toml: axes.") for line in lines)


def test_compute_dtype_must_exist_on_every_device() -> None:
    text = (
        BASE.replace('["h100-sxm"]', '["h100-sxm", "tpu-v5e"]')
        + '[options]\ncompute_dtype = "fp8"\n'
    )
    with pytest.raises(
        ConfigError,
        match=r"options\.compute_dtype: 'fp8' has no peak on hardware 'tpu-v5e'; allowed there: \['bf16', 'int8'\]",
    ):
        parse_config(text)


def test_unreadable_and_invalid_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: no such config"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[sweep\nname = 1", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.toml:1:7: not valid TOML: Expected '\]'") as info:
        load_config(bad)
    assert str(info.value).splitlines()[1:] == ["    [sweep", "          ^"]


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_configs_are_valid(path: Path) -> None:
    assert load_config(path).points(DECODE_DIMS) > 0


def test_model_table_keys_are_the_catalog_table_fields() -> None:
    from sweeps.catalog import TABLE_FIELDS
    from sweeps.config.custom import MODEL_FIELDS
    from sweeps.config.schema import ModelTable

    assert set(ModelTable.model_fields) == {*MODEL_FIELDS, "config"}
    assert set(TABLE_FIELDS) <= set(MODEL_FIELDS)
