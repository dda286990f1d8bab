"""Rebuild the package catalog (sweeps/catalog/data/*.csv) from the vetted reference tables.

The reference tables (shared/reference/hardware.csv, models.csv, prices.csv) keep vendor units
and long ids;
the package catalog holds SI units (bytes, FLOP/s, bytes/s), short ids with the reference id kept
as an alias, the exact memory capacity with the basis it was read on, and the per-layer facts
(sliding-window layers, MLA ranks) that the reference keeps in prose, and each device's dated,
cited price per device-hour where prices.csv has one (empty elsewhere). Run it from the repository
root: ``python scripts/build_catalog.py [reference folder]``; the folder defaults to the
repository's copy, tests/fixtures/reference/, which adds the third round's tables
(hardware-3.csv: devices; links-3.csv: board power and link bandwidths, each with its source;
prices-3.csv: the prices of further devices, each from a dated public page).

Parameter counts are not copied from the reference's rounded billions: each model's
``config.json`` is rebuilt from the reference shapes, each under the field name its family
reads (``sweeps.catalog.hf.families``), plus the facts of each generation's published files
below (``FAMILY``, ``hf_config``), and ``sweeps.catalog.hf`` counts every weight from it, so
the catalog holds exact integers (Llama-3 8B = 8,030,261,248). ``--write-configs DIR`` also
writes those config.json files (DIR/<reference id>/config.json: the test data under tests/data/hf/).
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeps.catalog.hf import FAMILIES, Family, count_parameters
from sweeps.catalog.hf.rules import Dense
from sweeps.catalog.loader import csv_columns
from sweeps.catalog.records import Hardware, Model

GIB = 2**30
MIB = 2**20

# reference id -> (short id, memory bytes, basis of that figure)
HARDWARE = {
    "nvidia-a100-sxm4-80gb": ("a100-80gb", 80 * GIB, "80 GiB (aiconfigurator)"),
    "nvidia-a100-40gb": ("a100-40gb", 40 * GIB, "40 GiB (NVIDIA 'GB' on A100/H100 is GiB)"),
    "nvidia-h100-sxm5-80gb": ("h100-sxm", 80 * GIB, "80 GiB (NVIDIA 'GB' on A100/H100 is GiB)"),
    "nvidia-h100-pcie-80gb": ("h100-pcie", 80 * GIB, "80 GiB (NVIDIA 'GB' on A100/H100 is GiB)"),
    "nvidia-h100-nvl-94gb": (
        "h100-nvl",
        94 * 10**9,
        "94 GB decimal (basis unconfirmed; lower reading)",
    ),
    "nvidia-h200-sxm-141gb": (
        "h200",
        143771 * MIB,
        "143771 MiB as nvidia-smi reports it (memory.total; the datasheet's 141 GB)",
    ),
    "nvidia-h200-nvl-141gb": (
        "h200-nvl",
        143771 * MIB,
        "143771 MiB as nvidia-smi reports it (memory.total; the datasheet's 141 GB)",
    ),
    "nvidia-gh200-96gb": (
        "gh200",
        97871 * MIB,
        "97871 MiB as nvidia-smi reports it ('NVIDIA GH200 480GB'; the datasheet's 96 GB HBM3)",
    ),
    "nvidia-h20-96gb": ("h20", 96 * 10**9, "96 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-l4": ("l4", 24 * 10**9, "24 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-l40s": ("l40s", 48 * 10**9, "48 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-b200-hgx": ("b200", 180 * GIB, "180 GiB usable (aiconfigurator)"),
    "nvidia-gb200-per-gpu": ("gb200", 189471 * MIB, "189471 MiB (nvidia-smi via aiconfigurator)"),
    "nvidia-b300-hgx": ("b300", 275040 * MIB, "275040 MiB (nvidia-smi via aiconfigurator)"),
    "nvidia-gb300-per-gpu": ("gb300", 284208 * MIB, "284208 MiB (nvidia-smi via aiconfigurator)"),
    "nvidia-rtx-4090": ("rtx-4090", 24 * 10**9, "24 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-rtx-5090": ("rtx-5090", 32 * 10**9, "32 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-rtx-pro-6000-blackwell-server": (
        "rtx-pro-6000",
        97887 * MIB,
        "97887 MiB as nvidia-smi reports it (memory.total; the datasheet's 96 GB GDDR7)",
    ),
    "amd-mi250x": (
        "mi250x",
        2 * (64 * GIB - 16 * MIB),
        "2 x 68,702,699,520 B: each GCD's 64 GiB less the 16 MiB the amdgpu driver reserves, "
        "the figure HIP reports per GCD",
    ),
    "amd-mi300x": (
        "mi300x",
        192 * GIB - 16 * MIB,
        "206,141,652,992 B as rocm-smi reports it (VRAM Total Memory, bare metal: 192 GiB less "
        "16 MiB; a virtual function reads 205,822,885,888 B); AMD's '192 GB' is GiB",
    ),
    "amd-mi325x": (
        "mi325x",
        256 * GIB - 16 * MIB,
        "256 GiB less 16 MiB: the driver's reading of MI300X and MI355X applied to 8 x 32 GiB "
        "HBM3E stacks (no MI325X driver log read; memory=274861129728?)",
    ),
    "amd-mi350x": (
        "mi350x",
        288 * GIB - 16 * MIB,
        "309,220,868,096 B as the MI355X's driver reports it (same 8 x 36 GiB HBM3E stacks; "
        "no MI350X log read)",
    ),
    "amd-mi355x": (
        "mi355x",
        288 * GIB - 16 * MIB,
        "309,220,868,096 B as the amdgpu driver reports it (VRAM total: 288 GiB less 16 MiB)",
    ),
    "google-tpu-v4": ("tpu-v4", 32 * GIB, "32 GiB (Cloud TPU docs)"),
    "google-tpu-v5e": ("tpu-v5e", 16 * 10**9, "16 GB decimal (Cloud TPU docs say GB)"),
    "google-tpu-v5p": ("tpu-v5p", 95 * GIB, "95 GiB (Cloud TPU docs)"),
    "google-tpu-v6e": ("tpu-v6e", 32 * GIB, "32 GiB (Cloud TPU docs: 32 GiB HBM per chip)"),
    "google-tpu7x-ironwood": ("tpu7x", 192 * GIB, "192 GiB (Cloud TPU docs)"),
    "intel-gaudi2": ("gaudi2", 98304 * MIB, "98304 MiB as hl-smi reports it (HL-225)"),
    "intel-gaudi3": ("gaudi3", 131072 * MIB, "131072 MiB as hl-smi reports it (HL-325L)"),
    "aws-trainium2": ("trainium2", 96 * GIB, "96 GiB (Neuron docs)"),
    "aws-inferentia2": ("inferentia2", 32 * GIB, "32 GiB (Neuron docs)"),
    "apple-m2-ultra": ("m2-ultra", 192 * 10**9, "192 GB decimal, maximum configuration"),
    "apple-m3-max": ("m3-max", 128 * 10**9, "128 GB decimal, maximum configuration"),
    "apple-m4-max": ("m4-max", 128 * 10**9, "128 GB decimal, maximum configuration"),
}

# reference id -> short id where the issue names a shorter one
MODEL_IDS = {"mistral-7b-v0.1": "mistral-7b", "phi-3-mini-4k": "phi-3-mini"}

# layers that keep a sliding window, from the layer layout in each config (catalog-notes.md 4.1)
LOCAL_LAYERS = {
    "mistral-7b-v0.1": 32,  # window on every layer
    "gemma-2-9b": 21,  # alternating local/global over 42 layers
    "gemma-2-27b": 23,  # alternating over 46 layers
    "gpt-oss-20b": 12,  # alternating sliding/full over 24 layers
    "gpt-oss-120b": 18,  # alternating over 36 layers
}

MLA = {"qk_rope_head_dim": 64, "v_head_dim": 128}  # DeepSeek-V3/R1 mla_details

LLAMA_3_ROPE = {
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}


def _qwen2_window(row: dict[str, str]) -> dict[str, Any]:
    """Qwen2.5 files carry a window that is off (``use_sliding_window`` false)."""
    return {"sliding_window": int(row["max_context"]), "max_window_layers": int(row["n_layers"])}


def _gpt_oss_layers(row: dict[str, str]) -> dict[str, Any]:
    """gpt-oss files list the layer layout: sliding, full, sliding, ..."""
    kinds = ("sliding_attention", "full_attention")
    return {"layer_types": [kinds[i % 2] for i in range(int(row["n_layers"]))]}


def _head_dim(row: dict[str, str]) -> dict[str, Any]:
    """Llama-3.2 files carry ``head_dim`` although it is ``hidden / heads``."""
    return {"head_dim": int(row["head_dim"])}


# Reference family -> (model_type, the facts of that generation's published config.json that
# the reference keeps in prose, and the row-dependent ones). The architecture's own rules
# (field names, biases, defaults, windows) come from sweeps.catalog.hf.families.
FAMILY: dict[str, tuple[str, dict[str, Any], Callable[[dict[str, str]], dict[str, Any]] | None]] = {
    "Llama-2": ("llama", {"rms_norm_eps": 1e-05, "rope_theta": 10000.0}, None),
    "Llama-3": ("llama", {"rms_norm_eps": 1e-05, "rope_theta": 500000.0}, None),
    "Llama-3.1": (
        "llama",
        {
            "rms_norm_eps": 1e-05,
            "rope_theta": 500000.0,
            "rope_scaling": {"factor": 8.0, **LLAMA_3_ROPE},
        },
        None,
    ),
    "Llama-3.2": (
        "llama",
        {
            "rms_norm_eps": 1e-05,
            "rope_theta": 500000.0,
            "rope_scaling": {"factor": 32.0, **LLAMA_3_ROPE},
        },
        _head_dim,
    ),
    "Mistral": ("mistral", {"rms_norm_eps": 1e-05, "rope_theta": 10000.0}, None),
    "Mixtral": (
        "mixtral",
        {"rms_norm_eps": 1e-05, "rope_theta": 1e6, "sliding_window": None},
        None,
    ),
    "Qwen2.5": (
        "qwen2",
        {"rms_norm_eps": 1e-06, "rope_theta": 1e6, "use_sliding_window": False},
        _qwen2_window,
    ),
    "Qwen3": (
        "qwen3",
        {
            "rms_norm_eps": 1e-06,
            "rope_theta": 1e6,
            "attention_bias": False,
            "use_sliding_window": False,
        },
        None,
    ),
    "Qwen3-MoE": (
        "qwen3_moe",
        {
            "rms_norm_eps": 1e-06,
            "rope_theta": 1e6,
            "attention_bias": False,
            "use_sliding_window": False,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "norm_topk_prob": True,
        },
        None,
    ),
    "Gemma-2": (
        "gemma2",
        {
            "rms_norm_eps": 1e-06,
            "rope_theta": 10000.0,
            "attn_logit_softcapping": 50.0,
            "final_logit_softcapping": 30.0,
            "hidden_activation": "gelu_pytorch_tanh",
            "cache_implementation": "hybrid",
        },
        None,
    ),
    "Phi-3": ("phi3", {"rms_norm_eps": 1e-05, "rope_theta": 10000.0}, None),
    "DeepSeek-V3": (
        "deepseek_v3",
        {
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 128,
            "first_k_dense_replace": 3,
            "moe_layer_freq": 1,
            "n_group": 8,
            "topk_group": 4,
            "topk_method": "noaux_tc",
            "num_nextn_predict_layers": 1,
            "routed_scaling_factor": 2.5,
            "rms_norm_eps": 1e-06,
            "rope_theta": 10000,
        },
        None,
    ),
    "gpt-oss": (
        "gpt_oss",
        {
            "attention_bias": True,
            "rms_norm_eps": 1e-05,
            "rope_theta": 150000,
            "initial_context_length": 4096,
            "swiglu_limit": 7.0,
        },
        _gpt_oss_layers,
    ),
    "Falcon": (
        "falcon",
        {
            "alibi": False,
            "bias": False,
            "multi_query": True,
            "new_decoder_architecture": False,
            "parallel_attn": True,
            "layer_norm_epsilon": 1e-05,
        },
        None,
    ),
}


# notes of the research that found a copy, not sources: a search index's ids, "index search",
# a wiki mirror; the vendor document or the file a row names stays
_NOTE = re.compile(r"\s*\((?:[^()]|\([^()]*\))*?index (?:id|ids|search)(?:[^()]|\([^()]*\))*\)")
_MIRROR = re.compile(r";\s*https?://grokipedia\.com/\S+(?:\s*\([^()]*\))?")


def clean_source(text: str, hf_repo: str = "") -> str:
    """A row's source as a citation: research notes (index ids, "index search") and wiki
    mirrors left out; for a model, its Hugging Face repository's config.json named first."""
    cleaned = _MIRROR.sub("", _NOTE.sub("", text)).strip()
    if hf_repo:
        cleaned = f"{hf_repo} config.json (Hugging Face); read from: {cleaned}"
    return cleaned


