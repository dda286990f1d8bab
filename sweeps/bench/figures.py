"""(o) figures that scale with the question (issue 45, item 4): a cold run of a grid of many
model-device pairs with its default outputs against the same run with ``charts = []``.

Both runs are ``sweeps run`` in a fresh interpreter (``run_path.RUN``), the grid file and the
tables the same; only the figures differ. Past ``sweeps.outputs.PAIRS_DRAWN`` pairs the default
draws the figures across the pairs, so the ratio stays near one however many pairs the grid
has (issue 45's target: within 1.5x at 1e7 points; 181 s against 14.5 s at 1e6 points before).
The full grid has every catalog model without MLA on every device (about 900 pairs, 1e7
points); ``quick``, three models on nine devices (27 pairs, just past the bound).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

BUDGET = 1.5
"""What the default outputs may cost against ``charts = []`` [ratio] (issue 45)."""

GRID = """[sweep]
name = "{name}"
[axes]
model = {models}
hardware = {hardware}
batch = {{ start = 1, stop = {batch} }}
context = [256, 1024, 4096, 16384, 65536]
kv_dtype = ["bf16", "fp8"]
"""
"""The grid: every output at its default, apart from ``[outputs] charts`` where appended."""


def grid_text(quick: bool) -> str:
    """The config of the grid (module docstring)."""
    from sweeps.catalog import load_catalog, unique

    catalog = load_catalog()
    models = [m.id for m in unique(catalog.models) if not m.is_mla]
    hardware = [h.id for h in unique(catalog.hardware)]
    models, hardware = (models[:3], hardware[:9]) if quick else (models, hardware)
    return GRID.format(
        name="bench-figures",
        models=json.dumps(models),
        hardware=json.dumps(hardware),
        batch=16 if quick else 512,
    )


def _cold(text: str, folder: Path) -> tuple[float, dict[str, Any]]:
    """Seconds of a cold ``sweeps run`` of ``text`` and the manifest it wrote."""
    from sweeps.bench.run_path import RUN, _python

    config = folder / "config.toml"
    config.write_text(text, "utf-8")
    out = folder / "out"
    seconds, _ = _python(["-c", RUN, str(config), str(out), "0", ""])
    (result,) = (p for p in out.iterdir() if not p.name.startswith("."))
    return seconds, json.loads((result / "manifest.json").read_text("utf-8"))


def measure_default_outputs(quick: bool = False) -> dict[str, Any]:
    """Seconds of the cold run with the default outputs and with ``charts = []``, their ratio
    against ``BUDGET``, the grid's points and pairs, the figures' own time and the files the
    default wrote."""
    from sweeps.config import parse_config

    text = grid_text(quick)
    sweep = parse_config(text)
    with tempfile.TemporaryDirectory(prefix="sweeps-bench-figures-") as scratch:
        default = Path(scratch) / "default"
        bare = Path(scratch) / "bare"
        default.mkdir()
        bare.mkdir()
        default_s, manifest = _cold(text, default)
        bare_s, _ = _cold(text + "[outputs]\ncharts = []\n", bare)
    ratio = default_s / bare_s
    return {
        "points": sum(manifest["rows"].get(t, 0) for t in ("decode", "prefill")),
        "pairs": len(sweep.models) * len(sweep.hardware),
        "default_s": default_s,
        "no_charts_s": bare_s,
        "figures_s": float(manifest["timings_s"].get("figures", 0.0)),
        "chart_files": sum(f.startswith("charts/") for f in manifest["files"]),
        "ratio": ratio,
        "budget": BUDGET,
        "within_budget": ratio <= BUDGET,
    }


def format_default_outputs(result: dict[str, Any]) -> str:
    """The line ``sweeps bench`` prints for ``measure_default_outputs``."""
    met = "met" if result["within_budget"] else "MISSED"
    return (
        f"default outputs: a cold run of {result['points']:,} points ({result['pairs']} "
        f"model-device pairs) in {result['default_s']:.1f} s (figures {result['figures_s']:.1f} "
        f"s, {result['chart_files']:,} chart files) against {result['no_charts_s']:.1f} s with "
        f"charts = []: {result['ratio']:.2f}x (budget {result['budget']:.1f}x {met})"
    )
