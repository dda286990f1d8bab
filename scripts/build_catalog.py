"""Rebuild the package catalog (sweeps/catalog/data/*.csv) from the vetted reference tables.

The reference tables (shared/reference/hardware.csv, models.csv) keep vendor units and long ids;
the package catalog holds SI units (bytes, FLOP/s, bytes/s), short ids with the reference id kept
as an alias, the exact memory capacity with the basis it was read on, and the per-layer facts
(sliding-window layers, MLA ranks) that the reference keeps in prose. Run it from the repository
root: ``python scripts/build_catalog.py ../shared/reference``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

GIB = 2**30
MIB = 2**20

# reference id -> (short id, memory bytes, basis of that figure)
HARDWARE = {
    "nvidia-a100-sxm4-80gb": ("a100-80gb", 80 * GIB, "80 GiB (aiconfigurator)"),
    "nvidia-a100-40gb": ("a100-40gb", 40 * GIB, "40 GiB (NVIDIA 'GB' on A100/H100 is GiB)"),
    "nvidia-h100-sxm5-80gb": ("h100-sxm", 80 * GIB, "80 GiB (NVIDIA 'GB' on A100/H100 is GiB)"),
    "nvidia-h100-pcie-80gb": ("h100-pcie", 80 * GIB, "80 GiB (NVIDIA 'GB' on A100/H100 is GiB)"),
    "nvidia-h100-nvl-94gb": ("h100-nvl", 94 * 10**9, "94 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-h200-sxm-141gb": ("h200", 141 * 10**9, "141 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-h20-96gb": ("h20", 96 * 10**9, "96 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-l4": ("l4", 24 * 10**9, "24 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-l40s": ("l40s", 48 * 10**9, "48 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-b200-hgx": ("b200", 180 * GIB, "180 GiB usable (aiconfigurator)"),
    "nvidia-gb200-per-gpu": ("gb200", 189471 * MIB, "189471 MiB (nvidia-smi via aiconfigurator)"),
    "nvidia-b300-hgx": ("b300", 275040 * MIB, "275040 MiB (nvidia-smi via aiconfigurator)"),
    "nvidia-gb300-per-gpu": ("gb300", 284208 * MIB, "284208 MiB (nvidia-smi via aiconfigurator)"),
    "nvidia-rtx-4090": ("rtx-4090", 24 * 10**9, "24 GB decimal (basis unconfirmed; lower reading)"),
    "nvidia-rtx-5090": ("rtx-5090", 32 * 10**9, "32 GB decimal (basis unconfirmed; lower reading)"),
    "amd-mi250x": ("mi250x", 128 * 10**9, "128 GB decimal (basis unconfirmed; lower reading)"),
    "amd-mi300x": ("mi300x", 192 * 10**9, "192 GB decimal (basis unconfirmed; lower reading)"),
    "amd-mi325x": ("mi325x", 256 * 10**9, "256 GB decimal (basis unconfirmed; lower reading)"),
    "amd-mi355x": ("mi355x", 288 * 10**9, "288 GB decimal (basis unconfirmed; lower reading)"),
    "google-tpu-v4": ("tpu-v4", 32 * GIB, "32 GiB (Cloud TPU docs)"),
    "google-tpu-v5e": ("tpu-v5e", 16 * 10**9, "16 GB decimal (Cloud TPU docs say GB)"),
    "google-tpu-v5p": ("tpu-v5p", 95 * GIB, "95 GiB (Cloud TPU docs)"),
    "google-tpu-v6e": ("tpu-v6e", 32 * 10**9, "32 GB decimal (Cloud TPU docs say GB)"),
    "google-tpu7x-ironwood": ("tpu7x", 192 * GIB, "192 GiB (Cloud TPU docs)"),
    "intel-gaudi2": ("gaudi2", 96 * 10**9, "96 GB decimal (basis unconfirmed; lower reading)"),
    "intel-gaudi3": ("gaudi3", 128 * 10**9, "128 GB decimal (basis unconfirmed; lower reading)"),
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

HW_COLUMNS = [
    "id", "aliases", "vendor", "name", "memory", "memory_basis", "bandwidth",
    "peak_flops_bf16", "peak_flops_fp8", "peak_flops_int8", "peak_flops_fp4", "peak_flops_fp32",
    "cache_bytes", "price_per_hour", "source", "notes",
]
MODEL_COLUMNS = [
    "id", "aliases", "family", "hf_repo", "params", "active_params", "layers", "hidden_size",
    "heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size", "attention",
    "kv_lora_rank", "qk_rope_head_dim", "v_head_dim", "experts", "experts_per_token",
    "shared_experts", "moe_intermediate_size", "sliding_window", "local_layers", "max_context",
    "tie_word_embeddings", "source", "notes",
]


def _scaled(text: str, factor: float) -> str:
    return "" if text.strip() == "" else f"{float(text) * factor:.15g}"


def build_hardware(reference: Path) -> list[dict[str, str]]:
    rows = []
    for row in csv.DictReader((reference / "hardware.csv").open(encoding="utf-8")):
        short, memory, basis = HARDWARE[row["id"]]
        rows.append({
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
            "price_per_hour": "",
            "source": row["source"],
            "notes": row["notes"],
        })
    return rows


def build_models(reference: Path) -> list[dict[str, str]]:
    rows = []
    for row in csv.DictReader((reference / "models.csv").open(encoding="utf-8")):
        ref_id = row["id"]
        mla = row["attention"] == "mla"
        rows.append({
            "id": MODEL_IDS.get(ref_id, ref_id),
            "aliases": ref_id if ref_id in MODEL_IDS else "",
            "family": row["family"],
            "hf_repo": row["hf_repo"],
            "params": _scaled(row["params_total_b"], 1e9),
            "active_params": _scaled(row["params_active_b"], 1e9),
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
            "source": row["source"],
            "notes": row["notes"],
        })
    return rows


def write(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str]) -> int:
    reference = Path(argv[1]) if len(argv) > 1 else Path("../shared/reference")
    data = Path(__file__).resolve().parent.parent / "sweeps" / "catalog" / "data"
    write(data / "hardware.csv", HW_COLUMNS, build_hardware(reference))
    write(data / "models.csv", MODEL_COLUMNS, build_models(reference))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