def _scaled(text: str, factor: float) -> str:
    return "" if text.strip() == "" else f"{float(text) * factor:.15g}"


PRICE_COLUMNS = {  # catalog column -> prices.csv column
    "price_per_hour": "price_per_hour_usd",
    "price_kind": "pricing",
    "price_as_of": "as_of",
    "price_source": "source",
}


PRICE_FILES = ("prices.csv", "prices-3.csv")
"""The vetted prices, then those added in the third round (each a dated, cited public page)."""


def _price_row(name: str, row: dict[str, str], known: set[str]) -> dict[str, str]:
    """One price row in catalog columns; an error for a device the catalog lacks, a price
    that is not a number, or a price without its kind, date or source."""
    if row["hardware"] not in known:
        msg = f"{name}: hardware {row['hardware']!r} is not in the catalog"
        raise SystemExit(msg)
    try:
        float(row["price_per_hour_usd"])
    except ValueError:
        msg = f"{name}: {row['hardware']}: {row['price_per_hour_usd']!r} is not a number"
        raise SystemExit(msg) from None
    for key in ("pricing", "as_of", "source"):
        if not row[key].strip():
            msg = f"{name}: {row['hardware']}: a price needs its {key}"
            raise SystemExit(msg)
    return {column: row[key] for column, key in PRICE_COLUMNS.items()}


