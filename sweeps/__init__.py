"""sweeps: vectorized roofline sweeps of LLM decode and prefill.

For a model on a device, at a batch, context, number of KV heads and KV precision: is decode
limited by memory bandwidth or by compute, how close is it to its asymptotic ceiling
``2 P / KV_seq``, and where does memory run out first? Whole grids at once, as xarray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from sweeps.charts import ai_vs_batch_chart as ai_vs_batch_chart
    from sweeps.charts import bottleneck_chart as bottleneck_chart
    from sweeps.charts import ceiling_chart as ceiling_chart
    from sweeps.charts import output_hooks as output_hooks
    from sweeps.charts import roofline_chart as roofline_chart
    from sweeps.config import Sweep, load_config, parse_config
    from sweeps.errors import (
        CatalogError,
        ConfigError,
        ImportModelError,
        OutputExistsError,
        SweepsError,
    )
    from sweeps.export import to_parquet
    from sweeps.grid import build_grid
    from sweeps.physics import classify_llm_phases, compute_arithmetic_intensity
    from sweeps.pipeline import run, run_to_folder, summarize

_LAZY = {
    "Sweep": "sweeps.config",
    "load_config": "sweeps.config",
    "parse_config": "sweeps.config",
    "CatalogError": "sweeps.errors",
    "ConfigError": "sweeps.errors",
    "ImportModelError": "sweeps.errors",
    "OutputExistsError": "sweeps.errors",
    "SweepsError": "sweeps.errors",
    "classify_llm_phases": "sweeps.physics",
    "compute_arithmetic_intensity": "sweeps.physics",
    "run": "sweeps.pipeline",
    "run_to_folder": "sweeps.pipeline",
    "to_parquet": "sweeps.export",
    "build_grid": "sweeps.grid",
    "summarize": "sweeps.pipeline",
    "ceiling_chart": "sweeps.charts",
    "bottleneck_chart": "sweeps.charts",
    "ai_vs_batch_chart": "sweeps.charts",
    "roofline_chart": "sweeps.charts",
    "output_hooks": "sweeps.charts",
}


def __getattr__(name: str) -> Any:
    """Import each layer only when asked for, so that ``sweeps --help`` stays fast."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'sweeps' has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "CatalogError",
    "ConfigError",
    "ImportModelError",
    "OutputExistsError",
    "Sweep",
    "SweepsError",
    "__version__",
    "build_grid",
    "classify_llm_phases",
    "compute_arithmetic_intensity",
    "load_config",
    "parse_config",
    "run",
    "run_to_folder",
    "summarize",
    "to_parquet",
]
