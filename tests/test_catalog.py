"""The catalog: data files load into frozen records, with sources, dense peaks and SI units."""

from __future__ import annotations

import csv
import dataclasses
import datetime
import sys
from importlib import resources
from pathlib import Path

import pytest

from sweeps.catalog import TABLE_FIELDS, Hardware, Model, load_catalog, unique
from sweeps.catalog.loader import _record, csv_columns
from sweeps.errors import CatalogError

REFERENCE = Path(__file__).resolve().parent / "fixtures" / "reference"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from build_catalog import NOTES, catalog_notes, clean_source  # noqa: E402


def _reference_devices() -> list[dict[str, str]]:
    """The reference devices and those the third round adds (hardware-3.csv)."""
    rows = []
    for name in ("hardware.csv", "hardware-3.csv"):
        rows += list(csv.DictReader((REFERENCE / name).open(encoding="utf-8")))
    return rows


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
    assert len(unique(catalog.hardware)) == 35  # 31 reference devices + 4 (hardware-3.csv)
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


def test_catalog_matches_the_reference_tables() -> None:
    catalog = load_catalog()
    for row in _reference_devices():
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


def _reference_prices() -> list[dict[str, str]]:
    """The vetted prices (prices.csv) and the third round's (prices-3.csv)."""
    rows = []
    for name in ("prices.csv", "prices-3.csv"):
        rows += list(csv.DictReader((REFERENCE / name).open(encoding="utf-8")))
    return rows


def test_prices_match_the_reference_with_kind_date_and_source() -> None:
    catalog = load_catalog()
    rows = _reference_prices()
    assert len(rows) == 8
    assert len({row["hardware"] for row in rows}) == len(rows)  # one price per device
    for row in rows:
        device = catalog.lookup_hardware(row["hardware"])
        assert device.price_per_hour == float(row["price_per_hour_usd"])
        assert device.price_kind == row["pricing"]
        assert device.price_as_of == datetime.date.fromisoformat(row["as_of"])
        assert device.price_source == row["source"]
    # H100 SXM: $39.33 per 8-GPU instance-hour -> 4.916 per device-hour (to the cent)
    assert catalog.lookup_hardware("h100-sxm").price_per_hour == pytest.approx(39.33 / 8, abs=5e-3)
    # GB200: $9.08 per Superchip-hour, two GPUs to a Superchip; the catalog's row is one GPU
    assert catalog.lookup_hardware("gb200").price_per_hour == pytest.approx(9.08 / 2)
    priced = {row["hardware"] for row in rows}
    for device in unique(catalog.hardware):
        if device.id not in priced:  # null, never zero, where no price is known
            assert device.price_per_hour is None
            assert (device.price_kind, device.price_as_of, device.price_source) == ("", None, "")


def test_every_priced_device_has_its_kind_date_and_source() -> None:
    priced = [d for d in unique(load_catalog().hardware) if d.price_per_hour is not None]
    assert {d.id for d in priced} >= {"h100-sxm", "h200", "b200", "gb200", "l40s", "tpu-v6e"}
    for device in priced:
        assert device.price_per_hour > 0, device.id
        assert device.price_kind.strip(), device.id
        assert isinstance(device.price_as_of, datetime.date), device.id
        assert device.price_source.strip(), device.id
        # a page address or a named document: something a reader can open
        assert "." in device.price_source, device.id


def test_hardware_notes_are_the_reference_notes() -> None:
    catalog = load_catalog()
    for row in _reference_devices():
        device = catalog.lookup_hardware(row["id"])
        assert (device.name, device.vendor) == (row["name"], row["vendor"])
        assert (device.source, device.notes) == (clean_source(row["source"]), row["notes"])
        assert "session" not in device.notes + device.source  # about the device, not the work


def test_table_fields_are_the_marked_model_fields_in_order() -> None:
    assert TABLE_FIELDS == (
        "params",
        "active_params",
        "layers",
        "heads",
        "kv_heads",
        "head_dim",
        "hidden_size",
        "attention",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "v_head_dim",
        "experts",
        "experts_per_token",
        "sliding_window",
        "local_layers",
        "max_context",
        "source",
    )


