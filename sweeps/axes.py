"""The axes of a sweep, declared once: every other list of them derives from ``AXES``.

An axis is a dimension of the grid and a field of the ``Sweep``: its name, how its labels are
stored in the tables (``name``: an Enum of ids; ``size``: an integer; ``heads``: the KV-head
setting, ``"native"`` or a count, stored as the effective count), its unit and description, and
its place in the chunk plan (``split``: the outer axes a grid is cut along, outermost first).
The dims of each analysis, the points of a sweep, the Enum categories of a chunked export, the
manifest, the summary, the CLI's labels and the bench sample all read this table.

Imports nothing heavy, so ``sweeps validate`` and ``sweeps --help`` stay fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sweeps.measured.database import OPERATIONS
from sweeps.schedulers import (
    MODE_DOC,
    POOL_MODES,
    SERVING_MODES,
    pool_modes,
    serving_modes,
)

NATIVE = "native"
"""The ``kv_heads`` setting that keeps each model's own KV heads."""

AxisKind = Literal["name", "size", "heads", "value"]


@dataclass(frozen=True, slots=True)
class Axis:
    """One axis of the sweep.

    dim : Dimension name in the grid
    field : Attribute of the ``Sweep`` holding its values (records or numbers)
    kind : ``name`` (Enum column of ids), ``size`` (Int64 column), ``value`` (Float64 column)
        or ``heads``
    unit : Unit of its values (``-`` for labels)
    description : One line, what it means
    title : Short label for tables and chart axes
    column : Parquet column (defaults to ``dim``)
    split : Position among the axes a grid is cut along for chunks (0 outermost); None: never
    derive : The labels as a function of the sweep, for an axis that is no field of it
        (``field`` then names what they come from)
    most : The most labels ``derive`` gives (what the points cap counts before resolving)
    """

    dim: str
    field: str
    kind: AxisKind
    unit: str
    description: str
    title: str
    column: str = ""
    split: int | None = None
    derive: Callable[[Any], Sequence[Any]] | None = None
    most: int = 0

    @property
    def column_name(self) -> str:
        """The Parquet column name."""
        return self.column or self.dim

    def labels(self, sweep: Any) -> list[Any]:
        """The axis labels of ``sweep``: ids of records, numbers, or KV-head settings."""
        values = self.derive(sweep) if self.derive else getattr(sweep, self.field)
        return [_label(value) for value in values]

    def size(self, sweep: Any) -> int:
        """How many labels the axis has in ``sweep`` [1]."""
        return len(self.labels(sweep)) if self.derive else len(getattr(sweep, self.field))


def _label(value: Any) -> Any:
    if isinstance(value, bool):  # axes.dp_attention: the TOML spelling, an Enum label
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return value
    return getattr(value, "id", None) or value.name


