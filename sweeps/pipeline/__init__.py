"""Orchestration: evaluate a sweep, stream it, write its folder and manifest, plan and summarize.

Below the CLI, above the grid and the export: the run layer calls ``build_grid`` and hands the
results to the export, which only writes. (Named ``pipeline``, not ``run``: a subpackage
``sweeps.run`` would shadow the function ``sweeps.run`` once imported.)
"""

from typing import TYPE_CHECKING, Any

from sweeps.pipeline.plan import Plan, plan

if TYPE_CHECKING:
    from sweeps.pipeline.execute import Hook, RunResult, check_targets, run, run_to_folder
    from sweeps.pipeline.plans import cheapest_plans
    from sweeps.pipeline.summary import summarize

_LAZY = {
    "Hook": "sweeps.pipeline.execute",
    "RunResult": "sweeps.pipeline.execute",
    "cheapest_plans": "sweeps.pipeline.plans",
    "check_targets": "sweeps.pipeline.execute",
    "run": "sweeps.pipeline.execute",
    "run_to_folder": "sweeps.pipeline.execute",
    "summarize": "sweeps.pipeline.summary",
}


def __getattr__(name: str) -> Any:
    """Import the heavy modules (xarray, Polars) only when one of their names is asked for."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'sweeps.pipeline' has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "Hook",
    "Plan",
    "RunResult",
    "cheapest_plans",
    "check_targets",
    "plan",
    "run",
    "run_to_folder",
    "summarize",
]
