"""Hugging Face config.json import: shapes, exact parameter counts, windows, errors, the
``config = ...`` key of a sweep config and the ``sweeps import-model`` command.

The config.json files under tests/data/hf/ were written by ``scripts/build_catalog.py
--write-configs`` from the shapes in the reference models.csv (tests/fixtures/reference/) and its notes, in Hugging
Face field names (one folder per reference id).
"""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sweeps.catalog import load_catalog
from sweeps.catalog.hf_import import (
    count_parameters,
    default_name,
    load_model,
    model_from_config,
    read_config,
)
from sweeps.cli.main import cli
from sweeps.errors import ConfigError, ImportModelError

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "tests" / "data" / "hf"
REFERENCE = ROOT / "tests" / "fixtures" / "reference" / "models.csv"
CONFIGS = sorted(HF.glob("*/config.json"))
SHAPE_FIELDS = (
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "hidden_size",
    "intermediate_size",
    "vocab_size",
    "attention",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "v_head_dim",
    "experts",
    "experts_per_token",
    "shared_experts",
    "moe_intermediate_size",
    "sliding_window",
    "local_layers",
    "max_context",
    "tie_word_embeddings",
)


def _config(name: str) -> dict[str, Any]:
    return read_config(HF / name / "config.json")


def _reference() -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in csv.DictReader(REFERENCE.open(encoding="utf-8"))}


def test_shipped_configs_cover_the_named_architectures() -> None:
    names = {path.parent.name for path in CONFIGS}
    required = {
        "llama-3-8b",
        "mixtral-8x7b",
        "qwen3-235b-a22b",
        "gemma-2-9b",
        "deepseek-v3",
        "gpt-oss-20b",
        "falcon-7b",
        "phi-3-mini-4k",
    }
    assert required <= names
    assert {json.loads(p.read_text())["model_type"] for p in CONFIGS} >= {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen3",
        "qwen3_moe",
        "gemma2",
        "phi3",
        "falcon",
        "deepseek_v3",
        "gpt_oss",
    }


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.parent.name)
def test_every_config_matches_the_reference_and_the_catalog(path: Path) -> None:
    reference = _reference()[path.parent.name]
    model = load_model(path)
    # parameter counts within 0.5 % of the reference (in fact to its 3 printed decimals)
    assert model.params == pytest.approx(float(reference["params_total_b"]) * 1e9, rel=5e-3)
    assert model.active_params == pytest.approx(float(reference["params_active_b"]) * 1e9, rel=5e-3)
    assert round(model.params / 1e9, 3) == float(reference["params_total_b"])
    # the catalog's counts are these exact integers, and its shapes the same
    record = load_catalog().lookup_model(path.parent.name)
    assert (record.params, record.active_params) == (model.params, model.active_params)
    skip = {"attention", "sliding_window", "local_layers"} if model.id == "phi-3-mini-4k" else set()
    for field in SHAPE_FIELDS:
        if field not in skip:
            assert getattr(model, field) == getattr(record, field), field


def test_llama3_8b_exact_count() -> None:
    # per layer: q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 = 41,943,040;
    # MLP 3*4096*14336 = 176,160,768; 2 RMSNorms 8,192 -> 218,112,000 * 32 = 6,979,584,000;
    # embed + lm_head 2*128256*4096 = 1,050,673,152; final norm 4,096 -> 8,030,261,248
    counts = count_parameters(_config("llama-3-8b"))
    assert counts.total == counts.active == 8_030_261_248
    assert counts.embedding == 128256 * 4096


def test_gpt_oss_20b_biases_sinks_and_experts() -> None:
    # attention: q 2880*4096+4096, k/v 2*(2880*512+512), o 4096*2880+2880, sinks 64 = 26,550,144
    # expert: gate_up 2880*5760+5760, down 2880*2880+2880 = 24,891,840; router 2880*32+32
    # layer (32 experts) 823,186,976 * 24 + embeddings 2*201088*2880 + norm 2880
    counts = count_parameters(_config("gpt-oss-20b"))
    assert counts.total == 20_914_757_184
    # active: 4 experts a layer: 126,215,456 * 24 + 1,158,266,880 + 2,880
    assert counts.active == 4_187_440_704


def test_deepseek_v3_mla_dense_layers_and_mtp() -> None:
    cfg = _config("deepseek-v3")
    counts = count_parameters(cfg)
    # MLA attention 187,107,328 a layer (q_a 7168*1536 + norm 1536 + q_b 1536*128*192 +
    # kv_a 7168*576 + norm 512 + kv_b 512*128*256 + o 128*128*7168); 3 dense layers with
    # MLP 3*7168*18432; 58 MoE layers with 256+1 experts of 3*7168*2048, router 7168*256 + 256
    assert counts.total == 671_026_419_200
    assert counts.active == 37_552_297_472
    no_mtp = dict(cfg, num_nextn_predict_layers=0)
    assert count_parameters(no_mtp).total == counts.total  # the MTP layer is never counted
    all_moe = dict(cfg, first_k_dense_replace=0)
    moe_minus_dense = (257 * 3 * 7168 * 2048 + 7168 * 256 + 256) - 3 * 7168 * 18432
    assert count_parameters(all_moe).total - counts.total == 3 * moe_minus_dense
    no_q_lora = dict(cfg, q_lora_rank=None)
    # q_proj 7168*128*192 replaces q_a + norm + q_b
    delta = 7168 * 128 * 192 - (7168 * 1536 + 1536 + 1536 * 128 * 192)
    assert count_parameters(no_q_lora).total - counts.total == 61 * delta


