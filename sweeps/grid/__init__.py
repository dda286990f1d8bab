"""The sweep grid: coordinates from the config, physics over named dimensions, the registry.

``build_grid`` and the dimension names load xarray, so they are imported on first use: the
registry and the chunk planner (``sweeps.grid.chunks``) stay light for ``sweeps validate``.
"""

from typing import TYPE_CHECKING, Any

from sweeps.grid.variables import (
    BOTTLENECK_FLAGS,
    REGISTRY,
    VARIABLES,
    Variable,
    by_phase,
    variable,
)

if TYPE_CHECKING:
    from sweeps.grid.build import DECODE_DIMS, PREFILL_DIMS, build_grid

_LAZY = ("DECODE_DIMS", "PREFILL_DIMS", "build_grid")


def __getattr__(name: str) -> Any:
    """Import ``sweeps.grid.build`` (and xarray) only when one of its names is asked for."""
    if name in _LAZY:
        from sweeps.grid import build

        return getattr(build, name)
    msg = f"module 'sweeps.grid' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "BOTTLENECK_FLAGS",
    "DECODE_DIMS",
    "PREFILL_DIMS",
    "REGISTRY",
    "VARIABLES",
    "Variable",
    "build_grid",
    "by_phase",
    "variable",
]
