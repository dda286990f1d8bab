"""``sweeps.catalog.hf.toml``: the printed ``[models.<id>]`` table pastes into a sweep config
and validates, for every shipped config.json; its ``config =`` path resolves from the folder
the TOML is saved in.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from sweeps.catalog import TABLE_FIELDS
from sweeps.catalog.hf import load_model, model_to_toml
from sweeps.catalog.hf.toml import relative_path, toml_key, toml_string
from sweeps.config import load_config, parse_config

HF = Path(__file__).resolve().parent / "data" / "hf"
CONFIGS = sorted(HF.glob("*/config.json"))
SWEEP = '[sweep]\nname = "pasted"\n[axes]\nmodel = [{id}]\nhardware = ["h200"]\n'


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.parent.name)
def test_every_printed_table_pastes_and_validates(path: Path) -> None:
    imported = load_model(path)
    assert imported.id == path.parent.name  # the default id: the folder's name
    table = model_to_toml(imported, path)
    parsed = tomllib.loads(table)
    assert list(parsed) == ["models"]
    assert list(parsed["models"]) == [imported.id]  # one table, even with a dot in the id
    assert ("." in imported.id) == table.startswith(f'[models."{imported.id}"]')
    sweep = parse_config(SWEEP.format(id=toml_string(imported.id)) + table)
    model = sweep.models[0]
    assert model.id == imported.id
    for field in TABLE_FIELDS:
        assert getattr(model, field) == getattr(imported, field), field


def test_config_path_resolves_from_the_folder_the_toml_is_saved_in(tmp_path: Path) -> None:
    source = tmp_path / "checkpoints" / "mixtral" / "config.json"
    source.parent.mkdir(parents=True)
    source.write_text((HF / "mixtral-8x7b" / "config.json").read_text())
    folder = tmp_path / "studies" / "moe"
    folder.mkdir(parents=True)
    table = model_to_toml(load_model(source, "mix"), source, base=folder)
    line = re.search(r"^# or, instead of the fields below: (config = .*)$", table, re.M)
    assert line is not None
    assert line.group(1) == 'config = "../../checkpoints/mixtral/config.json"'
    # the short form, saved in that folder, reads the same model
    sweep = folder / "sweep.toml"
    sweep.write_text(SWEEP.format(id='"mix"') + "[models.mix]\n" + line.group(1) + "\n")
    model = load_config(sweep).models[0]
    assert (model.params, model.active_params) == (46_702_792_704, 12_879_925_248)


def test_config_path_defaults_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert relative_path(tmp_path / "hf" / "config.json") == "hf/config.json"
    assert relative_path("hf/config.json") == "hf/config.json"
    assert relative_path("hf/config.json", "out") == "../hf/config.json"
    model = load_model(HF / "llama-3-8b" / "config.json", "l")
    assert "config =" not in model_to_toml(model)  # no path given: no short form


def test_keys_are_quoted_only_where_toml_needs_it() -> None:
    assert toml_key("llama-3-8b") == "llama-3-8b"
    assert toml_key("qwen_3") == "qwen_3"
    assert toml_key("llama-3.1-8b") == '"llama-3.1-8b"'


@pytest.mark.parametrize("text", ['a "quoted" \\ path', "tab\there\nnew", "del\x7f nul\x00", "µ/ü"])
def test_strings_round_trip_through_tomllib(text: str) -> None:
    assert tomllib.loads(f"key = {toml_string(text)}")["key"] == text


def test_defaults_are_left_out_and_shapes_kept() -> None:
    model = load_model(HF / "llama-3-8b" / "config.json", "l")
    lines = model_to_toml(model).splitlines()
    keys = [line.split(" = ")[0] for line in lines[1:]]
    assert keys == [
        "params",
        "layers",
        "heads",
        "kv_heads",
        "head_dim",
        "hidden_size",
        "attention",
        "max_context",
        "source",
        "vocab_size",
    ]  # active_params = params, no experts, no MLA, no window: all at their defaults
    assert "params = 8030261248" in lines
    moe = model_to_toml(load_model(HF / "gpt-oss-20b" / "config.json", "g"))
    assert "active_params = 4187440704" in moe
    assert "experts = 32" in moe
    assert "local_layers = 12" in moe


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.parent.name)
def test_the_pasted_table_decodes_as_the_config_path_does(path: Path, tmp_path: Path) -> None:
    from sweeps.grid import build_grid

    imported = load_model(path)
    axes = '[axes]\nhardware = ["h200"]\nbatch = [1, 64]\ncontext = [4096]\nprompt = [1024]\n'
    key = toml_key(imported.id)
    pasted = parse_config(
        f'[sweep]\nname = "a"\n{axes}model = [{toml_string(imported.id)}]\n'
        + model_to_toml(imported, path)
    )
    by_path = parse_config(
        f'[sweep]\nname = "b"\n{axes}model = [{toml_string(imported.id)}]\n'
        f"[models.{key}]\nconfig = {toml_string(path.as_posix())}\n"
    )
    one, two = build_grid(pasted), build_grid(by_path)
    for name in ("step_time_s", "tokens_per_s", "ttft_s", "weight_bytes", "ceiling", "max_batch"):
        np.testing.assert_array_equal(one[name].values, two[name].values, err_msg=name)


def test_a_model_folder_and_a_hugging_face_cache_snapshot(tmp_path: Path) -> None:
    source = HF / "qwen2.5-7b" / "config.json"
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen2.5-7B" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    text = source.read_text("utf-8").replace('"_name_or_path"', '"_unused"')
    (snapshot / "config.json").write_text(text, "utf-8")
    assert load_model(snapshot).id == "qwen2.5-7b"  # the folder, the repository's name
    assert load_model(snapshot / "config.json").id == "qwen2.5-7b"  # not the hash
    assert load_model(HF / "qwen2.5-7b").params == load_model(source).params
