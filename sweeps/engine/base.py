"""What an analysis is: its dims, its declared output variables and its compute, together.

As an xclim Indicator declares its identifier, units and compute in one place, an ``Analysis``
declares the dims of its table, each output ``Variable`` (name, unit, description, dtype,
rank) and a ``compute`` that turns the grid's inputs (and the outputs of the analyses it
needs) into those variables. The grid is a loop over analyses in dependency order; the export
writes one table per analysis that has one, the memory estimate sums the declared dtypes, the
registry and the docs' column tables read the declarations.

Nothing here imports xarray: the compute functions are duck-typed over the ``Inputs`` they get
(xarray Variables in the grid, floats in the benchmark's scalar loop) and reach the layout and
the compiled roofline pass through ``Inputs.engine``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

DType = Literal[
    "float64", "int64", "bool", "nullbool", "flag", "nullable", "count", "str", "format", "date"
]
"""How a variable is stored: ``flag`` is the int8 bottleneck code (an Enum column in Parquet),
``nullable`` a float64 whose NaN means "none" (a null in Parquet; so is a ``float64``'s NaN),
``count`` a whole number kept as a float64 in the grid (NaN: none) and written as a nullable
Int64 column, ``nullbool`` a yes or no kept as a float64 in the grid (1 yes, 0 no, NaN: none)
and written as a nullable Boolean column, ``str`` a label; ``format`` a number format's name
(a label in the grid, an Enum of the catalog's formats in Parquet); ``date`` an ISO date (a
label in the grid, ``''`` or NaN for none; a Date column in Parquet, null for none)."""

LABELS: tuple[str, ...] = ("str", "format", "date")
"""The ``DType`` s held as labels (Python strings) in the grid: no number to compare."""

ITEMSIZE: dict[str, int] = {
    "float64": 8,
    "int64": 8,
    "bool": 1,
    "nullbool": 8,
    "flag": 1,
    "nullable": 8,
    "count": 8,
    "str": 8,
    "format": 8,
    "date": 8,
}
"""Bytes per value in the grid, by ``DType``."""

COLUMN_ITEMSIZE: dict[str, float] = {
    "float64": 8,
    "int64": 8,
    "bool": 1,
    "nullbool": 1 + 1 / 8,
    "flag": 4,
    "nullable": 8 + 1 / 8,
    "count": 8 + 1 / 8,
    "str": 4,
    "format": 4,
    "date": 4,
}
"""Bytes per row of a Parquet-bound Polars column, by ``DType`` (an Enum holds 4-byte codes at
most, as does a label; a nullable column adds a validity bit)."""

Rank = Literal["low", "point", "full"]
"""How much of its analysis's grid a variable spans: ``full`` every dim, ``point`` every dim but
the device (per-point work that is the same on every device), ``low`` fewer (weights per model
and dtype, caches per context, ...). The memory estimate counts ``full`` and ``point``."""


@dataclass(frozen=True, slots=True)
class Variable:
    """One output quantity (or coordinate) of the grid.

    name : Name in the xarray Dataset
    unit : Unit, SI (``FLOP``, ``byte``, ``s``, ``FLOP/s``, ``1`` for a pure number)
    description : One line, what it means
    dtype : Storage (see ``DType``)
    column : Name of its Parquet column (defaults to ``name``)
    rank : ``low``, ``point`` or ``full`` (see ``Rank``)
    reduces : The dim its compute reduces, if any (``batch`` for the break-even batch, the first
        batch of the axis where speculation stops paying): one point does not define it, so
        the scalar loop of ``sweeps.bench.scalar`` does not check it
    """

    name: str
    unit: str
    description: str
    dtype: DType = "float64"
    column: str = ""
    rank: Rank = "low"
    reduces: str = ""

    @property
    def column_name(self) -> str:
        """The Parquet column name."""
        return self.column or self.name

    @property
    def label(self) -> str:
        """``name [unit]`` with spaces for underscores, for axis titles and tables."""
        return f"{self.name.replace('_', ' ')} [{self.unit}]"


class Engine(Protocol):
    """How an analysis's array work is laid out: the grid's (named dims, a compiled pass) or
    the benchmark's scalar loop (plain calls on floats)."""

    def pointwise(self, function: Callable[..., Any], dims: tuple[str, ...], *args: Any) -> Any:
        """``function(*args)`` laid out in the canonical order of ``dims``."""
        ...

    def roofline(
        self, dims: tuple[str, ...], *, with_tokens: bool, **inputs: Any
    ) -> dict[str, Any]:
        """The roofline of every point over ``dims`` (see ``sweeps.grid.roof``)."""
        ...

    def fits(self, dims: tuple[str, ...], **inputs: Any) -> Any:
        """The roofline's ``feasible`` alone, over the same dims, from the same inputs."""
        ...


@dataclass(frozen=True)
class Inputs:
    """What a compute function reads: coordinates, options, earlier results, the engine.

    ``inputs[name]`` finds an earlier analysis's output (or internal term, a name starting
    with ``_``) first, then a coordinate or derived input of ``sweeps.grid.coords``.
    """

    values: Mapping[str, Any]
    options: Any
    engine: Engine
    results: Mapping[str, Any] = field(default_factory=dict)
    settings: Any = None
    """The settings of the analysis's study (``Sweep.studies[analysis.study]``), or None."""

    def __getitem__(self, name: str) -> Any:
        if name in self.results:
            return self.results[name]
        return self.values[name]


Compute = Callable[[Inputs], dict[str, Any]]
"""An analysis's compute: the values of its declared variables by name, plus internal terms
(names starting with ``_``) that later analyses may read and that are never stored."""


@dataclass(frozen=True)
class Analysis:
    """One unit of computation of the grid, with its table.

    name : Its name; the table ``<name>.parquet`` when ``columns`` is not empty
    dims : Its grid dims, in the canonical order of ``sweeps.studies.AXES``
    variables : The outputs it declares and computes (each declared nowhere else)
    compute : The function computing them (see ``Compute``)
    needs : Analyses whose outputs it reads, run before it
    columns : Value columns of its table, by variable name, in order (its own and those of
        analyses it needs); empty for an analysis without a table of its own
    study : The study it belongs to (``sweeps.studies.STUDIES``): it runs only when the sweep
        has that study, and its compute reads the study's settings; "" for none
    applies : Whether a sweep asks for it, beyond having its study
    rows : A boolean variable of its own naming the grid points that are rows of its table
        (the others stand for nothing: a colocated plan on two different devices); "" for all
    count : The rows its table has in a sweep over its dims there (``rows`` leaves some
        points out: ``validate`` and the plan report what the run writes); None: every point
    whole : Its compute reduces over devices, tp or batch (the best batch, the Pareto front,
        pairs of devices), so a grid streamed in chunks computes it in one piece, never per
        chunk; it must not depend on the context or prompt axes, which that piece drops
    extra_dims : Dims it takes on when the sweep has them (serving and pools take the
        speculative and prefix axes: a speculative step changes the decode step, a hit the
        prefill); ``dims_over`` gives its dims in a grid
    keeps : Dims its compute reduces over along the way (the break-even batch of speculation
        is the first batch of the axis where it stops paying): a chunk never cuts them
    """

    name: str
    dims: tuple[str, ...]
    variables: tuple[Variable, ...]
    compute: Compute
    needs: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    study: str = ""
    applies: Callable[[Any], bool] = field(default=lambda sweep: True)
    rows: str = ""
    whole: bool = False
    keeps: tuple[str, ...] = ()
    extra_dims: tuple[str, ...] = ()
    count: Callable[[Any, tuple[str, ...]], int] | None = None

    def dims_over(self, present: Collection[str], order: Sequence[str]) -> tuple[str, ...]:
        """Its dims, with those of ``extra_dims`` that are in ``present`` (the dims of the grid,
        or of the analyses a sweep asks for), in ``order``: every dim in the canonical order
        of the axes (``sweeps.studies.DIMS``, above the engine: the studies declare theirs)."""
        wanted = {*self.dims, *(d for d in self.extra_dims if d in present)}
        unknown = sorted(wanted.difference(order))
        if unknown:
            msg = f"analysis {self.name!r}: unknown dims {unknown}; the axes are {list(order)}"
            raise KeyError(msg)
        return tuple(dim for dim in order if dim in wanted)

    def wanted(self, sweep: Any) -> bool:
        """Whether ``sweep`` asks for this analysis: it has the study, and ``applies``."""
        studies = getattr(sweep, "studies", {})
        return (not self.study or self.study in studies) and self.applies(sweep)

    @property
    def has_table(self) -> bool:
        """True when the analysis writes a table of its own."""
        return bool(self.columns)
