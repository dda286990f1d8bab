"""The TOML schema of a sweep config, as pydantic models: types, ranges and unknown keys.

Cross-references (catalog ids, kv_heads dividing a model's heads, dtypes a device lacks) are
checked afterwards in ``resolve``, where the catalog is at hand.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)

from sweeps.charts.kinds import CHART_KINDS, ChartKind

__all__ = ["CHART_KINDS", "ChartKind"]

NAME_PATTERN = r"^[a-z0-9._-]+$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
PositiveInt = Annotated[int, Field(strict=True, gt=0)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
Fraction = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]

FIGURE_FORMATS = ("html", "png", "svg", "pdf")


class Strict(BaseModel):
    """Base of every table: unknown keys are errors, values are not silently converted."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class AxisRange(Strict):
    """An integer axis written as a range: linear with ``step``, or geometric with ``factor``."""

    start: PositiveInt
    stop: PositiveInt
    step: PositiveInt = 1
    geometric: bool = False
    factor: Annotated[int, Field(strict=True, ge=2)] = 2

    @model_validator(mode="after")
    def _ordered(self) -> AxisRange:
        if self.stop < self.start:
            msg = f"stop ({self.stop}) is below start ({self.start})"
            raise ValueError(msg)
        return self

    def values(self) -> list[int]:
        """The axis values, ``start`` up to and including ``stop`` where it falls on the range."""
        if not self.geometric:
            return list(range(self.start, self.stop + 1, self.step))
        out, value = [], self.start
        while value <= self.stop:
            out.append(value)
            value *= self.factor
        return out


def _axis_form(value: object) -> str | None:
    return "@range" if isinstance(value, dict) else "@list" if isinstance(value, list) else None


def _kv_form(value: object) -> str:
    return "@native" if isinstance(value, str) else "@count"


IntAxis = Annotated[
    Annotated[Annotated[list[PositiveInt], Field(min_length=1)], Tag("@list")]
    | Annotated[AxisRange, Tag("@range")],
    Discriminator(
        _axis_form,
        custom_error_type="axis_form",
        custom_error_message="must be a list of positive integers or a range table "
        "such as { start = 1, stop = 1024, geometric = true }",
    ),
]
"""An integer axis: a list, or a range table. Union branches are tagged ``@...`` so that
errors name the branch that matches what the user wrote, not both."""

NameAxis = Annotated[list[Name], Field(min_length=1)]
KvHeadsAxis = Annotated[
    list[
        Annotated[
            Annotated[Literal["native"], Tag("@native")] | Annotated[PositiveInt, Tag("@count")],
            Discriminator(_kv_form),
        ]
    ],
    Field(min_length=1),
]


class SweepTable(Strict):
    name: Name
    title: str = ""


class Axes(Strict):
    model: NameAxis
    hardware: NameAxis
    batch: IntAxis = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    context: IntAxis = [512, 2048, 8192, 32768]
    kv_heads: KvHeadsAxis = ["native"]
    kv_dtype: NameAxis = ["bf16"]
    weight_dtype: NameAxis = ["bf16"]
    prompt: IntAxis | None = None
    tp: IntAxis = [1]


class Options(Strict):
    attention_flops: bool = True
    memory_reserve: Fraction = 0.10
    ceiling_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.90
    compute_dtype: Name = "bf16"
    bandwidth_efficiency: Annotated[float, Field(gt=0, le=1)] = 1.0
    compute_efficiency: Annotated[float, Field(gt=0, le=1)] = 1.0
    activation_bytes: PositiveFloat = 2.0
    max_chart_cells: PositiveInt = 4500


class ModelTable(Strict):
    """A custom architecture. Sizes are counts; ``params`` may be a float such as ``8.03e9``.

    ``config`` names a Hugging Face ``config.json`` (relative to the config file): the shapes
    come from it, and ``params``, ``layers``, ``heads``, ``kv_heads`` and ``head_dim`` may then
    be left out; any field given next to it overrides the imported value. Without ``config``
    those five are required (checked in ``resolve``, which names the missing key).
    """

    config: str | None = None
    params: PositiveFloat | None = None
    layers: PositiveInt | None = None
    heads: PositiveInt | None = None
    kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    active_params: PositiveFloat | None = None
    hidden_size: NonNegativeInt = 0
    attention: Literal["mha", "gqa", "mqa", "mla", "gqa+sliding"] | None = None
    kv_lora_rank: NonNegativeInt = 0
    qk_rope_head_dim: NonNegativeInt = 0
    v_head_dim: NonNegativeInt = 0
    experts: PositiveInt = 1
    experts_per_token: PositiveInt = 1
    sliding_window: NonNegativeInt = 0
    local_layers: NonNegativeInt = 0
    max_context: NonNegativeInt = 0
    source: str = "custom table in the config file"


class PeakFlops(Strict):
    bf16: PositiveFloat
    fp8: PositiveFloat | None = None
    int8: PositiveFloat | None = None
    fp4: PositiveFloat | None = None
    fp32: PositiveFloat | None = None


class HardwareTable(Strict):
    """A custom device, SI units: FLOP/s, bytes/s, bytes."""

    peak_flops: PeakFlops
    bandwidth: PositiveFloat
    memory: PositiveFloat
    name: str = ""
    vendor: str = ""
    price_per_hour: PositiveFloat | None = None
    source: str = "custom table in the config file"


class DTypeTable(Strict):
    """A custom number format: ``bits`` per element plus a scale per ``group_size`` elements."""

    bits: PositiveFloat
    group_size: NonNegativeInt = 0
    scale_bytes: Annotated[float, Field(ge=0)] = 0.0
    compute: Literal["bf16", "fp8", "int8", "fp4", "fp32"] = "bf16"
    description: str = "custom table in the config file"


class Figures(Strict):
    """``[outputs.figures]``: which tp and weight dtype each chart shows, and its size.

    ``pick = "smallest-fit"`` draws each model and device at the smallest tp, then the first
    weight dtype, at which the model fits (max batch >= 1); ``"first"`` at the axes' first.
    ``tp`` and ``weight_dtype`` fix that facet (checked against the axes in ``resolve``).
    ``width``: a screen page, or a single (3.5 in) or double (7 in) print column at 300 dpi.
    """

    pick: Literal["smallest-fit", "first"] = "smallest-fit"
    tp: PositiveInt | None = None
    weight_dtype: Name | None = None
    width: Literal["screen", "single-column", "double-column"] = "screen"


class Outputs(Strict):
    charts: list[ChartKind] = list(CHART_KINDS)
    formats: list[Literal["html", "png", "svg", "pdf"]] = ["html"]
    figures: Figures = Figures()
    grid: Literal["netcdf", "none"] = "netcdf"


class ConfigFile(Strict):
    """The whole file."""

    sweep: SweepTable
    axes: Axes
    options: Options = Options()
    models: dict[Name, ModelTable] = {}
    hardware: dict[Name, HardwareTable] = {}
    dtypes: dict[Name, DTypeTable] = {}
    outputs: Outputs = Outputs()