def prices(reference: Path) -> dict[str, dict[str, str]]:
    """Device-hour prices by short hardware id [USD/h], with kind, date and source, from
    every file of ``PRICE_FILES`` the reference folder has; a device priced twice is an
    error."""
    known = {short for short, _, _ in HARDWARE.values()}
    out: dict[str, dict[str, str]] = {}
    for name in PRICE_FILES:
        path = reference / name
        if not path.exists():
            continue
        for row in csv.DictReader(path.open(encoding="utf-8")):
            if row["hardware"] in out:
                msg = f"{name}: hardware {row['hardware']!r} already has a price"
                raise SystemExit(msg)
            out[row["hardware"]] = _price_row(name, row, known)
    return out


LINK_COLUMNS = (  # catalog column -> (links-3.csv column, factor to SI)
    ("board_power_w", "board_power_w", 1.0),
    ("board_power_source", "board_power_source", None),
    ("scale_up_link", "scale_up_link", None),
    ("scale_up_bandwidth", "scale_up_gb_s", 1e9),
    ("scale_up_source", "scale_up_source", None),
    ("host_link", "host_link", None),
    ("host_link_bandwidth", "host_link_gb_s", 1e9),
    ("host_link_source", "host_link_source", None),
)


def links(reference: Path) -> dict[str, dict[str, str]]:
    """Board power and link bandwidths by reference id, in SI (W, byte/s per direction), each
    with its source; an error for a figure without one, or for a device the catalog lacks."""
    out = {}
    for row in csv.DictReader((reference / "links-3.csv").open(encoding="utf-8")):
        if row["id"] not in HARDWARE:
            msg = f"links-3.csv: hardware {row['id']!r} is not in the catalog"
            raise SystemExit(msg)
        for figure, source in (
            ("board_power_w", "board_power_source"),
            ("scale_up_gb_s", "scale_up_source"),
            ("host_link_gb_s", "host_link_source"),
        ):
            if row[figure].strip() and not row[source].strip():
                msg = f"links-3.csv: {row['id']}: {figure} has no {source}"
                raise SystemExit(msg)
        out[row["id"]] = {
            column: row[key] if factor is None else _scaled(row[key], factor)
            for column, key, factor in LINK_COLUMNS
        }
    return out


