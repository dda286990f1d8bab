"""sweeps: vectorized roofline sweeps of LLM decode and prefill.

For a model on a device, at a batch, context, number of KV heads and KV precision: is decode
limited by memory bandwidth or by compute, how close is it to its asymptotic ceiling
``2 P / KV_seq``, and where does memory run out first? Whole grids at once, as xarray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweeps.distribution import VERSION as __version__  # noqa: F401  (in __all__)

if TYPE_CHECKING:  # the names __getattr__ serves, for type checkers (aliases: re-exported)
    from sweeps.charts import ai_vs_batch_chart as ai_vs_batch_chart
    from sweeps.charts import bottleneck_chart as bottleneck_chart
    from sweeps.charts import ceiling_chart as ceiling_chart
    from sweeps.charts import output_hooks as output_hooks
    from sweeps.charts import roofline_chart as roofline_chart
    from sweeps.config import Sweep as Sweep
    from sweeps.config import load_config as load_config
    from sweeps.config import parse_config as parse_config
    from sweeps.errors import CatalogError as CatalogError
    from sweeps.errors import ConfigError as ConfigError
    from sweeps.errors import ImportModelError as ImportModelError
    from sweeps.errors import OutputExistsError as OutputExistsError
    from sweeps.errors import SweepsError as SweepsError
    from sweeps.export import to_parquet as to_parquet
    from sweeps.grid import build_grid as build_grid
    from sweeps.physics import classify_llm_phases as classify_llm_phases
    from sweeps.physics import compute_arithmetic_intensity as compute_arithmetic_intensity
    from sweeps.pipeline import run as run
    from sweeps.pipeline import run_to_folder as run_to_folder
    from sweeps.pipeline.points import point as point
    from sweeps.pipeline.points import points as points
    from sweeps.views import cheapest_plans as cheapest_plans
    from sweeps.views import summarize as summarize

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
    "point": "sweeps.pipeline.points",
    "points": "sweeps.pipeline.points",
    "run_to_folder": "sweeps.pipeline",
    "to_parquet": "sweeps.export",
    "build_grid": "sweeps.grid",
    "summarize": "sweeps.views",
    "cheapest_plans": "sweeps.views",
    "ceiling_chart": "sweeps.charts",
    "bottleneck_chart": "sweeps.charts",
    "ai_vs_batch_chart": "sweeps.charts",
    "roofline_chart": "sweeps.charts",
    "output_hooks": "sweeps.charts",
}


_SUBPACKAGES = frozenset(
    {"physics", "catalog", "config", "grid", "export", "pipeline", "views", "charts", "cli"}
)
"""Layers reachable as ``sweeps.<name>`` after a bare ``import sweeps``, imported on first use."""


def __getattr__(name: str) -> Any:
    """Import each layer only when asked for, so that ``sweeps --help`` stays fast."""
    import importlib

    module = _LAZY.get(name)
    if module is not None:
        return getattr(importlib.import_module(module), name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    msg = f"module 'sweeps' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = sorted([*_LAZY, "__version__"])


def __dir__() -> list[str]:
    """The public API and the layers, without importing any of them."""
    return sorted({*__all__, *_SUBPACKAGES})