def test_every_model_carries_vocabulary_width_and_tying() -> None:
    catalog = load_catalog()
    for model in unique(catalog.models):
        assert model.vocab_size > 0, model.id
        assert model.hidden_size > 0, model.id
    # untied: 2 * 128,256 * 4,096 = 1,050,673,152 (the cost model's embedding check value)
    assert catalog.lookup_model("llama-3-8b").embedding_params == 1_050_673_152
    # tied: one matrix, 128,256 * 2,048 = 262,668,288
    tied = catalog.lookup_model("llama-3.2-1b")
    assert tied.tie_word_embeddings
    assert tied.embedding_params == 262_668_288
    custom = Model(id="x", params=1e9, active_params=1e9, layers=2, heads=4, kv_heads=4, head_dim=8)
    assert custom.embedding_params == 0  # no vocabulary known


ROW = {"id": "x", "name": "X", "vendor": "V", "memory": "1", "bandwidth": "2", "notes": ""}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"memory": "lots"}, r"hardware.csv: row 'x', column 'memory': 'lots' is not a number"),
        ({"memory": ""}, r"column 'memory' is empty; it is required"),
        ({"price_as_of": "2025-13-01"}, r"column 'price_as_of': '2025-13-01' is not a date"),
        ({"id": None}, r"column 'id' is missing"),
    ],
)
def test_loader_errors_name_file_row_and_column(change: dict[str, str | None], needle: str) -> None:
    row = {k: v for k, v in {**ROW, **change}.items() if v is not None}
    with pytest.raises(CatalogError, match=needle):
        _record(Hardware, row, "hardware.csv", peak_flops={})


def test_loader_reads_each_field_by_its_annotated_type() -> None:
    row = {**ROW, "cache_bytes": "", "price_per_hour": "2.5", "price_as_of": "2025-01-01"}
    device = _record(Hardware, {**row, "aliases": "a; b"}, "hardware.csv", peak_flops={"bf16": 1})
    assert (device.memory, device.bandwidth, device.cache_bytes) == (1.0, 2.0, None)
    assert (device.price_per_hour, device.price_as_of) == (2.5, datetime.date(2025, 1, 1))
    assert device.aliases == ("a", "b")
    model_row = {"id": "m", "params": "8e9", "active_params": "8e9", "layers": "32"}
    model_row |= {"heads": "32", "kv_heads": "8", "head_dim": "128", "experts": ""}
    model = _record(Model, {**model_row, "tie_word_embeddings": "true"}, "models.csv")
    assert (model.layers, model.experts, model.tie_word_embeddings) == (32, 1, True)
    assert isinstance(model.layers, int)
    with pytest.raises(CatalogError, match="'yes' is not true/false"):
        _record(Model, {**model_row, "tie_word_embeddings": "yes"}, "models.csv")


@pytest.mark.parametrize(
    ("filename", "record"), [("hardware.csv", Hardware), ("models.csv", Model)]
)
def test_each_record_field_is_a_column_of_its_file(filename: str, record: type) -> None:
    text = resources.files("sweeps.catalog").joinpath("data", filename).read_text("utf-8")
    assert text.splitlines()[0].split(",") == csv_columns(record)


MIB, GIB = 2**20, 2**30


def test_capacities_are_the_driver_figures() -> None:
    catalog = load_catalog()
    h200 = catalog.lookup_hardware("h200")
    assert h200.memory == 143_771 * MIB == 150_754_820_096  # nvidia-smi memory.total
    assert "nvidia-smi" in h200.memory_basis
    mi300x = catalog.lookup_hardware("mi300x")
    assert mi300x.memory == 206_141_652_992  # rocm-smi VRAM Total Memory, bare metal
    assert 205.8e9 <= mi300x.memory <= 206.2e9
    assert "rocm-smi" in mi300x.memory_basis
    assert catalog.lookup_hardware("tpu-v6e").memory == 32 * GIB
    assert catalog.lookup_hardware("mi355x").memory == 309_220_868_096
    assert catalog.lookup_hardware("mi325x").memory == 256 * GIB - 16 * MIB
    assert catalog.lookup_hardware("gaudi3").memory == 131_072 * MIB  # hl-smi
    for device in unique(catalog.hardware):
        assert device.memory_basis, device.id


