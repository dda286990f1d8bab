"""``sweeps.run`` takes a dict of a config file's tables, validated exactly as the file is."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

import sweeps
from sweeps.errors import ConfigError
from sweeps.pipeline.mapping import sweep_from_mapping, to_toml

from .conftest import SEED_CONFIG


def test_a_dict_gives_the_grid_of_the_file() -> None:
    data = tomllib.loads(SEED_CONFIG.read_text(encoding="utf-8"))
    from_dict = sweeps.run(data)
    from_file = sweeps.run(SEED_CONFIG)
    assert from_dict.identical(from_file)


def test_the_toml_form_round_trips_every_kind_of_value() -> None:
    data = {
        "sweep": {"name": "x", "title": 'quotes " and \\ and é'},
        "axes": {
            "model": ["mine"],
            "hardware": ["h100-sxm"],
            "batch": {"start": 1, "stop": 64, "geometric": True},
            "context": [np.int64(512), 4096],
        },
        "options": {"memory_reserve": np.float64(0.25), "attention_flops": False},
        "models": {
            "mine": {"params": 8e9, "layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128}
        },
        "hardware": {"dev.1": {"peak_flops": {"bf16": 1e15}, "bandwidth": 3e12, "memory": 8e10}},
    }
    back = tomllib.loads(to_toml(data))
    assert back["sweep"]["title"] == 'quotes " and \\ and é'
    assert back["axes"]["context"] == [512, 4096]
    assert back["options"] == {"memory_reserve": 0.25, "attention_flops": False}
    assert back["hardware"]["dev.1"]["peak_flops"] == {"bf16": 1e15}
    assert back["models"] == data["models"]
    assert sweep_from_mapping(data).models[0].id == "mine"


def test_a_dict_is_checked_with_the_messages_of_a_file() -> None:
    data = {"sweep": {"name": "x"}, "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"]}}
    data["axes"]["batchs"] = [1]
    with pytest.raises(ConfigError, match=r"<dict>: axes\.batchs: "):
        sweeps.run(data)
    with pytest.raises(ConfigError, match=r"<dict>: axes\.batch\[1\]: None is a NoneType; allowed"):
        sweeps.run({"sweep": {"name": "x"}, "axes": {"batch": [1, None]}})
    with pytest.raises(ConfigError, match=r"<dict>: axes: \[1\] is not a table"):
        sweeps.run({"sweep": {"name": "x"}, "axes": [1]})


def test_a_config_of_another_type_is_a_config_error_naming_what_is_allowed() -> None:
    with pytest.raises(
        ConfigError,
        match="a config is a path, a Sweep or a dict of a config file's tables; got int",
    ):
        sweeps.run(42)  # type: ignore[arg-type]