def test_falcon_fused_mqa_layernorm_and_defaults() -> None:
    # qkv 4544*(71+2)*64 + dense 4544*4544 + MLP 2*4544*18176 + one LayerNorm 2*4544 = 207,070,080
    # * 32 + tied embedding 65024*4544 + ln_f 2*4544 = 6,921,720,704
    model = model_from_config(_config("falcon-7b"), "falcon-7b")
    assert model.params == 6_921_720_704
    assert (model.kv_heads, model.head_dim, model.max_context) == (1, 64, 2048)
    assert model.attention == "mqa"


def test_head_dim_explicit_field_comes_first() -> None:
    qwen3 = model_from_config(_config("qwen3-32b"), "q")
    assert qwen3.head_dim == 128 != qwen3.hidden_size // qwen3.heads  # 5120 / 64 = 80
    gemma = model_from_config(_config("gemma-2-9b"), "g")
    assert gemma.head_dim == 256  # 3584 / 16 = 224 would be wrong
    llama = model_from_config(_config("llama-3-8b"), "l")
    assert llama.head_dim == 128
    assert "derived" in llama.notes


def test_tied_embeddings_counted_once() -> None:
    cfg = _config("llama-3-8b")
    tied = count_parameters(dict(cfg, tie_word_embeddings=True))
    assert count_parameters(cfg).total - tied.total == 128256 * 4096


def test_qwen2_qkv_bias() -> None:
    cfg = _config("qwen2.5-7b")
    as_llama = dict(cfg, model_type="llama")  # same shapes, no bias
    # (q 28*128 + k,v 2*4*128) = 4,608 bias values a layer, 28 layers
    assert count_parameters(cfg).total - count_parameters(as_llama).total == 4608 * 28


def test_qwen3_moe_counts_and_sparse_step() -> None:
    cfg = _config("qwen3-235b-a22b")
    model = model_from_config(cfg, "q")
    assert (model.experts, model.experts_per_token, model.shared_experts) == (128, 8, 0)
    # every other layer dense (decoder_sparse_step 2): 47 MoE + 47 dense layers of 3*4096*12288
    half = count_parameters(dict(cfg, decoder_sparse_step=2))
    expert_layer = 128 * 3 * 4096 * 1536 + 4096 * 128
    assert model.params - half.total == 47 * (expert_layer - 3 * 4096 * 12288)


@pytest.mark.parametrize(
    ("name", "window", "local"),
    [
        ("mistral-7b-v0.1", 4096, 32),
        ("gemma-2-9b", 4096, 21),
        ("gemma-2-27b", 4096, 23),
        ("gpt-oss-20b", 128, 12),
        ("gpt-oss-120b", 128, 18),
        ("mixtral-8x7b", 0, 0),
        ("qwen2.5-7b", 0, 0),
        ("llama-3.1-8b", 0, 0),
    ],
)
def test_sliding_windows(name: str, window: int, local: int) -> None:
    model = model_from_config(_config(name), "m")
    assert (model.sliding_window, model.local_layers) == (window, local)
    assert (model.attention == "gqa+sliding") == bool(local)


def test_window_rules_layer_types_and_qwen_max_window_layers() -> None:
    cfg = _config("gemma-2-9b")
    types = ["sliding_attention"] * 10 + ["full_attention"] * 32
    assert model_from_config(dict(cfg, layer_types=types), "g").local_layers == 10
    gpt = {k: v for k, v in _config("gpt-oss-20b").items() if k != "layer_types"}
    assert model_from_config(gpt, "o").local_layers == 12  # HF default: sliding, full, ...
    qwen = dict(
        _config("qwen2.5-7b"), use_sliding_window=True, sliding_window=4096, max_window_layers=20
    )
    assert model_from_config(qwen, "q").local_layers == 8  # layers 20..27
    with pytest.raises(ImportModelError, match="layer_types"):
        model_from_config(dict(cfg, layer_types=types[:5]), "g")


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("llama-3-8b", "num_key_value_heads"),
        ("llama-3-8b", "hidden_size"),
        ("mixtral-8x7b", "num_local_experts"),
        ("deepseek-v3", "kv_lora_rank"),
        ("qwen3-235b-a22b", "moe_intermediate_size"),
        ("gemma-2-9b", "intermediate_size"),
        ("llama-3-8b", "model_type"),
    ],
)
def test_missing_field_names_file_and_field(tmp_path: Path, name: str, field: str) -> None:
    cfg = _config(name)
    del cfg[field]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ImportModelError) as info:
        load_model(path)
    assert str(path) in str(info.value)
    assert repr(field) in str(info.value)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"model_type": "bert"}, "'bert' is not a supported"),
        ({"num_hidden_layers": "32"}, "'num_hidden_layers' = '32' is not an integer"),
        ({"num_key_value_heads": 7}, "does not divide"),
        ({"tie_word_embeddings": "yes"}, "true or false"),
    ],
)
def test_bad_values_are_named(change: dict[str, Any], needle: str) -> None:
    with pytest.raises(ImportModelError, match=needle):
        model_from_config(dict(_config("llama-3-8b"), **change), "x", "cfg.json")


