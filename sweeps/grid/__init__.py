"""The sweep grid: coordinates from the config, physics over named dimensions, the registry."""

from sweeps.grid.build import DECODE_DIMS, PREFILL_DIMS, build_grid
from sweeps.grid.variables import BOTTLENECK_FLAGS, REGISTRY, VARIABLES, Variable, by_phase, variable

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