def test_the_devices_published_results_use_are_there() -> None:
    catalog = load_catalog()
    for name, memory in (
        ("mi350x", 288 * GIB - 16 * MIB),
        ("rtx-pro-6000", 97_887 * MIB),
        ("gh200", 97_871 * MIB),
        ("h200-nvl", 143_771 * MIB),
    ):
        device = catalog.lookup_hardware(name)
        assert device.memory == memory
        assert device.source
        assert device.notes
    # the datasheet's sparse figures, halved
    assert catalog.lookup_hardware("h200-nvl").peak_flops["bf16"] == 835.5e12
    assert catalog.lookup_hardware("gh200").peak_flops["fp8"] == 1978.9e12
    assert (
        catalog.lookup_hardware("mi350x").peak_flops["fp4"] == 9227.5e12
    )  # 256 CU x 16384 x 2.2 GHz


def test_every_power_and_link_figure_has_its_source() -> None:
    devices = unique(load_catalog().hardware)
    for device in devices:
        for figure, source in (
            (device.board_power_w, device.board_power_source),
            (device.scale_up_bandwidth, device.scale_up_source),
            (device.host_link_bandwidth, device.host_link_source),
        ):
            assert figure is None or (figure > 0 and source), device.id  # null, never 0
        if device.scale_up_bandwidth is not None:
            assert device.scale_up_link, device.id
        if device.host_link_bandwidth is not None:
            assert device.host_link, device.id
    h100 = load_catalog().lookup_hardware("h100-sxm")
    # NVLink 4: 900 GB/s both directions together; PCIe Gen5 x16: 128 GB/s
    assert (h100.board_power_w, h100.scale_up_bandwidth) == (700, 450e9)
    assert (h100.host_link, h100.host_link_bandwidth) == ("PCIe Gen5 x16", 64e9)
    gb200 = load_catalog().lookup_hardware("gb200")
    assert (gb200.scale_up_bandwidth, gb200.host_link) == (900e9, "NVLink-C2C")
    assert load_catalog().lookup_hardware("l40s").scale_up_bandwidth is None  # PCIe only
    assert sum(d.board_power_w is not None for d in devices) == 24


def test_power_and_links_match_the_reference_table() -> None:
    catalog = load_catalog()
    for row in csv.DictReader((REFERENCE / "links-3.csv").open(encoding="utf-8")):
        device = catalog.lookup_hardware(row["id"])
        for value, column, factor in (
            (device.board_power_w, "board_power_w", 1.0),
            (device.scale_up_bandwidth, "scale_up_gb_s", 1e9),
            (device.host_link_bandwidth, "host_link_gb_s", 1e9),
        ):
            expected = float(row[column]) * factor if row[column] else None
            assert value == pytest.approx(expected), (row["id"], column)


def test_sources_cite_documents_not_research_notes() -> None:
    catalog = load_catalog()
    records = [*unique(catalog.hardware), *unique(catalog.models)]
    for record in records:
        for note in ("index id", "index search", "grokipedia"):
            assert note not in record.source, (record.id, note)
    llama = catalog.lookup_model("llama-3-8b").source
    assert "meta-llama/Meta-Llama-3-8B config.json (Hugging Face)" in llama


def test_the_catalog_notes_are_rebuilt_from_the_catalog() -> None:
    text = NOTES.read_text("utf-8")
    assert text == catalog_notes(unique(load_catalog().hardware)), (
        "run: python scripts/build_catalog.py"
    )
    assert "| h200 | H200 SXM 141GB | 150,754,820,096 |" in text
    assert "NVLink 4 450.0" in text
