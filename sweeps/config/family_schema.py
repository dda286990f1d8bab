"""A ``[models.*]`` table that scales a family: ``base`` and a ``params`` list or range.

``[models.llama-sizes]`` with ``base = "llama-3-8b"`` and ``params = { start = 1e9, stop =
1e12, geometric = true }`` is, on the model axis, one model per size (``llama-sizes-1b``,
``llama-sizes-2b``, ...), shaped by the family's rule (``sweeps.catalog.family``). Whether
``base`` has a family and the sizes lie within its range is checked in ``resolve``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import ConfigDict, Discriminator, Field, Tag, model_validator

from sweeps.fields import Name, Params, PositiveFloat, Strict

MAX_SIZES = 64
"""The most sizes one family table expands into [1]."""


class ParamsRange(Strict):
    """Sizes written as a range: geometric by ``factor``, or linear by ``step``."""

    start: Params = Field(description="Smallest size [1]")
    stop: Params = Field(description="Largest size [1], included where the range falls on it")
    geometric: bool = Field(default=False, description="Multiply by factor instead of adding step")
    factor: Annotated[float, Field(gt=1, le=1e6, allow_inf_nan=False)] = Field(
        default=2.0, description="Geometric ratio (> 1)"
    )
    step: PositiveFloat | None = Field(
        default=None, description="Linear step [1] (needed unless geometric)"
    )

    @model_validator(mode="after")
    def _ordered(self) -> ParamsRange:
        if self.stop < self.start:
            msg = f"stop ({self.stop:g}) is below start ({self.start:g})"
            raise ValueError(msg)
        if not self.geometric and self.step is None:
            msg = "a linear range needs a step (or give geometric = true)"
            raise ValueError(msg)
        if self.count > MAX_SIZES:
            msg = f"the range holds {self.count:,} sizes; a family table holds at most {MAX_SIZES}"
            raise ValueError(msg)
        return self

    @property
    def count(self) -> int:
        """Sizes in the range, computed without expanding it [1]."""
        slack = 1e-9  # a stop the range falls on is kept despite rounding
        if self.geometric:
            return math.floor(math.log(self.stop / self.start) / math.log(self.factor) + slack) + 1
        step = float(self.step or 1.0)
        return min(MAX_SIZES + 1, math.floor((self.stop - self.start) / step + slack) + 1)

    def values(self) -> list[float]:
        """The sizes, ``start`` up to ``stop`` [1]."""
        if self.geometric:
            return [self.start * self.factor**k for k in range(self.count)]
        return [self.start + k * float(self.step or 1.0) for k in range(self.count)]


def _params_form(value: object) -> str | None:
    return "@range" if isinstance(value, dict) else "@list" if isinstance(value, list) else None


SizesAxis = Annotated[
    Annotated[Annotated[list[Params], Field(min_length=1, max_length=MAX_SIZES)], Tag("@list")]
    | Annotated[ParamsRange, Tag("@range")],
    Discriminator(
        _params_form,
        custom_error_type="params_form",
        custom_error_message="must be a list of parameter counts or a range table such as "
        "{ start = 1e9, stop = 1e12, geometric = true }",
    ),
]


class FamilyTable(Strict):
    """Models of one family scaled by parameter count (docs/model-size.md)."""

    model_config = ConfigDict(**Strict.model_config, title="with base: a family's sizes")

    base: Name = Field(description="A catalog model of the family to scale (llama-3-8b, ...)")
    params: SizesAxis = Field(description="Sizes [1]: a list, or a range table")

    def sizes(self) -> list[float]:
        """The sizes asked for, in the order given [1]."""
        given = self.params
        return given.values() if isinstance(given, ParamsRange) else list(given)


def model_form(value: Any) -> str:
    return "@family" if isinstance(value, dict) and "base" in value else "@shape"