AXES: tuple[Axis, ...] = (
    Axis(
        "model",
        "models",
        "name",
        "-",
        "Model id (catalog id or [models.*] table name)",
        "model",
        split=0,
    ),
    Axis(
        "hardware",
        "hardware",
        "name",
        "-",
        "Device id (catalog id or [hardware.*] table name)",
        "hardware",
        split=1,
    ),
    Axis(
        "tp",
        "tp",
        "size",
        "device",
        "Tensor-parallel degree: devices the model is split across",
        "tp",
        split=2,
    ),
    Axis(
        "batch",
        "batch",
        "size",
        "sequence",
        "Sequences processed together in one step",
        "batch",
        split=3,
    ),
    Axis(
        "context",
        "context",
        "size",
        "token",
        "Tokens in each sequence's KV cache at the decode step",
        "context",
    ),
    Axis(
        "prompt",
        "prompt",
        "size",
        "token",
        "Prompt tokens per sequence in the prefill",
        "prompt",
        column="context",
    ),
    Axis(
        "kv_heads",
        "kv_heads",
        "heads",
        "head",
        "Key/value heads: the model's own ('native') or a GQA override",
        "kv heads",
    ),
    Axis("kv_dtype", "kv_dtype", "name", "-", "Number format of the KV cache", "kv dtype"),
    Axis("weight_dtype", "weight_dtype", "name", "-", "Number format of the weights", "weights"),
    # the expected pass (axes.engine): engines whose measured kernels give expected times
    Axis(
        "engine",
        "engine",
        "name",
        "-",
        "Serving engine whose measured kernels give the expected times: trtllm, vllm or "
        "sglang (engine-version pins a version; default: the database's current one)",
        "engine",
    ),
    Axis(
        "operation",
        "engine",
        "name",
        "-",
        "Operation of a step: " + ", ".join(OPERATIONS),
        "operation",
        derive=lambda sweep: OPERATIONS if sweep.engine else (),
        most=len(OPERATIONS),
    ),
    # speculative decoding and prefix caching (axes.spec_*, axes.prefix_hit_rate, axes.kv_tier)
    Axis(
        "spec_tokens",
        "spec_tokens",
        "size",
        "token",
        "Draft tokens per verification step, k (0: plain decode)",
        "k",
    ),
    Axis(
        "spec_acceptance",
        "spec_acceptance",
        "value",
        "1",
        "Per-token acceptance probability of the draft, alpha",
        "alpha",
    ),
    Axis(
        "spec_draft",
        "spec_draft",
        "name",
        "-",
        "Draft: ngram (prompt lookup), mtp (the model's own heads) or a draft model id",
        "draft",
    ),
    Axis(
        "prefix_hit_rate",
        "prefix_hit_rate",
        "value",
        "1",
        "Share of the prompt's tokens whose KV cache is already held, h",
        "hit rate",
    ),
    Axis(
        "kv_tier",
        "kv_tier",
        "name",
        "-",
        "Where a cached prefix lives: hbm, host, nvme or a [kv_tiers.*] table",
        "tier",
    ),
    # expert, data-parallel attention and pipeline parallelism (axes.ep, .dp_attention, .pp)
    Axis(
        "ep",
        "ep",
        "size",
        "device",
        "Expert-parallel ranks: the routed experts split over them (a replica is tp x ep x pp)",
        "ep",
    ),
    Axis(
        "dp_attention",
        "dp_attention",
        "name",
        "-",
        "Attention data-parallel: each ep rank holds it whole and decodes its own sequences",
        "dp attention",
    ),
    Axis("pp", "pp", "size", "device", "Pipeline stages of L / pp layers each", "pp"),
    # the serving workload ([serving]) and what the serving and pools tables enumerate
    Axis("prompt_tokens", "prompt_tokens", "size", "token", "Prompt tokens per request, I", "I"),
    Axis("output_tokens", "output_tokens", "size", "token", "Output tokens per request, O", "O"),
    Axis(
        "arrival_rate",
        "arrival_rate",
        "value",
        "request/s",
        "Requests arriving per second (Poisson)",
        "rate",
    ),
    Axis(
        "concurrency",
        "concurrency",
        "size",
        "request",
        "Closed-loop clients, each sending its next request when its last one ends",
        "clients",
    ),
    Axis(
        "mode",
        "studies",
        "name",
        "-",
        MODE_DOC,
        "mode",
        derive=serving_modes,
        most=len(SERVING_MODES),
    ),
    Axis(
        "prefill_hardware",
        "hardware",
        "name",
        "-",
        "Device of the prefill pool (the same as decode when colocated)",
        "prefill on",
    ),
    Axis(
        "prefill_tp", "tp", "size", "device", "Tensor-parallel degree of a prefill replica", "tp_p"
    ),
    Axis(
        "decode_hardware",
        "hardware",
        "name",
        "-",
        "Device of the decode pool (the same as prefill when colocated)",
        "decode on",
    ),
    Axis("decode_tp", "tp", "size", "device", "Tensor-parallel degree of a decode replica", "tp_d"),
    Axis(
        "pool_mode",
        "studies",
        "name",
        "-",
        "colocated (one pool does both phases) or disaggregated (a prefill and a decode pool)",
        "plan",
        derive=pool_modes,
        most=len(POOL_MODES),
    ),
)


AXIS: dict[str, Axis] = {axis.dim: axis for axis in AXES}
"""Every axis by its dim."""

SPLIT_DIMS: tuple[str, ...] = tuple(
    axis.dim
    for axis in sorted((a for a in AXES if a.split is not None), key=lambda a: a.split or 0)
)
"""The outer dims a grid is cut along for chunks, outermost first."""

NAME_DIMS: tuple[str, ...] = tuple(axis.dim for axis in AXES if axis.kind == "name")
"""Dims whose labels are ids, written as Enum columns."""


def canonical(dims: Iterable[str]) -> tuple[str, ...]:
    """``dims`` in the canonical order of ``AXES`` (an unknown dim is a ``KeyError``)."""
    wanted = set(dims)
    unknown = sorted(wanted - set(AXIS))
    if unknown:
        msg = f"unknown dims {unknown}; the axes are {[a.dim for a in AXES]}"
        raise KeyError(msg)
    return tuple(axis.dim for axis in AXES if axis.dim in wanted)


def points(sweep: Any, dims: Sequence[str]) -> int:
    """Points of ``sweep``'s grid over ``dims`` [1]: the product of the axis lengths."""
    return math.prod(AXIS[dim].size(sweep) for dim in dims)


def categories(sweep: Any) -> dict[str, list[str]]:
    """The labels of every name axis of ``sweep``: the Enum categories of its tables."""
    return {dim: [str(label) for label in AXIS[dim].labels(sweep)] for dim in NAME_DIMS}
