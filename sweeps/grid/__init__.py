"""The sweep grid: coordinates from the config, the analyses over named dimensions, the registry.

``build_grid`` loads xarray, so it is imported on first use: the registry, the analyses'
declarations, the memory model and the chunk planner stay light for ``sweeps validate``.
"""

from typing import TYPE_CHECKING, Any

from sweeps.engine.decode import DIMS as DECODE_DIMS
from sweeps.engine.prefill import DIMS as PREFILL_DIMS
from sweeps.grid.analyses import ANALYSES, TABLES, Analysis, Variable
from sweeps.grid.variables import BOTTLENECK_FLAGS, REGISTRY, VARIABLES

if TYPE_CHECKING:
    from sweeps.grid.build import build_grid


def __getattr__(name: str) -> Any:
    """Import ``sweeps.grid.build`` (and xarray) only when ``build_grid`` is asked for."""
    if name == "build_grid":
        from sweeps.grid import build

        return build.build_grid
    msg = f"module 'sweeps.grid' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "ANALYSES",
    "BOTTLENECK_FLAGS",
    "DECODE_DIMS",
    "PREFILL_DIMS",
    "REGISTRY",
    "TABLES",
    "VARIABLES",
    "Analysis",
    "Variable",
    "build_grid",
]
