"""Views of a result, read by the CLI, the charts and users alike: the summary of a sweep
(``summary.summarize``, one row per configuration) and the serving summary of its plans
(``plans.cheapest_plans``). They read a grid or its tables and compute nothing the grid does
not hold; they sit above the grid and the export, below the charts and the CLI.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sweeps.views.plans import cheapest_plans
    from sweeps.views.summary import summarize

_LAZY = {"cheapest_plans": "sweeps.views.plans", "summarize": "sweeps.views.summary"}


def __getattr__(name: str) -> Any:
    """Import the heavy modules (xarray, Polars) only when one of their names is asked for."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'sweeps.views' has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = ["cheapest_plans", "summarize"]
