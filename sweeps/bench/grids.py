"""The bench's two grids as config texts: the engine grid and the larger end-to-end grid."""

from __future__ import annotations

import json

CONTEXTS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]


def _config(
    name: str,
    models: list[str],
    hardware: list[str],
    batch: int,
    contexts: list[int],
    kv_dtypes: list[str],
) -> str:
    return "\n".join(
        [
            "[sweep]",
            f'name = "{name}"',
            "[axes]",
            f"model = {json.dumps(models)}",
            f"hardware = {json.dumps(hardware)}",
            f"batch = {{ start = 1, stop = {batch} }}",
            f"context = {json.dumps(contexts)}",
            'kv_heads = ["native", 1]',
            f"kv_dtype = {json.dumps(kv_dtypes)}",
            'weight_dtype = ["bf16"]',
            "[outputs]",
            "charts = []",
            'grid = "none"',
            "",
        ]
    )


def bench_configs(quick: bool) -> tuple[str, str]:
    """Config texts of the engine grid and of the larger end-to-end grid."""
    from sweeps.catalog import load_catalog, unique

    catalog = load_catalog()
    models = [m.id for m in unique(catalog.models) if not m.is_mla]
    hardware = [h.id for h in unique(catalog.hardware)]
    two = ["bf16", "fp8"]
    if quick:
        return (
            _config("bench-quick", models[:3], hardware[:3], 64, CONTEXTS[:4], two),
            _config("bench-quick-e2e", models[:4], hardware[:4], 128, CONTEXTS[:4], two),
        )
    return (
        _config("bench-engine", models, hardware, 512, CONTEXTS[:8], two),
        _config("bench-e2e", models, hardware, 1024, CONTEXTS, [*two, "int4"]),
    )
