"""(i) The cold default run (issue 13, item 7): the seed study as a user first runs it.

``sweeps run configs/seed-llama3-8b-h100.toml`` with the outputs the config asks for (its
charts in HTML, PNG and SVG, the report, the default grid file) in a fresh interpreter, timed by
``run_path.measure_run_path`` and split as its manifest records it: import and start-up, the
grid, the export (the tables and the grid file) and the figures (charts and report). The
export and the figures run side by side, so their sum exceeds ``outputs``, their wall time
together.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from sweeps.bench.run_path import measure_run_path

SEED = "seed-llama3-8b-h100.toml"
"""The seed study, shipped as package data (``sweeps/studies``, the repository's ``configs/``)."""


def measure_seed_run() -> dict[str, Any]:
    """``measure_run_path`` of the shipped seed study, plus ``config`` and ``phases_s``: import
    and start-up, grid, export (tables and grid file) and figures [s]."""
    with resources.as_file(resources.files("sweeps") / "studies" / SEED) as path:
        result = measure_run_path(path)
    split = result["split_s"]
    export = sum(s for name, s in split.items() if name.startswith("table_") or name == "grid_file")
    result["config"] = f"configs/{SEED}"
    result["phases_s"] = {
        "import": split["import_and_startup"],
        "grid": split["grid"],
        "export": export,
        "figures": split.get("figures", 0.0),
        "outputs": split.get("outputs", 0.0),
    }
    return result


def format_seed_run(result: dict[str, Any]) -> str:
    """One line: the cold seed run and its four phases."""
    phases = result["phases_s"]
    return (
        f"cold seed run ({result['config']}, default outputs): {result['run_s']:.2f} s; "
        f"import and start-up {phases['import']:.2f} s, grid {phases['grid']:.2f} s, "
        f"export {phases['export']:.2f} s and figures {phases['figures']:.2f} s side by side "
        f"({phases['outputs']:.2f} s together)"
    )