def _reference_hardware(reference: Path) -> list[dict[str, str]]:
    """The reference devices, then those added in the third round (hardware-3.csv)."""
    rows = []
    for name in ("hardware.csv", "hardware-3.csv"):
        rows += list(csv.DictReader((reference / name).open(encoding="utf-8")))
    return rows


def build_hardware(reference: Path) -> list[dict[str, str]]:
    rows = []
    price = prices(reference)
    link = links(reference)
    for row in _reference_hardware(reference):
        short, memory, basis = HARDWARE[row["id"]]
        rows.append(
            {
                "id": short,
                "aliases": row["id"],
                "vendor": row["vendor"],
                "name": row["name"],
                "memory": str(memory),
                "memory_basis": basis,
                "bandwidth": _scaled(row["memory_bandwidth_tb_s"], 1e12),
                "peak_flops_bf16": _scaled(row["peak_bf16_dense_tflops"], 1e12),
                "peak_flops_fp8": _scaled(row["peak_fp8_dense_tflops"], 1e12),
                "peak_flops_int8": _scaled(row["peak_int8_dense_tops"], 1e12),
                "peak_flops_fp4": _scaled(row["peak_fp4_dense_tflops"], 1e12),
                "peak_flops_fp32": _scaled(row["peak_fp32_tflops"], 1e12),
                "cache_bytes": _scaled(row["l2_or_last_level_cache_mb"], 1e6),
                **link.get(row["id"], {column: "" for column, _, _ in LINK_COLUMNS}),
                **price.get(short, dict.fromkeys(PRICE_COLUMNS, "")),
                "source": clean_source(row["source"]),
                "notes": row["notes"],
            }
        )
    return rows


