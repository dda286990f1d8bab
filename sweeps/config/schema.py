"""The TOML schema of a sweep config, as pydantic models: types, ranges and unknown keys.

Strict at the boundary: no bool for a number, no number for a bool, no string for a number,
every float finite, every integer within ``sweeps.config.limits``. Every key carries a
description, so ``ConfigFile.model_json_schema()`` is the config's JSON Schema for editors.
Cross-references (catalog ids, kv_heads dividing a model's heads, dtypes a device lacks) are
checked afterwards in ``resolve``, where the catalog is at hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)

from sweeps.config import limits
from sweeps.config.limits import (
    MAX_AXIS_VALUES,
    MAX_BATCH,
    MAX_COUNT,
    MAX_EXPERTS,
    MAX_PARAMS,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WIDTH,
)

NAME_PATTERN = r"^[a-z0-9._-]+$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


def _sweep_name(name: str) -> str:
    problem = limits.name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


SweepName = Annotated[
    str,
    AfterValidator(_sweep_name),
    Field(json_schema_extra={"pattern": limits.SWEEP_NAME_PATTERN}),
]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]
Efficiency = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
Params = Annotated[float, Field(gt=0, le=MAX_PARAMS, allow_inf_nan=False)]
Batch = Annotated[int, Field(gt=0, le=MAX_BATCH)]
Tokens = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
TokensOrNone = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
Count = Annotated[int, Field(gt=0, le=MAX_COUNT)]
CountOrNone = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]
WidthOrNone = Annotated[int, Field(ge=0, le=MAX_WIDTH)]

ChartKind = Literal["ceiling", "bottleneck", "ai-vs-batch", "roofline"]
CHART_KINDS: tuple[ChartKind, ...] = ("ceiling", "bottleneck", "ai-vs-batch", "roofline")
ComputeDType = Literal["bf16", "fp8", "int8", "fp4", "fp32"]
"""The compute dtypes a device may carry a peak for (``sweeps.catalog.COMPUTE_DTYPES``)."""
AUTO = "auto"
"""``options.compute_dtype`` default: each weight format's own GEMM format."""


