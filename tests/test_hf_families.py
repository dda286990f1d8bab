"""``sweeps.catalog.hf.families``: one ``Family`` per ``model_type`` holds every rule, so a new
architecture is one entry; the supported list derives from ``FAMILIES``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sweeps.catalog.hf import FAMILIES, Family, count_parameters, model_from_config
from sweeps.catalog.hf import families as families_module
from sweeps.catalog.hf.families import MODEL_TYPE_ALIASES, supported_families
from sweeps.catalog.hf.rules import Dense, Experts, alternating, flag
from sweeps.errors import ImportModelError

HF = Path(__file__).resolve().parent / "data" / "hf"
SHIPPED = {json.loads(p.read_text())["model_type"] for p in HF.glob("*/config.json")}


def _config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HF / name / "config.json").read_text())
    return data


def test_supported_families_derive_from_the_declarations() -> None:
    listed = supported_families()
    assert len(listed) == len(FAMILIES) == 12
    assert listed[0] == "llama (Llama)"
    assert "falcon (Falcon; also RefinedWeb, RefinedWebModel)" in listed
    assert [entry.split(" ")[0] for entry in listed] == list(FAMILIES)
    assert set(MODEL_TYPE_ALIASES.values()) <= set(FAMILIES)
    # every family but DeepSeek-V2 has a shipped config.json (V2 is tested below via V3's)
    assert set(FAMILIES) - SHIPPED == {"deepseek_v2"}
    import sweeps.catalog.hf as package

    assert "qwen3_moe (Qwen3-MoE)" in (package.__doc__ or "")


def test_every_family_names_its_architecture_class() -> None:
    for model_type, family in FAMILIES.items():
        assert family.architecture.endswith("ForCausalLM"), model_type
    for path in HF.glob("*/config.json"):
        data = json.loads(path.read_text())
        assert data["architectures"] == [FAMILIES[data["model_type"]].architecture]


def test_a_new_family_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    # an OLMo-2-like architecture: Llama shapes, four norms a layer, QK-norm, biased MLP
    olmo = Family(
        "OLMo-2",
        "Olmo2ForCausalLM",
        Dense(),
        qk_norm=True,
        mlp_bias=flag("mlp_bias"),
        norms=families_module.rms_norms(4),
    )
    monkeypatch.setattr(families_module, "FAMILIES", {**FAMILIES, "olmo2": olmo})
    llama = _config("llama-3-8b")
    model = model_from_config(dict(llama, model_type="olmo2", mlp_bias=True), "o")
    assert model.family == "OLMo-2"
    # over Llama-3 8B: per layer 2 more norms (2 * 4096), QK-norm (2 * 128) and MLP biases
    # (2 * 14336 + 4096) = 41,216; 32 layers -> 1,318,912
    assert model.params - count_parameters(llama).total == 32 * (8192 + 256 + 2 * 14336 + 4096)


def test_deepseek_v2_router_bias_follows_topk_method() -> None:
    v3 = _config("deepseek-v3")
    v2 = dict(v3, model_type="deepseek_v2")  # same shapes; V3's file says topk_method noaux_tc
    assert count_parameters(v2).total == count_parameters(v3).total
    greedy = dict(v2, topk_method="greedy")  # no per-expert correction bias: 256 x 58 layers
    assert count_parameters(v3).total - count_parameters(greedy).total == 256 * 58
    assert model_from_config(v2, "d").family == "DeepSeek-V2"


def test_family_defaults_apply_where_the_file_is_silent() -> None:
    gemma = _config("gemma-2-9b")
    assert "tie_word_embeddings" not in gemma  # as its published file: the class default
    assert model_from_config(gemma, "g").tie_word_embeddings
    untied = model_from_config(dict(gemma, tie_word_embeddings=False), "g")
    assert untied.params - model_from_config(gemma, "g").params == 256000 * 3584
    gpt = {k: v for k, v in _config("gpt-oss-20b").items() if k != "attention_bias"}
    assert count_parameters(gpt).total == 20_914_757_184  # biases on by the class default


def test_experts_rule_reads_the_family_fields() -> None:
    mixtral = FAMILIES["mixtral"].mlp
    assert isinstance(mixtral, Experts)
    assert (mixtral.count_key, mixtral.width_key) == ("num_local_experts", "intermediate_size")
    cfg = dict(_config("mixtral-8x7b"), num_experts_per_tok=9)
    message = r"cfg\.json: field 'num_experts_per_tok' = 9 exceeds field 'num_local_experts' = 8; "
    with pytest.raises(ImportModelError, match=message + "allowed: 1 to 8"):
        model_from_config(cfg, "m", "cfg.json")
    deepseek = dict(_config("deepseek-v3"), num_experts_per_tok=300)
    with pytest.raises(ImportModelError, match="'num_experts_per_tok' = 300 exceeds field "
                       "'n_routed_experts' = 256"):  # fmt: skip
        model_from_config(deepseek, "d", "cfg.json")
    gpt = {k: v for k, v in _config("gpt-oss-20b").items() if k != "num_experts_per_tok"}
    with pytest.raises(ImportModelError, match="field 'experts_per_token' = 64 exceeds"):
        model_from_config(dict(gpt, experts_per_token=64), "g", "cfg.json")
    gpt = _config("gpt-oss-20b")
    del gpt["num_experts_per_tok"]
    assert model_from_config(dict(gpt, experts_per_token=4), "g").experts_per_token == 4
    model = model_from_config(_config("deepseek-v3"), "d")
    assert "3 dense + 58 MoE layers (256 routed x 2048, 1 shared, top-8)" in model.notes
    assert "1 MTP layer(s) excluded from params" in model.notes


def test_falcon_width_default_and_new_architecture() -> None:
    falcon = _config("falcon-7b")
    model = model_from_config(falcon, "f")
    assert model.intermediate_size == 4 * 4544
    assert "FFN width 4*hidden = 18176 (family default)" in model.notes
    new = dict(falcon, new_decoder_architecture=True, num_kv_heads=8, num_attention_heads=64)
    wide = model_from_config(new, "f")
    assert (wide.kv_heads, wide.head_dim) == (8, 71)  # 4544 / 64
    with pytest.raises(ImportModelError, match=r"'num_kv_heads' is missing.*new_decoder_arch"):
        model_from_config(dict(new, num_kv_heads=None), "f")


def test_alternating_window_rule_names_its_layers() -> None:
    notes: list[str] = []
    rule = alternating("local", "global")
    assert rule(None, 4096, 42, notes) == 21  # type: ignore[arg-type]  # reads no field
    assert notes == ["alternating local (4096) / global layers, local first"]