def _mlp_fields(row: dict[str, str], family: Family) -> dict[str, Any]:
    """The MLP or expert fields of a reference row, under the family's own field names."""
    mlp, width = family.mlp, int(row["intermediate_size"])
    if isinstance(mlp, Dense):  # left out where the family's default width gives it
        default = mlp.default_ratio * int(row["hidden_size"])
        return {} if mlp.default_ratio and width == default else {mlp.key: width}
    config: dict[str, Any] = {
        "intermediate_size": width,
        mlp.count_key: int(row["num_experts"]),
        "num_experts_per_tok": int(row["experts_per_token"]),
    }
    if mlp.width_key != "intermediate_size":
        config[mlp.width_key] = int(row["moe_intermediate_size"])
    if mlp.shared_key:
        config[mlp.shared_key] = int(row["num_shared_experts"])
    return config


def hf_config(row: dict[str, str]) -> dict[str, Any]:
    """The ``config.json`` of a reference row: its shapes in Hugging Face field names, each
    under the name its family reads (``sweeps.catalog.hf.families``)."""
    model_type, facts, extra = FAMILY[row["family"]]
    family = FAMILIES[model_type]
    hidden, heads = int(row["hidden_size"]), int(row["n_heads"])
    config: dict[str, Any] = {
        "architectures": [family.architecture],
        "model_type": model_type,
        "hidden_size": hidden,
        "num_hidden_layers": int(row["n_layers"]),
        "num_attention_heads": heads,
        "vocab_size": int(row["vocab_size"]),
        "tie_word_embeddings": row["tie_word_embeddings"] == "true",
        "max_position_embeddings": int(row["max_context"]),
        "torch_dtype": "bfloat16",
        **_mlp_fields(row, family),
    }
    if family.kv_heads.key is not None:  # else derived by the family's rule (Falcon MQA)
        config[family.kv_heads.key] = int(row["n_kv_heads"])
    if family.mla:
        config["kv_lora_rank"] = int(row["kv_lora_rank"])
        config["qk_rope_head_dim"] = MLA["qk_rope_head_dim"]
        config["v_head_dim"] = MLA["v_head_dim"]
    elif family.head_dim_in_file or int(row["head_dim"]) * heads != hidden:
        config["head_dim"] = int(row["head_dim"])
    if row["sliding_window"]:
        config["sliding_window"] = int(row["sliding_window"])
    for key, value in family.defaults.items():  # files leave out their class's defaults
        if config.get(key) == value:
            del config[key]
    config.update(facts)
    if extra is not None:
        config.update(extra(row))
    return dict(sorted(config.items()))