class Strict(BaseModel):
    """Base of every table: unknown keys are errors, values are never converted."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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
        Annotated[Annotated[list[value], Field(min_length=1)], Tag("@list")]
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

NameAxis = Annotated[list[Name], Field(min_length=1)]


def _kv_form(value: object) -> str:
    return "@native" if isinstance(value, str) else "@count"


KvHeadsAxis = Annotated[
    list[
        Annotated[
            Annotated[Literal["native"], Tag("@native")] | Annotated[Count, Tag("@count")],
            Discriminator(_kv_form),
        ]
    ],
    Field(min_length=1),
]


class SweepTable(Strict):
    name: SweepName = Field(description=f"Output folder name: {limits.SWEEP_NAME_RULE}")
    title: str = Field(
        default="", description="Title of the charts and the report (default: the name)"
    )


class Axes(Strict):
    model: NameAxis = Field(description="Catalog model ids or names of [models.*] tables")
    hardware: NameAxis = Field(description="Catalog device ids or names of [hardware.*] tables")
    batch: BatchAxis = Field(
        default=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
        description=f"Sequences decoded together (1 to {MAX_BATCH:,})",
    )
    context: TokenAxis = Field(
        default=[512, 2048, 8192, 32768],
        description=f"Tokens in each KV cache at the decode step (1 to {MAX_TOKENS:,})",
    )
    kv_heads: KvHeadsAxis = Field(
        default=["native"],
        description="KV heads: 'native' (the model's own) or a count dividing its heads",
    )
    kv_dtype: NameAxis = Field(default=["bf16"], description="KV-cache formats: dtype names")
    weight_dtype: NameAxis = Field(default=["bf16"], description="Weight formats: dtype names")
    prompt: TokenAxis | None = Field(
        default=None, description="Prefill prompt lengths [token] (default: the context axis)"
    )
    tp: CountAxis = Field(default=[1], description=f"Tensor-parallel degrees (1 to {MAX_COUNT:,})")


class Options(Strict):
    """The ``[options]`` table, also the resolved options of a ``Sweep`` (one declaration)."""

    attention_flops: bool = Field(
        default=True, description="Count attention FLOPs (false: the note's)"
    )
    memory_reserve: Fraction = Field(
        default=0.10,
        description="Fraction of device memory kept for activations and runtime [0, 1)",
    )
    ceiling_fraction: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        default=0.90, description="'Has hit the ceiling' threshold of charts and summaries (0, 1)"
    )
    compute_dtype: Literal["auto"] | Name = Field(
        default="bf16",
        description="Dense peak that sets the compute roof: 'auto' (each weight format's own "
        "GEMM format) or one of bf16, fp8, int8, fp4, fp32",
    )
    bandwidth_efficiency: Efficiency = Field(
        default=1.0, description="Fraction of peak bandwidth kernels reach (0, 1]"
    )
    compute_efficiency: Efficiency = Field(
        default=1.0, description="Fraction of peak FLOP/s kernels reach (0, 1]"
    )
    activation_bytes: PositiveFloat = Field(
        default=2.0, description="Bytes per activation element, for the all-reduce term [byte]"
    )
    max_chart_cells: Annotated[int, Field(ge=1, le=10**9)] = Field(
        default=4500, description="Above this, charts thin or aggregate the grid"
    )


class ModelTable(Strict):
    """A custom architecture. Sizes are counts; ``params`` may be a float such as ``8.03e9``.

    ``config`` names a Hugging Face ``config.json`` (relative to the config file): the shapes
    come from it, and ``params``, ``layers``, ``heads``, ``kv_heads`` and ``head_dim`` may then
    be left out; any field given next to it overrides the imported value. Without ``config``
    those five are required (checked in ``resolve``, which names the missing key).
    """

    config: str | None = Field(
        default=None, description="Path of a config.json to read the shapes from"
    )
    params: Params | None = Field(default=None, description="All parameters, every expert [1]")
    layers: Count | None = Field(default=None, description="Transformer layers [1]")
    heads: Count | None = Field(default=None, description="Query heads [1]")
    kv_heads: Count | None = Field(default=None, description="Key/value heads [1]")
    head_dim: Width | None = Field(default=None, description="Query/key head dimension [1]")
    active_params: Params | None = Field(default=None, description="Parameters used per token [1]")
    hidden_size: WidthOrNone = Field(default=0, description="Hidden width [1]; 0 for unknown")
    vocab_size: Annotated[int, Field(ge=0, le=MAX_VOCAB)] = Field(
        default=0, description="Vocabulary [token]; 0 keeps the note's abstract form"
    )
    tie_word_embeddings: bool = Field(
        default=False, description="Input embedding and lm_head share one matrix"
    )
    attention: Literal["mha", "gqa", "mqa", "mla", "gqa+sliding"] | None = Field(
        default=None, description="Attention kind (default: inferred from the shapes)"
    )
    kv_lora_rank: WidthOrNone = Field(default=0, description="MLA latent rank [1]; 0 elsewhere")
    qk_rope_head_dim: WidthOrNone = Field(default=0, description="MLA rope head dim [1]")
    v_head_dim: WidthOrNone = Field(default=0, description="MLA value head dim [1]")
    experts: Annotated[int, Field(ge=1, le=MAX_EXPERTS)] = Field(
        default=1, description="Routed experts per MoE layer [1]; 1 for dense"
    )
    experts_per_token: Count = Field(default=1, description="Routed experts per token [1]")
    sliding_window: TokensOrNone = Field(
        default=0, description="Local layers' window [token]; 0: none"
    )
    local_layers: CountOrNone = Field(default=0, description="Layers with a sliding window [1]")
    max_context: TokensOrNone = Field(default=0, description="Longest context [token]; 0: unknown")
    source: str = Field(
        default="custom table in the config file", description="Where the figures are from"
    )


class PeakFlops(Strict):
    """Dense peak throughput per compute dtype [FLOP/s]; never the 2:4-sparse figure."""

    bf16: PositiveFloat = Field(description="bf16 dense peak [FLOP/s]")
    fp8: PositiveFloat | None = Field(default=None, description="fp8 dense peak [FLOP/s]")
    int8: PositiveFloat | None = Field(default=None, description="int8 dense peak [OP/s]")
    fp4: PositiveFloat | None = Field(default=None, description="fp4 dense peak [FLOP/s]")
    fp32: PositiveFloat | None = Field(default=None, description="fp32 dense peak [FLOP/s]")


class HardwareTable(Strict):
    """A custom device, SI units: FLOP/s, bytes/s, bytes."""

    peak_flops: PeakFlops = Field(description="Dense peaks per compute dtype [FLOP/s]")
    bandwidth: PositiveFloat = Field(description="Peak memory bandwidth [byte/s]")
    memory: PositiveFloat = Field(description="Device memory [byte]")
    name: str = Field(default="", description="Display name (default: the table name)")
    vendor: str = Field(default="", description="Vendor")
    price_per_hour: PositiveFloat | None = Field(
        default=None, description="Price [USD per device-hour]; none: costs are left empty"
    )
    source: str = Field(
        default="custom table in the config file", description="Where the figures are from"
    )


class DTypeTable(Strict):
    """A custom number format: ``bits`` per element plus a scale per ``group_size`` elements."""

    bits: Annotated[float, Field(gt=0, le=64, allow_inf_nan=False)] = Field(
        description="Bits per element [bit]"
    )
    group_size: WidthOrNone = Field(
        default=0, description="Elements sharing one scale [1]; 0: none"
    )
    scale_bytes: Annotated[float, Field(ge=0, le=64, allow_inf_nan=False)] = Field(
        default=0.0, description="Bytes of one scale [byte]; needs group_size > 0"
    )
    compute: ComputeDType = Field(default="bf16", description="Compute dtype whose peak runs it")
    description: str = Field(default="custom table in the config file", description="What it is")

    @model_validator(mode="after")
    def _scaled_groups(self) -> DTypeTable:
        if self.scale_bytes > 0 and self.group_size == 0:
            msg = f"scale_bytes = {self.scale_bytes!r} needs a group_size of 1 or more (got 0)"
            raise ValueError(msg)
        return self


class Outputs(Strict):
    charts: list[ChartKind] = Field(default=list(CHART_KINDS), description="Charts to draw")
    formats: list[Literal["html", "png", "svg"]] = Field(
        default=["html"], description="Chart files"
    )
    grid: Literal["netcdf", "zarr", "none"] = Field(
        default="netcdf", description="Grid file: grid.nc (netcdf), grid.zarr (zarr) or none"
    )
    layout: Literal["auto", "single", "partitioned"] = Field(
        default="auto",
        description="Table files: one Parquet file each (single), a folder of parts per model "
        "(partitioned), or chosen by the grid's size alone (auto)",
    )
    duckdb: bool = Field(
        default=False, description="Also write sweep.duckdb with views over the tables"
    )


class Serving(Strict):
    """The objectives and links of ``[serving]``; also ``Sweep.serving`` (one declaration)."""

    ttft_slo_s: PositiveFloat = Field(default=2.0, description="Time-to-first-token objective [s]")
    tpot_slo_s: PositiveFloat = Field(
        default=0.05, description="Time-per-output-token objective [s]"
    )
    chunk_tokens: TokensOrNone = Field(
        default=2048,
        description="Token budget of a chunked-prefill step [token]; 0 turns chunking off; "
        "else larger than the largest batch",
    )
    kv_link_bandwidth: PositiveFloat = Field(
        default=50e9, description="KV hand-off bandwidth per device between pools [byte/s]"
    )


class ServingTable(Serving):
    """The ``[serving]`` table: the workload axes plus the objectives."""

    prompt_tokens: TokenAxis = Field(default=[512, 2048], description="Prompt tokens per request")
    output_tokens: TokenAxis = Field(
        default=[128, 512], description="Output tokens per request (>= 1)"
    )
    arrival_rate: Annotated[list[PositiveFloat], Field(min_length=1)] = Field(
        default=[1.0, 10.0], description="Arrival rates [request/s] (> 0)"
    )


class ConfigFile(Strict):
    """The whole file."""

    model_config = ConfigDict(title="sweeps config")

    sweep: SweepTable = Field(description="Name and title")
    axes: Axes = Field(description="The grid's axes")
    options: Options = Field(default=Options(), description="Cost-model options")
    models: dict[Name, ModelTable] = Field(default={}, description="Custom architectures by name")
    hardware: dict[Name, HardwareTable] = Field(default={}, description="Custom devices by name")
    dtypes: dict[Name, DTypeTable] = Field(default={}, description="Custom number formats by name")
    outputs: Outputs = Field(default=Outputs(), description="What is written")
    serving: ServingTable | None = Field(
        default=None, description="Request-level serving study (turns on serving and pools tables)"
    )
