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
    ``arrival_rate`` of ``[serving]``, ...) are declared by its table's keys
    (``sweeps.axes.STUDY_FIELDS``): their values are in ``study_axes``, read as attributes
    like the grid's own (``sweep.prompt_tokens``), empty when the config does not turn the
    study on; its settings are in ``studies`` by the study's name.
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
    studies: Mapping[str, Any] = field(default_factory=dict)
    """The settings of each study the config turns on, by name (``sweeps.studies.STUDIES``)."""
    study_axes: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """The values of the studies' axes the config gives, by key (``serving.prompt_tokens``,
    ``axes.spec_tokens``, ...): numbers, or records (``sweeps.studies.speculative.drafts.Draft``,
    ``sweeps.studies.prefix.tiers.KvTier``, ``sweeps.studies.serving.trace.TraceLoad``, ...);
    read as attributes (``sweep.prompt_tokens``)."""
    figures: Figures = field(default_factory=Figures)
    """``[outputs.figures]``: the tp and weight dtype the charts show, and their size."""
    charts_named: bool = False
    """Whether the config names ``[outputs] charts`` (False: their default): named charts are
    drawn whatever the number of model-device pairs (``sweeps.outputs.PAIRS_DRAWN``)."""

    def __getattr__(self, name: str) -> Any:
        """A study's axis by its key (``sweep.prompt_tokens``): its values, empty where the
        config does not turn the study on."""
        if name in axes.STUDY_FIELDS:
            return self.__dict__.get("study_axes", {}).get(name, ())
        msg = f"{type(self).__name__!r} object has no attribute {name!r}"
        raise AttributeError(msg)

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