def exact_params(row: dict[str, str]) -> tuple[int, int]:
    """Total and active parameters counted from the row's config.json shapes [1]."""
    counts = count_parameters(hf_config(row), f"reference row {row['id']!r}")
    for value, column in ((counts.total, "params_total_b"), (counts.active, "params_active_b")):
        reference = float(row[column]) * 1e9
        if abs(value - reference) > 0.005 * reference:
            msg = f"{row['id']}: {column} computed {value:,} vs reference {reference:,.0f}"
            raise SystemExit(msg)
    return counts.total, counts.active


def build_models(reference: Path) -> list[dict[str, str]]:
    rows = []
    for row in csv.DictReader((reference / "models.csv").open(encoding="utf-8")):
        ref_id = row["id"]
        mla = row["attention"] == "mla"
        total, active = exact_params(row)
        rows.append(
            {
                "id": MODEL_IDS.get(ref_id, ref_id),
                "aliases": ref_id if ref_id in MODEL_IDS else "",
                "family": row["family"],
                "hf_repo": row["hf_repo"],
                "params": str(total),
                "active_params": str(active),
                "layers": row["n_layers"],
                "hidden_size": row["hidden_size"],
                "heads": row["n_heads"],
                "kv_heads": row["n_kv_heads"],
                "head_dim": row["head_dim"],
                "intermediate_size": row["intermediate_size"],
                "vocab_size": row["vocab_size"],
                "attention": row["attention"],
                "kv_lora_rank": row["kv_lora_rank"],
                "qk_rope_head_dim": str(MLA["qk_rope_head_dim"]) if mla else "",
                "v_head_dim": str(MLA["v_head_dim"]) if mla else "",
                "experts": row["num_experts"],
                "experts_per_token": row["experts_per_token"],
                "shared_experts": row["num_shared_experts"],
                "moe_intermediate_size": row["moe_intermediate_size"],
                "sliding_window": row["sliding_window"] if ref_id in LOCAL_LAYERS else "",
                "local_layers": str(LOCAL_LAYERS.get(ref_id, 0)),
                "max_context": row["max_context"],
                "tie_word_embeddings": row["tie_word_embeddings"],
                "source": "params computed from config.json shapes (scripts/build_catalog.py); "
                "shapes: " + clean_source(row["source"], row["hf_repo"]),
                "notes": row["notes"],
            }
        )
    return rows


