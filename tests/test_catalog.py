"""The catalog: data files load into frozen records, with sources, dense peaks and SI units."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

from sweeps.catalog import load_catalog, unique
from sweeps.errors import CatalogError

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"

REQUIRED_HARDWARE = ["h100-sxm", "h200", "a100-80gb", "b200", "mi300x", "l40s", "tpu-v5e"]
REQUIRED_MODELS = [
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-405b",
    "llama-3.2-1b",
    "llama-3.2-3b",
    "mistral-7b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "qwen3-8b",
    "qwen3-32b",
    "phi-3-mini",
    "falcon-7b",
]


def test_required_ids_present_with_sources() -> None:
    catalog = load_catalog()
    for hw_id in REQUIRED_HARDWARE:
        assert catalog.lookup_hardware(hw_id).source
    for model_id in REQUIRED_MODELS:
        assert catalog.lookup_model(model_id).source
    assert len(unique(catalog.hardware)) == 31
    assert len(unique(catalog.models)) == 29


def test_reference_ids_are_aliases() -> None:
    catalog = load_catalog()
    assert catalog.lookup_hardware("nvidia-h100-sxm5-80gb").id == "h100-sxm"
    assert catalog.lookup_model("mistral-7b-v0.1").id == "mistral-7b"


def test_h100_capacity_is_80_gib_and_peaks_dense() -> None:
    h100 = load_catalog().lookup_hardware("h100-sxm")
    assert h100.memory == 80 * 2**30
    assert h100.peak_flops["bf16"] == 989.4e12  # datasheet 1979 with sparsity, halved
    assert h100.bandwidth == 3.35e12
    assert "fp4" not in h100.peak_flops


def test_records_are_frozen() -> None:
    model = load_catalog().lookup_model("llama-3-8b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.layers = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        load_catalog().lookup_hardware("h200").peak_flops["bf16"] = 1.0  # type: ignore[index]


def test_unknown_id_names_the_closest() -> None:
    with pytest.raises(CatalogError, match=r"unknown hardware 'h100'; did you mean .*'h100-sxm'"):
        load_catalog().lookup_hardware("h100")
    with pytest.raises(CatalogError, match=r"unknown model 'llama3-8b'; did you mean 'llama-3-8b'"):
        load_catalog().lookup_model("llama3-8b")


def test_dtype_bytes_include_scales() -> None:
    dtypes = load_catalog().dtypes
    assert dtypes["bf16"].bytes_per_element == 2
    assert dtypes["fp8"].bytes_per_element == 1
    assert dtypes["int4"].bytes_per_element == 0.515625  # 0.5 + 2/128
    assert dtypes["fp4"].bytes_per_element == 0.53125  # 0.5 + 1/32 (MXFP4)


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared/reference not beside the checkout")
def test_catalog_matches_the_reference_tables() -> None:
    catalog = load_catalog()
    for row in csv.DictReader((REFERENCE / "hardware.csv").open(encoding="utf-8")):
        device = catalog.lookup_hardware(row["id"])
        assert device.bandwidth == pytest.approx(float(row["memory_bandwidth_tb_s"]) * 1e12)
        assert device.peak_flops["bf16"] == pytest.approx(
            float(row["peak_bf16_dense_tflops"]) * 1e12
        )
    for row in csv.DictReader((REFERENCE / "models.csv").open(encoding="utf-8")):
        model = catalog.lookup_model(row["id"])
        assert (model.layers, model.heads, model.kv_heads, model.head_dim) == (
            int(row["n_layers"]),
            int(row["n_heads"]),
            int(row["n_kv_heads"]),
            int(row["head_dim"]),
        )
        assert model.params == pytest.approx(float(row["params_total_b"]) * 1e9, rel=5e-3)
