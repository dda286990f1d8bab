"""The value types of a config: strict scalars with their bounds, and the axis forms.

Strict at the boundary: no bool for a number, no number for a bool, no string for a number,
every float finite, every integer within ``sweeps.limits``. An integer axis is a list
or a range table; a range's length is known, and capped, before it is expanded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sweeps import limits
from sweeps.limits import (
    MAX_AXIS_VALUES,
    MAX_BATCH,
    MAX_COUNT,
    MAX_PARAMS,
    MAX_SPEC_TOKENS,
    MAX_TOKENS,
    MAX_WIDTH,
)
from sweeps.outputs import chart_names

NAME_PATTERN = limits.NAME_PATTERN
"""Every name that becomes a file or folder: ``limits.NAME_PATTERN``."""


def _name(name: str) -> str:
    problem = limits.name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


Name = Annotated[
    str,
    AfterValidator(_name),
    Field(json_schema_extra={"pattern": limits.NAME_PATTERN, "maxLength": limits.NAME_MAX}),
]
"""A model, device or dtype name (a table's key, an axis value): ``limits.name_problem``."""
SweepName = Name
"""The sweep's name: the same rule as every name (``limits.check_name``)."""


def _chart(name: str) -> str:
    """``name`` if it is a registered chart kind (``sweeps.outputs``); else pydantic's
    ``literal_error``, listing the allowed names as a ``Literal`` would."""
    names = chart_names()
    if name not in names:
        expected = ", ".join(map(repr, names[:-1])) + f" or {names[-1]!r}"
        kind, template = "literal_error", "Input should be {expected}"
        raise PydanticCustomError(kind, template, {"expected": expected})
    return name


ChartName = Annotated[
    str,
    AfterValidator(_chart),
    Field(json_schema_extra=lambda schema: schema.update(enum=list(chart_names()))),
]
"""A chart kind's name (``[outputs] charts``): one the registry declares."""

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def _at_least(minimum: float, unit: str, name: str) -> AfterValidator:
    """A check that a positive value is at least ``minimum`` (``limits.<name>``) [``unit``]."""

    def check(value: float) -> float:
        if value < minimum:
            msg = (
                f"{value:g} {unit} is below the slowest allowed; allowed: at least "
                f"{minimum:g} {unit} (limits.{name})"
            )
            raise ValueError(msg)
        return value

    return AfterValidator(check)


def _floor(minimum: float) -> Any:
    """``Field`` of a positive finite float whose JSON Schema says its ``minimum``."""
    return Field(gt=0, allow_inf_nan=False, json_schema_extra={"minimum": minimum})


Rate = Annotated[
    float, _floor(limits.MIN_RATE), _at_least(limits.MIN_RATE, "request/s", "MIN_RATE")
]
"""An arrival rate [request/s]: at least ``limits.MIN_RATE``."""
Bandwidth = Annotated[
    float,
    _floor(limits.MIN_BANDWIDTH),
    _at_least(limits.MIN_BANDWIDTH, "byte/s", "MIN_BANDWIDTH"),
]
"""A bandwidth of a device, tier or link [byte/s]: at least ``limits.MIN_BANDWIDTH``."""
Flops = Annotated[
    float, _floor(limits.MIN_FLOPS), _at_least(limits.MIN_FLOPS, "FLOP/s", "MIN_FLOPS")
]
"""A device's peak [FLOP/s]: at least ``limits.MIN_FLOPS``."""
Fraction = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
DraftTokens = Annotated[int, Field(ge=0, le=MAX_SPEC_TOKENS)]
Efficiency = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
Params = Annotated[float, Field(gt=0, le=MAX_PARAMS, allow_inf_nan=False)]
Batch = Annotated[int, Field(gt=0, le=MAX_BATCH)]
Tokens = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
TokensOrNone = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
Count = Annotated[int, Field(gt=0, le=MAX_COUNT)]
CountOrNone = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]
WidthOrNone = Annotated[int, Field(ge=0, le=MAX_WIDTH)]

AXIS_LENGTH = Field(min_length=1, max_length=MAX_AXIS_VALUES)
"""An axis written as a list: one value at least, ``MAX_AXIS_VALUES`` at most."""

ComputeDType = Literal["bf16", "fp8", "int8", "fp4", "fp32"]
"""The compute dtypes a device may carry a peak for (``sweeps.catalog.COMPUTE_DTYPES``)."""
AUTO = "auto"
"""``options.compute_dtype`` default: each weight format's own GEMM format."""


