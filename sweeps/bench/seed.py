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
from pathlib import Path
from typing import Any

from sweeps.bench.run_path import measure_run_path

SEED = "seed-llama3-8b-h100.toml"
"""The seed example, shipped as package data (``sweeps/examples``, a link to ``configs/``)."""


WARM_REPEATS = 3
"""Times the seed's figures are drawn once warm (``figures_warm_s``)."""


def measure_warm_figures(path: Path, repeats: int = WARM_REPEATS) -> list[float]:
    """Seconds to write the figures and report of the study at ``path`` once warm: in this
    process, after a first run has started the drawing processes and read the cached bundle,
    ``repeats`` times [s]."""
    from sweeps.charts.hooks import time_figures
    from sweeps.config import load_config
    from sweeps.grid.build import build_grid

    sweep = load_config(path)
    ds = build_grid(sweep)
    time_figures(ds, sweep)  # the warm-up
    return [time_figures(ds, sweep)["figures"] for _ in range(repeats)]


def measure_seed_run(repeats: int = WARM_REPEATS) -> dict[str, Any]:
    """``measure_run_path`` of the shipped seed study, plus ``config`` and ``phases_s``: import
    and start-up, grid, export (tables and grid file) and figures [s], and ``figures_warm_s``,
    its figures drawn again once warm, ``repeats`` times (``measure_warm_figures``)."""
    with resources.as_file(resources.files("sweeps") / "examples" / SEED) as path:
        result = measure_run_path(path)
        result["figures_warm_s"] = measure_warm_figures(path, repeats)
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
    """One line: the cold seed run, its four phases, and its figures once warm."""
    phases, warm = result["phases_s"], result["figures_warm_s"]
    return (
        f"cold seed run ({result['config']}, default outputs): {result['run_s']:.2f} s; "
        f"import and start-up {phases['import']:.2f} s, grid {phases['grid']:.2f} s, "
        f"export {phases['export']:.2f} s and figures {phases['figures']:.2f} s side by side "
        f"({phases['outputs']:.2f} s together); figures once warm "
        f"{min(warm):.2f} s ({min(warm):.2f}-{max(warm):.2f} s over {len(warm)})"
    )
