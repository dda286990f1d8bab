"""Limits (``sweeps.limits``): names that cannot escape, caps on integers, axes and grid size."""

from __future__ import annotations

import re

import pytest

from sweeps import limits
from sweeps.config import SWEEP_NAME_PATTERN, check_name, parse_config
from sweeps.errors import ConfigError
from sweeps.grid import build_grid
from sweeps.pipeline import plan

from .conftest import BASE_CONFIG as BASE


@pytest.mark.parametrize(
    "name", ["a", "0", "llama3-8b-h100", "a.b_c-d", "x" * 100, "9" + "z" * 99, "good.tmp"]
)
def test_valid_names(name: str) -> None:
    check_name(name)
    assert re.match(SWEEP_NAME_PATTERN, name)
    assert parse_config(BASE.replace('name = "t"', f'name = "{name}"')).name == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (".", "starts with a-z or 0-9"),
        ("..", "starts with a-z or 0-9"),
        (".good.tmp-123-xx", "starts with a-z or 0-9"),
        ("-rf", "starts with a-z or 0-9"),
        ("_x", "starts with a-z or 0-9"),
        ("", "starts with a-z or 0-9"),
        ("x" * 101, "101 characters is too long"),
        ("good.tmp-123-xx", r"'\.tmp-' marks the package's staging and backup folders"),
        ("good.old-1-ab", r"'\.old-' marks the package's staging and backup folders"),
        ("runs/t", "holds only a-z"),
        ("Upper", "holds only a-z"),
        ("a b", "holds only a-z"),
    ],
)
def test_invalid_names(name: str, why: str) -> None:
    with pytest.raises(ConfigError, match=rf"^sweep\.name: .* is not a valid name: .*{why}"):
        check_name(name)
    text = BASE.replace('name = "t"', f'name = "{name}"')
    with pytest.raises(
        ConfigError, match=rf"^x\.toml: sweep\.name: .* is not a valid name: .*{why}"
    ):
        parse_config(text, "x.toml")


def test_check_name_names_the_key_it_is_given() -> None:
    with pytest.raises(ConfigError, match=r"^run\.name: '\.\.' is not a valid name"):
        check_name("..", key="run.name")


def test_a_long_name_is_shortened_in_the_message() -> None:
    with pytest.raises(ConfigError) as info:
        check_name("y" * 5000)
    assert len(str(info.value)) < 400


def test_a_range_of_1e5_values_validates() -> None:
    sweep = parse_config(BASE + "context = { start = 1, stop = 100000 }\n")
    assert len(sweep.context) == 100_000
    assert sweep.context[0] == 1
    assert sweep.context[-1] == 100_000


def test_a_list_of_1e5_values_validates_and_its_duplicates_are_found() -> None:
    values = [*range(1, 100_001), 7, 7, 99]
    text = BASE + f"context = {values}\n"
    with pytest.raises(ConfigError, match=r"axes\.context: duplicate values \[7, 99\]; give each"):
        parse_config(text)


def test_range_cap_is_checked_before_expanding() -> None:
    text = BASE + "context = { start = 1, stop = 16000000 }\n"
    with pytest.raises(
        ConfigError,
        match=r"axes\.context: the range holds 16,000,000 values; an axis holds at most "
        r"1,000,000 \(limits\.MAX_AXIS_VALUES\)",
    ):
        parse_config(text)


def test_a_range_past_the_token_cap_is_refused_without_memory_error() -> None:
    text = BASE + "context = { start = 1, stop = 1000000000000 }\n"
    with pytest.raises(
        ConfigError,
        match=r"axes\.context\.stop: .*less than or equal to 16777216 \(got 1000000000000\)",
    ):
        parse_config(text)


def test_grid_points_cap_names_every_axis_length() -> None:
    """The plan (``sweeps validate``, a run) and ``build_grid`` refuse it before any work."""
    hardware = ", ".join(f'"{h}"' for h in ["h100-sxm", "h200", "a100-80gb", "b200"])
    text = (
        BASE.replace('["h100-sxm"]', f"[{hardware}]")
        + "batch = { start = 1, stop = 200000 }\n"
        + "context = { start = 1, stop = 1000000 }\n"
        + 'kv_heads = ["native", 1, 2, 4, 8]\n'
    )
    with pytest.raises(
        ConfigError,
        match=r"axes: the decode grid has 4,000,000,000,000 points \(model 1 x hardware 4 x tp 1 "
        r"x batch 200,000 x context 1,000,000 x kv_heads 5 .*\); a sweep holds at most "
        r"1,000,000,000,000 \(limits\.MAX_POINTS\)",
    ):
        plan(parse_config(text))
    with pytest.raises(ConfigError, match=r"axes: the decode grid has 4,000,000,000,000 points"):
        build_grid(parse_config(text))


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        (
            "context = [9223372036854775807]",
            r"axes\.context\[0\]: .*less than or equal to 16777216",
        ),
        ("batch = [300000]", r"axes\.batch\[0\]: .*less than or equal to 262144"),
        ("tp = [2048]", r"axes\.tp\[0\]: .*less than or equal to 1024"),
        ("tp = { start = 1, stop = 4096 }", r"axes\.tp\.stop: .*less than or equal to 1024"),
        ("kv_heads = [4096]", r"axes\.kv_heads\[0\]: .*less than or equal to 1024"),
        (f"context = [{10**400}]", r"axes\.context\[0\]"),
    ],
)
def test_integers_within_what_the_engine_holds(line: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        parse_config(BASE + line + "\n")


def test_caps_keep_the_int64_products_exact() -> None:
    product = limits.MAX_BATCH * limits.MAX_TOKENS * limits.MAX_COUNT * limits.MAX_COUNT
    assert product <= 2**62 < 2**63


def test_model_table_bounds() -> None:
    text = BASE.replace('["llama-3-8b"]', '["m"]') + (
        "[models.m]\nparams = 1e16\nlayers = 5000\nheads = 8\nkv_heads = 8\nhead_dim = 2000000\n"
    )
    with pytest.raises(ConfigError) as info:
        parse_config(text, "m.toml")
    text = str(info.value)
    assert (
        "models.m.params: Input should be less than or equal to 1000000000000000 (got 1e+16)"
        in text
    )
    assert "models.m.layers: Input should be less than or equal to 1024 (got 5000)" in text
    assert "models.m.head_dim: Input should be less than or equal to 1048576" in text


def test_a_list_axis_longer_than_the_cap_is_refused() -> None:
    from pydantic import ValidationError

    from sweeps.config.schema import Axes

    with pytest.raises(ValidationError, match=r"at most 1000000 items"):
        Axes.model_validate(
            {
                "model": ["m"],
                "hardware": ["g"],
                "context": list(range(1, limits.MAX_AXIS_VALUES + 2)),
            }
        )


def test_serving_and_pools_grids_are_capped_too() -> None:
    text = BASE + (
        "[serving]\nprompt_tokens = { start = 1, stop = 1000000 }\n"
        "output_tokens = { start = 1, stop = 1000000 }\n"
    )
    with pytest.raises(ConfigError) as info:
        plan(parse_config(text, "s.toml"))
    lines = str(info.value).splitlines()
    assert lines[0].startswith(
        "s.toml: serving: the serving grid has 60,000,000,000,000 points (model 1 x hardware 1 x tp 1 "
        "x batch 10 x kv_heads 1 x kv_dtype 1 x weight_dtype 1 x prompt_tokens 1,000,000 x "
        "output_tokens 1,000,000 x mode 6)"
    )
    assert lines[1].startswith("s.toml: serving: the pools grid has 10,000,000,000,000 points")
    assert len(lines) == 2