def _nul_free(value: Any) -> bool:
    """Whether no string in ``value`` (a string, or lists and tables of them) holds a NUL."""
    stack = [value]
    while stack:  # a loop, not recursion: linear in the value, whatever its depth
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return False
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return True


class Strict(BaseModel):
    """Base of every table: unknown keys are errors, values are never converted, and no
    string anywhere holds a NUL (a path or a title with one cannot be written: refused here,
    for every key a table declares, before any work)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if not _nul_free(value):
            msg = "holds a NUL character (\\x00), which no file name or text may hold"
            raise ValueError(msg)
        return value


class AxisRange(Strict):
    """An integer axis written as a range: linear with ``step``, or geometric with ``factor``."""

    maximum: ClassVar[int] = MAX_TOKENS
    start: Tokens = Field(description="First value")
    stop: Tokens = Field(description="Last value, included where the range falls on it")
    step: Annotated[int, Field(ge=1, le=MAX_TOKENS)] = Field(default=1, description="Linear step")
    geometric: bool = Field(default=False, description="Multiply by factor instead of adding step")
    factor: Annotated[int, Field(ge=2, le=MAX_TOKENS)] = Field(
        default=2, description="Geometric ratio"
    )

    @model_validator(mode="after")
    def _ordered(self) -> AxisRange:
        if self.stop < self.start:
            msg = f"stop ({self.stop}) is below start ({self.start})"
            raise ValueError(msg)
        if self.count > MAX_AXIS_VALUES:
            msg = (
                f"the range holds {self.count:,} values; an axis holds at most "
                f"{MAX_AXIS_VALUES:,} (limits.MAX_AXIS_VALUES)"
            )
            raise ValueError(msg)
        return self

    @property
    def count(self) -> int:
        """Values in the range, computed without expanding it [1]."""
        if not self.geometric:
            return (self.stop - self.start) // self.step + 1
        count, value = 0, self.start
        while value <= self.stop:  # at most log2(MAX_TOKENS) = 24 turns
            count, value = count + 1, value * self.factor
        return count

    def values(self) -> list[int]:
        """The axis values, ``start`` up to and including ``stop`` where it falls on the range."""
        if not self.geometric:
            return list(range(self.start, self.stop + 1, self.step))
        return [self.start * self.factor**k for k in range(self.count)]


class BatchRange(AxisRange):
    """A batch axis written as a range."""

    maximum: ClassVar[int] = MAX_BATCH
    start: Batch = Field(description="First batch")
    stop: Batch = Field(description="Last batch, included where the range falls on it")


class CountRange(AxisRange):
    """A tensor-parallel axis written as a range."""

    maximum: ClassVar[int] = MAX_COUNT
    start: Count = Field(description="First value")
    stop: Count = Field(description="Last value, included where the range falls on it")


def _axis_form(value: object) -> str | None:
    return "@range" if isinstance(value, dict) else "@list" if isinstance(value, list) else None


def _int_axis(value: Any, table: type[AxisRange], noun: str) -> Any:
    """An integer axis type: a list of ``value``, or a ``table`` range. Union branches are
    tagged ``@...`` so that errors name the branch that matches what the user wrote."""
    return Annotated[
        Annotated[Annotated[list[value], AXIS_LENGTH], Tag("@list")]
        | Annotated[table, Tag("@range")],
        Discriminator(
            _axis_form,
            custom_error_type="axis_form",
            custom_error_message=f"must be a list of {noun} or a range table "
            "such as { start = 1, stop = 1024, geometric = true }",
        ),
    ]


if TYPE_CHECKING:
    TokenAxis = list[int] | AxisRange
    BatchAxis = list[int] | AxisRange
    CountAxis = list[int] | AxisRange
else:
    TokenAxis = _int_axis(Tokens, AxisRange, f"positive integers (at most {MAX_TOKENS:,})")
    BatchAxis = _int_axis(Batch, BatchRange, f"positive integers (at most {MAX_BATCH:,})")
    CountAxis = _int_axis(Count, CountRange, f"positive integers (at most {MAX_COUNT:,})")

NameAxis = Annotated[list[Name], AXIS_LENGTH]


def _kv_form(value: object) -> str:
    return "@native" if isinstance(value, str) else "@count"


KvHeadsAxis = Annotated[
    list[
        Annotated[
            Annotated[Literal["native"], Tag("@native")] | Annotated[Count, Tag("@count")],
            Discriminator(_kv_form),
        ]
    ],
    AXIS_LENGTH,
]
