"""The registry of everything the grid holds, assembled from the declarations.

Nothing is declared here: the axes come from ``sweeps.axes.AXES``, the axis coordinates from
``sweeps.grid.coords.AXIS_COORDS``, the model and device specs from the records'
``MODEL_SPECS``/``HARDWARE_SPECS``, the outputs from the analyses. Units and descriptions flow
from it into xarray attrs, Parquet metadata, chart axis titles and the docs' column tables;
a test fails if a variable of the grid is missing.
"""

from __future__ import annotations

from sweeps.axes import AXES, Axis
from sweeps.catalog.records import HARDWARE_SPECS, MODEL_SPECS, Spec
from sweeps.grid.analyses import ANALYSES, Variable
from sweeps.grid.coords import AXIS_COORDS, DEVICE_COORDS

BOTTLENECK_FLAGS = ("memory-bound", "compute-bound")
"""Meaning of the int8 ``bottleneck`` codes: 0 memory-bound, 1 compute-bound."""


def axis_variable(axis: Axis) -> Variable:
    """The registry entry of an axis (its dim coordinate)."""
    return Variable(
        axis.dim,
        axis.unit,
        axis.description,
        "int64" if axis.kind == "size" else "str",
        axis.column,
    )


def spec_variable(spec: Spec) -> Variable:
    """The registry entry of a model or device spec (a coordinate of the grid)."""
    return Variable(spec.name, spec.unit, spec.description, spec.dtype, spec.column)


VARIABLES: tuple[Variable, ...] = (
    *(axis_variable(axis) for axis in AXES),
    *AXIS_COORDS,
    *(spec_variable(spec) for spec in MODEL_SPECS),
    *(spec_variable(spec) for spec in HARDWARE_SPECS),
    *DEVICE_COORDS,
    *(variable for analysis in ANALYSES for variable in analysis.variables),
)
"""Every variable and coordinate, axes first, then specs, then each analysis's outputs."""

REGISTRY: dict[str, Variable] = {variable.name: variable for variable in VARIABLES}
"""Every entry of ``VARIABLES`` by name (names are unique; a test checks it)."""