def write_configs(reference: Path, folder: Path) -> None:
    """Write each reference model's config.json to ``folder/<id>/config.json``."""
    for row in csv.DictReader((reference / "models.csv").open(encoding="utf-8")):
        target = folder / row["id"] / "config.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(hf_config(row), indent=2) + "\n", encoding="utf-8")


def write(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


NOTES = Path(__file__).resolve().parent.parent / "docs" / "catalog-notes.md"


def _figure(value: float | None, scale: float, digits: str = ".4g") -> str:
    return "-" if value is None else format(value / scale, digits)


def _device_line(device: Hardware) -> str:
    price = (
        "-"
        if device.price_per_hour is None
        else f"{device.price_per_hour:.3f} ({device.price_kind}, {device.price_as_of})"
    )
    cells = [
        device.id,
        device.name,
        f"{device.memory:,.0f}",
        device.memory_basis,
        _figure(device.bandwidth, 1e12),
        _figure(device.peak_flops.get("bf16"), 1e12, ".1f"),
        _figure(device.peak_flops.get("fp8"), 1e12, ".1f"),
        _figure(device.peak_flops.get("fp4"), 1e12, ".1f"),
        _figure(device.board_power_w, 1.0, ".0f"),
        f"{device.scale_up_link} {_figure(device.scale_up_bandwidth, 1e9, '.1f')}".strip(),
        f"{device.host_link} {_figure(device.host_link_bandwidth, 1e9, '.0f')}".strip(),
        price,
    ]
    return "| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |"


def catalog_notes(devices: list[Hardware]) -> str:
    """docs/catalog.md: every device's figures in vendor-readable units, with the basis of its
    memory, its links and its price; then each device's sources. Written by ``main``."""
    head = [
        "# The device catalog",
        "",
        "Written by `scripts/build_catalog.py` from `sweeps/catalog/data/hardware.csv` (do not",
        "edit by hand; a test holds it to the catalog). Memory in bytes as the driver reports it",
        "(the basis says which log or document); bandwidth in TB/s; peaks dense, in TFLOP/s;",
        "board power in W; link bandwidths in GB/s per direction (the datasheets' figures for",
        "both directions, halved); price in USD per device-hour with its kind and date. `-`: not",
        "published (null in every table).",
        "",
        "| id | name | memory [B] | memory basis | TB/s | bf16 | fp8 | fp4 | W | scale-up GB/s "
        "| host link GB/s | USD/h |",
        "|" + "---|" * 12,
    ]
    sources = ["", "## Sources", ""]
    for device in devices:
        sources.append(f"- `{device.id}`: {device.source}")
        for what, text in (
            ("power", device.board_power_source),
            ("scale-up", device.scale_up_source),
            ("host link", device.host_link_source),
            ("price", device.price_source),
        ):
            if text:
                sources.append(f"  - {what}: {text}")
    lines = head + [_device_line(device) for device in devices] + sources
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    args = list(argv[1:])
    configs = None
    if "--write-configs" in args:
        at = args.index("--write-configs")
        configs = Path(args[at + 1])
        del args[at : at + 2]
    root = Path(__file__).resolve().parent.parent
    reference = Path(args[0]) if args else root / "tests" / "fixtures" / "reference"
    data = Path(__file__).resolve().parent.parent / "sweeps" / "catalog" / "data"
    write(data / "hardware.csv", csv_columns(Hardware), build_hardware(reference))
    write(data / "models.csv", csv_columns(Model), build_models(reference))
    if configs is not None:
        write_configs(reference, configs)
    from sweeps.catalog import unique
    from sweeps.catalog.loader import load_catalog

    load_catalog.cache_clear()
    NOTES.write_text(catalog_notes(unique(load_catalog().hardware)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