def test_not_json_or_not_an_object(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ImportModelError, match="not a JSON file"):
        load_model(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(ImportModelError, match="JSON object"):
        load_model(bad)


def test_default_name() -> None:
    assert default_name({"_name_or_path": "meta-llama/Meta-Llama-3-8B"}) == "meta-llama-3-8b"
    assert default_name({}, HF / "gemma-2-9b" / "config.json") == "gemma-2-9b"
    assert default_name({}, "/x/My Model.json") == "my-model"


# --- the config key -----------------------------------------------------------------------

SWEEP = """
[sweep]
name = "hf"
[axes]
model = ["m"]
hardware = ["h200"]
batch = [1, 8]
context = [1024]
[models.m]
{body}
"""


def _write(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "cfg"
    folder.mkdir(exist_ok=True)
    path = folder / "sweep.toml"
    path.write_text(SWEEP.format(body=body))
    return path


def test_config_key_reads_the_file_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text((HF / "mixtral-8x7b" / "config.json").read_text())
    path = _write(tmp_path, 'config = "../hf/config.json"')
    from sweeps.config import load_config

    model = load_config(path).models[0]
    assert model.id == "m"
    assert (model.params, model.active_params) == (46_702_792_704, 12_879_925_248)
    assert (model.experts, model.experts_per_token, model.kv_heads) == (8, 2, 8)


def test_config_key_fields_alongside_override(tmp_path: Path) -> None:
    from sweeps.config import load_config

    path = _write(
        tmp_path,
        f'config = "{HF / "gemma-2-9b" / "config.json"}"\n'
        "sliding_window = 1024\nmax_context = 4096",
    )
    model = load_config(path).models[0]
    assert (model.sliding_window, model.local_layers, model.max_context) == (1024, 21, 4096)
    assert model.attention == "gqa+sliding"
    assert model.params == 9_241_705_984


def test_config_key_errors_name_file_key_and_value(tmp_path: Path) -> None:
    from sweeps.config import load_config

    path = _write(tmp_path, 'config = "missing/config.json"')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    assert str(path) in text
    assert "models.m.config" in text
    assert "'missing/config.json'" in text
    broken = tmp_path / "broken.json"
    cfg = _config("llama-3-8b")
    del cfg["num_attention_heads"]
    broken.write_text(json.dumps(cfg))
    path = _write(tmp_path, f'config = "{broken}"')
    with pytest.raises(ConfigError, match="'num_attention_heads' is missing"):
        load_config(path)


def test_shape_keys_required_without_config(tmp_path: Path) -> None:
    from sweeps.config import load_config

    path = _write(tmp_path, "params = 1e9\nlayers = 2\nheads = 4")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "models.m.kv_heads: required key is missing" in str(info.value)
    assert "models.m.head_dim: required key is missing" in str(info.value)


# --- the CLI ------------------------------------------------------------------------------


def test_cli_import_model_prints_spec_and_table() -> None:
    path = HF / "deepseek-v3" / "config.json"
    result = CliRunner().invoke(cli, ["import-model", str(path), "--id", "dsv3"])
    assert result.exit_code == 0, result.output
    assert "671,026,419,200 total, 37,552,297,472 active" in result.output
    assert "70,272 in bf16" in result.output
    table = result.output[result.output.index("[models.dsv3]") :]
    assert 'attention = "mla"' in table
    assert "kv_lora_rank = 512" in table


def test_cli_import_model_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["import-model", str(tmp_path / "none.json")])
    assert missing.exit_code == 2
    assert "no such config.json" in missing.output
    bad_id = runner.invoke(
        cli, ["import-model", str(HF / "llama-3-8b" / "config.json"), "--id", "Bad Name"]
    )
    assert bad_id.exit_code == 2
    assert "not valid" in bad_id.output


def test_model_from_config_does_not_mutate_its_input() -> None:
    cfg = _config("gpt-oss-20b")
    before = copy.deepcopy(cfg)
    model_from_config(cfg, "x")
    assert cfg == before
