"""The TOML schema of a sweep config, as pydantic models: its tables and their keys.

Every key carries a description, so ``ConfigFile.model_json_schema()`` is the config's JSON
Schema for editors; the value types and their bounds are in ``types``. Cross-references
(catalog ids, kv_heads dividing a model's heads, dtypes a device lacks) are checked afterwards
in ``resolve``, where the catalog is at hand.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, model_validator

from sweeps import limits
from sweeps.config.family_schema import FamilyTable, model_form
from sweeps.fields import (
    AUTO,
    NAME_PATTERN,
    AxisRange,
    Bandwidth,
    BatchAxis,
    ChartName,
    ComputeDType,
    Count,
    CountAxis,
    CountOrNone,
    Efficiency,
    Flops,
    Fraction,
    KvHeadsAxis,
    Name,
    NameAxis,
    Params,
    PositiveFloat,
    Strict,
    SweepName,
    TokenAxis,
    TokensOrNone,
    Width,
    WidthOrNone,
)
from sweeps.limits import (
    MAX_BATCH,
    MAX_COUNT,
    MAX_EXPERTS,
    MAX_TOKENS,
    MAX_VOCAB,
)
from sweeps.outputs import default_charts
from sweeps.studies.expected.table import ExpectedKeys
from sweeps.studies.parallel.table import ParallelKeys
from sweeps.studies.prefix.table import PrefixKeys
from sweeps.studies.speculative.table import SpeculativeKeys

__all__ = [
    "AUTO",
    "NAME_PATTERN",
    "AxisRange",
    "ChartName",
    "ComputeDType",
    "FamilyTable",
    "Serving",
    "ServingTable",
    "SimulatedLengths",
]


class SweepTable(Strict):
    name: SweepName = Field(description=f"Output folder name: {limits.SWEEP_NAME_RULE}")
    title: str = Field(
        default="", description="Title of the charts and the report (default: the name)"
    )


class GridAxes(Strict):
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


# the studies' keys of [axes] follow the grid's own, in the studies' order (pydantic takes the
# fields of the bases last to first): each study's folder declares its keys and their axes
class Axes(ExpectedKeys, ParallelKeys, PrefixKeys, SpeculativeKeys, GridAxes):
    pass


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
    compute_dtype: Literal["auto", ComputeDType] = Field(
        default="auto",
        description="Dense peak that sets the compute roof: 'auto' (each weight format's own "
        "GEMM format, bf16 where a device lacks it) or one compute dtype every device has",
    )
    attention_dtype: Literal["auto", "gemm", ComputeDType] = Field(
        default="auto",
        description="Dense peak that runs the attention FLOPs (scores and weighted sum): "
        "'auto' (the KV format's compute dtype, bf16 where a device lacks it), 'gemm' (the "
        "GEMMs' own, as compute_dtype sets it) or one compute dtype every device has",
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

    config: Annotated[str, Field(min_length=1)] | None = Field(
        default=None, description="Path of a config.json to read the shapes from (not empty)"
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


ModelEntry = Annotated[
    Annotated[ModelTable, Tag("@shape")] | Annotated[FamilyTable, Tag("@family")],
    Discriminator(model_form),
]
"""A ``[models.*]`` table: an architecture's shapes, or (with ``base``) a family's sizes."""


class KvTierTable(Strict):
    """A KV tier a cached prefix is reloaded from: bandwidth into HBM and capacity, per device."""

    bandwidth: Bandwidth = Field(
        description="Tier-to-HBM bandwidth per device [byte/s], at least "
        f"{limits.MIN_BANDWIDTH:g} (limits.MIN_BANDWIDTH)"
    )
    capacity: PositiveFloat | None = Field(
        default=None, description="Bytes the tier holds per device [byte]; none: unknown"
    )
    source: str = Field(
        default="custom table in the config file", description="Where the figures are from"
    )


class PeakFlops(Strict):
    """Dense peak throughput per compute dtype [FLOP/s]; never the 2:4-sparse figure."""

    bf16: Flops = Field(description="bf16 dense peak [FLOP/s]")
    fp8: Flops | None = Field(default=None, description="fp8 dense peak [FLOP/s]")
    int8: Flops | None = Field(default=None, description="int8 dense peak [OP/s]")
    fp4: Flops | None = Field(default=None, description="fp4 dense peak [FLOP/s]")
    fp32: Flops | None = Field(default=None, description="fp32 dense peak [FLOP/s]")


class HardwareTable(Strict):
    """A custom device, SI units: FLOP/s, bytes/s, bytes."""

    peak_flops: PeakFlops = Field(description="Dense peaks per compute dtype [FLOP/s]")
    bandwidth: Bandwidth = Field(
        description=f"Peak memory bandwidth [byte/s], at least {limits.MIN_BANDWIDTH:g} "
        "(limits.MIN_BANDWIDTH)"
    )
    memory: Annotated[float, Field(gt=0, le=limits.MAX_BYTES, allow_inf_nan=False)] = Field(
        description=f"Device memory [byte], at most 2**53 ({limits.MAX_BYTES:,})"
    )
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

    bits: Annotated[float, Field(ge=limits.MIN_BITS, le=64, allow_inf_nan=False)] = Field(
        description="Bits per element [bit], 1 to 64"
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


class Figures(Strict):
    """``[outputs.figures]``: which tp and weight dtype each chart shows, and its size.

    ``tp`` and ``weight_dtype`` are checked against the axes in ``resolve``.
    """

    pick: Literal["smallest-fit", "first"] = Field(
        default="smallest-fit",
        description="Each model and device at the smallest tp, then weight dtype, where it "
        "fits (smallest-fit), or at the axes' first (first)",
    )
    tp: Count | None = Field(default=None, description="Fix the tp every chart shows")
    weight_dtype: Name | None = Field(
        default=None, description="Fix the weight dtype every chart shows"
    )
    width: Literal["screen", "single-column", "double-column"] = Field(
        default="screen", description="A screen page, or a 3.5 in / 7 in print column at 300 dpi"
    )


class Outputs(Strict):
    charts: list[ChartName] = Field(
        default_factory=lambda: list(default_charts()),
        json_schema_extra=lambda schema: schema.update(default=list(default_charts())),
        description="Charts to draw",
    )
    formats: list[Literal["html", "png", "svg", "pdf"]] = Field(
        default=["html"], description="Chart files"
    )
    figures: Figures = Field(default_factory=Figures, description="What the charts show")
    grid: Literal["netcdf", "zarr", "none"] = Field(
        default="zarr",
        description="Grid file: grid.zarr (zarr, the default), grid.nc (netcdf) or none",
    )
    layout: Literal["auto", "single", "partitioned"] = Field(
        default="auto",
        description="Table files: one Parquet file each (single), a folder of parts per model "
        "(partitioned), or chosen by the grid's size alone (auto)",
    )
    duckdb: bool = Field(
        default=False, description="Also write sweep.duckdb with views over the tables"
    )


from sweeps.studies.serving.table import (  # noqa: E402
    Serving,
    ServingTable,
    SimulatedLengths,
    WorkloadTable,
)


class ConfigFile(Strict):
    """The whole file."""

    model_config = ConfigDict(title="sweeps config")

    sweep: SweepTable = Field(description="Name and title")
    axes: Axes = Field(description="The grid's axes")
    options: Options = Field(default=Options(), description="Cost-model options")
    models: dict[Name, ModelEntry] = Field(
        default={}, description="Custom architectures, or family sizes (with base), by name"
    )
    hardware: dict[Name, HardwareTable] = Field(default={}, description="Custom devices by name")
    dtypes: dict[Name, DTypeTable] = Field(default={}, description="Custom number formats by name")
    kv_tiers: dict[Name, KvTierTable] = Field(default={}, description="Custom KV tiers by name")
    outputs: Outputs = Field(default=Outputs(), description="What is written")
    serving: ServingTable | None = Field(
        default=None, description="Request-level serving study (turns on serving and pools tables)"
    )
    workload: WorkloadTable | None = Field(
        default=None,
        description="A trace as the serving study's workload (needs [serving]: its "
        "objectives; the trace gives the rates, lengths and simulated arrivals)",
    )

    @model_validator(mode="after")
    def _workload_serves(self) -> ConfigFile:
        """``[workload]`` feeds the serving study: it needs ``[serving]``."""
        if self.workload is not None and self.serving is None:
            msg = "[workload] needs a [serving] table (its objectives and schedulers)"
            raise ValueError(msg)
        return self
