"""The ``Sweep``: one validated config, every name resolved to a record, ranges expanded.

Its options are ``schema.Options`` itself and its serving objectives ``schema.Serving``: each
key is declared once, in the schema, with its type, bounds and description.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweeps import axes
from sweeps.catalog import DType, Hardware, Model
from sweeps.config import schema
from sweeps.studies.prefix.tiers import KvTier
from sweeps.studies.prefix.trace import TraceHitRate
from sweeps.studies.serving.trace import TraceLoad
from sweeps.studies.speculative.drafts import Draft

NATIVE = axes.NATIVE

Options = schema.Options
"""Resolved ``[options]``: the schema's own model (see docs/config.md, generated from it)."""

Serving = schema.Serving
"""Resolved ``[serving]`` objectives; its axes are ``Sweep`` fields."""

Figures = schema.Figures
"""Resolved ``[outputs.figures]``: the schema's own model."""


def prompt_lengths(prompt: Any, context: Any) -> Any:
    """The prefill's prompt lengths: ``axes.prompt`` where given (not None), else the context
    axis's own (a config, or one point, that leaves the prompt out) [token]."""
    return context if prompt is None else prompt


@dataclass(frozen=True)
class Sweep:
    """One validated sweep: axes as tuples of values or records, options, outputs, provenance.

    A study's axes (``sweeps.studies.STUDIES``: ``prompt_tokens``, ``output_tokens``,
    ``arrival_rate`` of ``[serving]``) are fields like the others, empty when the config does
    not turn the study on; its settings are in ``studies`` by the study's name.
    """

    name: str
    title: str
    models: tuple[Model, ...]
    hardware: tuple[Hardware, ...]
    batch: tuple[int, ...]
    context: tuple[int, ...]
    prompt: tuple[int, ...]
    kv_heads: tuple[str, ...]
    kv_dtype: tuple[DType, ...]
    weight_dtype: tuple[DType, ...]
    tp: tuple[int, ...]
    options: Options
    charts: tuple[str, ...]
    formats: tuple[str, ...]
    grid_format: str
    """``outputs.grid``: ``zarr`` (the default), ``netcdf`` or ``none``."""
    path: str
    text: str
    layout: str = "auto"
    """``outputs.layout``: ``auto``, ``single`` or ``partitioned`` table files."""
    duckdb: bool = False
    """``outputs.duckdb``: also write ``sweep.duckdb`` with views over the tables."""
    prompt_tokens: tuple[int, ...] = ()
    """``serving.prompt_tokens``: prompt tokens per request [token]."""
    output_tokens: tuple[int, ...] = ()
    """``serving.output_tokens``: tokens generated per request [token]."""
    arrival_rate: tuple[float | TraceLoad, ...] = ()
    """``serving.arrival_rate``: request arrival rates [request/s], or with ``[workload]`` the
    trace at each time scale (``sweeps.studies.serving.trace.TraceLoad``, labelled by its
    rate); empty with concurrency."""
    concurrency: tuple[int, ...] = ()
    """``serving.concurrency``: closed-loop clients [request]; empty with arrival rates."""
    studies: Mapping[str, Any] = field(default_factory=dict)
    """The settings of each study the config turns on, by name (``sweeps.studies.STUDIES``)."""
    spec_tokens: tuple[int, ...] = ()
    """``axes.spec_tokens``: draft tokens per verification step [token]; empty: no
    speculation (nor any other speculative axis)."""
    spec_acceptance: tuple[float, ...] = ()
    """``axes.spec_acceptance``: per-token acceptance probabilities [1]."""
    spec_draft: tuple[Draft, ...] = ()
    """``axes.spec_draft``: the drafts (``sweeps.studies.speculative.drafts.Draft``)."""
    prefix_hit_rate: tuple[float | TraceHitRate, ...] = ()
    """``axes.prefix_hit_rate``: cached shares of the prompt [1], or the trace's hit rate at
    each point's cache (``sweeps.studies.prefix.trace.TraceHitRate``); empty: no prefix
    caching."""
    kv_tier: tuple[KvTier, ...] = ()
    """``axes.kv_tier``: where cached prefixes live (``sweeps.studies.prefix.tiers.KvTier``)."""
    ep: tuple[int, ...] = ()
    """``axes.ep``: expert-parallel ranks [device]; empty: no parallel study (``ep = 1``)."""
    dp_attention: tuple[bool, ...] = ()
    """``axes.dp_attention``: attention data-parallel over the ep ranks, or tensor-parallel."""
    pp: tuple[int, ...] = ()
    """``axes.pp``: pipeline stages [device]."""
    engine: tuple[Any, ...] = ()
    """``axes.engine``: the engines of the expected pass (``sweeps.measured.EngineChoice``);
    empty: no expectation, and the database is never read."""
    figures: Figures = field(default_factory=Figures)
    """``[outputs.figures]``: the tp and weight dtype the charts show, and their size."""
    charts_named: bool = False
    """Whether the config names ``[outputs] charts`` (False: their default): named charts are
    drawn whatever the number of model-device pairs (``sweeps.outputs.PAIRS_DRAWN``)."""

    @property
    def sha256(self) -> str:
        """SHA-256 of the config text, as hex."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def points(self, dims: Sequence[str]) -> int:
        """Points of this sweep's grid over ``dims`` (axis dims of ``sweeps.axes.AXES``) [1]."""
        return axes.points(self, dims)

    def compute_dtype_for(self, weight: DType, device: Hardware) -> str:
        """The compute dtype whose peak runs ``weight`` on ``device``.

        An explicit ``options.compute_dtype`` is used everywhere (validation made sure every
        device has it). ``"auto"``: the weight format's own GEMM format (``DType.compute``),
        or bf16 where the device has no peak for it (weight-only kernels dequantize to bf16).
        """
        chosen = self.options.compute_dtype
        if chosen != schema.AUTO:
            return chosen
        return weight.compute if weight.compute in device.peak_flops else "bf16"

    def attention_dtype_for(self, kv: DType, weight: DType, device: Hardware) -> str:
        """The compute dtype whose peak runs the attention FLOPs of a ``kv`` cache on ``device``.

        An explicit ``options.attention_dtype`` is used everywhere; ``"gemm"``: the GEMMs' own
        (``compute_dtype_for``, attention charged at the weights' peak); ``"auto"``: the KV
        format's compute dtype (``DType.compute``), bf16 where the device has no peak for it.
        Attention runs on the cached keys and values, so an FP4 checkpoint's attention is not
        charged at the FP4 peak (docs/cost-model.md).
        """
        chosen = self.options.attention_dtype
        if chosen == "gemm":
            return self.compute_dtype_for(weight, device)
        if chosen != schema.AUTO:
            return chosen
        return kv.compute if kv.compute in device.peak_flops else "bf16"
