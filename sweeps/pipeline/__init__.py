"""Orchestration: evaluate a sweep, stream it, write its folder and manifest, plan it.

Below the CLI, above the grid and the export: the run layer calls ``build_grid`` and hands the
results to the export, which only writes. (Named ``pipeline``, not ``run``: a subpackage
``sweeps.run`` would shadow the function ``sweeps.run`` once imported.)
"""

from typing import TYPE_CHECKING, Any

from sweeps.pipeline.plan import Plan, plan

if TYPE_CHECKING:
    from sweeps.pipeline.execute import RunResult, check_targets, run, run_to_folder
    from sweeps.pipeline.hook import Hook

_LAZY = {
    "Hook": "sweeps.pipeline.hook",
    "RunResult": "sweeps.pipeline.execute",
    "check_targets": "sweeps.pipeline.execute",
    "run": "sweeps.pipeline.execute",
    "run_to_folder": "sweeps.pipeline.execute",
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
    "check_targets",
    "plan",
    "run",
    "run_to_folder",
]
