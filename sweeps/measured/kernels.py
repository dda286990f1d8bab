"""Measured latencies of one kernel shape at a time, from the database's own estimator.

``Kernels(system, engine, version)`` reads the tables of one device, engine and version
(``aiconfigurator-core``'s loader; nothing is read before the first lookup) and answers a
latency for each shape asked: a GEMM, decode or prefill attention, the tensor-parallel
all-reduce, the MoE experts, the embedding gather. Each distinct shape is asked once
(memoized); a grid has few.

The value is the database's own query (its compiled estimator interpolates its tables), so
at a measured shape it is the table's value exactly. What this module adds is the basis of
each value, from the table's own axes (read with Polars): ``measured`` (every coordinate is
a measured one), ``interpolated`` (inside the measured range), or ``extrapolated`` (outside
it: the shape is clamped into the range and the reading says which shape was asked, so the
caller scales it by the roofline: the nearest measured point's share of its roof). A format
the table does not hold gives no reading (``Reading.reason``). No physics here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sweeps.measured.database import require, systems_root

BASES = ("measured", "interpolated", "extrapolated")
"""The basis of an expected value: a table's point, between points, or outside them."""

GEMM_FORMATS: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "bfloat16",
    "fp8": "fp8",
    "int8": "int8_wo",
    "int4": "int4_wo",
    "nvfp4": "nvfp4",
}
"""Catalog weight format -> the database's GEMM mode (MXFP4 has no dense GEMM table)."""

KV_FORMATS: dict[str, str] = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8", "int8": "int8"}
"""Catalog KV format -> the database's KV-cache mode."""

MOE_FORMATS: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "bfloat16",
    "fp8": "fp8",
    "int4": "int4_wo",
    "fp4": "w4a16_mxfp4",
    "nvfp4": "nvfp4",
}
"""Catalog weight format -> the database's MoE mode."""

DISTRIBUTION = "power_law_1.2"
"""How tokens are routed to experts when the MoE table is read: the database's own default
for a MoE model (a power law of exponent 1.2; measured serving traffic is not balanced)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """One shape's latency from the database.

    latency_s : At the shape asked for, or (``extrapolated``) at ``at`` [s]; None: no reading
    basis : ``measured``, ``interpolated``, ``extrapolated`` or "" (no reading)
    at : The coordinates the latency was read at (the shape clamped into the measured range)
    reason : Why there is no reading ("" where there is one)
    """

    latency_s: float | None
    basis: str
    at: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""

    def __post_init__(self) -> None:
        if self.latency_s is not None and math.isnan(self.latency_s):
            object.__setattr__(self, "latency_s", None)
            object.__setattr__(self, "basis", "")
            object.__setattr__(self, "reason", "the database has no data for this shape")


@dataclass(frozen=True, slots=True)
class _Table:
    """The measured axes of one table at one format: each coordinate's sorted values."""

    axes: Mapping[str, np.ndarray]

    def place(self, shape: Mapping[str, float]) -> tuple[str, dict[str, float]]:
        """The basis of ``shape`` and the shape clamped into the measured range."""
        clamped, basis = {}, "measured"
        for name, value in shape.items():
            held = self.axes.get(name)
            if held is None or held.size == 0:
                clamped[name] = value
                continue
            low, high = float(held[0]), float(held[-1])
            clamped[name] = min(max(value, low), high)
            if clamped[name] != value:
                basis = "extrapolated"
            elif basis == "measured" and not np.isin(value, held):
                basis = "interpolated"
        return basis, clamped


class Kernels:
    """The measured kernels of one ``system``, ``engine`` and ``version`` (see the module)."""

    def __init__(self, system: str, engine: str, version: str) -> None:
        require(f"engine {engine!r}")
        self.system, self.engine, self.version = system, engine, version
        self._memo: dict[Any, float] = {}
        self._specs: dict[str, str] = {}

    @functools.cached_property
    def _handle(self) -> tuple[Any, Any]:
        from aiconfigurator_core.sdk import perf_database
        from aiconfigurator_core.sdk.engine import EngineHandle

        database = _quiet(perf_database.get_database, self.system, self.engine, self.version)
        return database, EngineHandle.for_database(database)

    def _folder(self, family: str) -> Any:
        return systems_root() / "data" / self.system / family / self.engine / self.version

    @functools.cache  # noqa: B019 - one instance per device and engine, kept for the run
    def _table(
        self, family: str, name: str, column: str, value: str, axes: tuple[str, ...]
    ) -> _Table | None:
        """The axes of table ``name`` where ``column == value`` (None: not held)."""
        import polars as pl

        path = self._folder(family) / f"{name}.parquet"
        if not value or not path.is_file():
            return None
        frame = pl.scan_parquet(path).filter(pl.col(column) == value).select(axes).collect()
        if frame.height == 0:
            return None
        return _Table({a: np.sort(frame[a].unique().to_numpy()) for a in axes})

    def _evaluate(self, op: Any, *, context: bool, batch: int, s: int) -> float:
        """One op's latency from the database's estimator [s] (memoized by its spec)."""
        from aiconfigurator_core.sdk.engine import _resolve_attention_lane_orders, build_ops_json

        database, handle = self._handle
        asked = build_ops_json([op])
        spec = self._specs.get(asked)
        if spec is None:  # an attention op's kernel lanes: resolved once per op, not per shape
            if hasattr(op, "_lane_order"):
                _quiet(_resolve_attention_lane_orders, [op], database, None)
            spec = self._specs[asked] = build_ops_json([op])
        key = (spec, context, batch, s)
        if key not in self._memo:
            try:
                row = handle.evaluate_ops_json(spec, is_context=context, batch_size=batch, s=s)
                self._memo[key] = float(row[0][1]) * 1e-3  # the database's ms
            except Exception:
                self._memo[key] = math.nan
        return self._memo[key]

    @functools.cache  # noqa: B019 - one instance per device and engine
    def gemm(self, m: int, n: int, k: int, fmt: str) -> Reading:
        """A GEMM of ``m`` tokens by an ``n x k`` weight in catalog format ``fmt``."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = GEMM_FORMATS.get(fmt, "")
        table = self._table("gemm", "gemm_perf", "gemm_dtype", mode, ("m", "n", "k"))
        if table is None:
            return _none(f"GEMM format {fmt!r} not in the {self.engine} tables")
        basis, at = table.place({"m": m, "n": n, "k": k})
        shape = {key: round(v) for key, v in at.items()}
        op = ops.GEMM("gemm", 1, shape["n"], shape["k"], common.GEMMQuantMode[mode])
        return Reading(self._evaluate(op, context=False, batch=shape["m"], s=1), basis, at)

    @functools.cache  # noqa: B019 - one instance per device and engine
    def attention(
        self, *, prefill: bool, batch: int, length: int, heads: int, kv_heads: int,
        head_dim: int, window: int, fmt: str,
    ) -> Reading:  # fmt: skip
        """Attention of ``batch`` sequences: a decode step against ``length`` cached tokens,
        or a prefill of ``length`` prompt tokens; ``heads`` and ``kv_heads`` per device,
        ``window`` the sliding window (0: none), ``fmt`` the KV format."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = KV_FORMATS.get(fmt, "")
        name = "context_attention_perf" if prefill else "generation_attention_perf"
        length_axis = "isl" if prefill else "step"
        axes = ("batch_size", length_axis, "num_heads", "num_key_value_heads", "head_dim")
        table = self._table("attention", name, "kv_cache_dtype", mode, axes)
        if table is None:
            return _none(f"KV format {fmt!r} not in the {self.engine} attention tables")
        # a decode step's table length is the cached tokens before it (step = context - 1)
        shape = {
            "batch_size": batch,
            length_axis: length if prefill else length - 1,
            "num_heads": heads,
            "num_key_value_heads": kv_heads,
            "head_dim": head_dim,
        }
        basis, at = table.place(shape)
        got = {key: round(v) for key, v in at.items()}
        kv = common.KVCacheQuantMode[mode]
        if prefill:
            fmha = common.FMHAQuantMode.bfloat16
            op = ops.ContextAttention(
                "attention", 1, got["num_heads"], got["num_key_value_heads"], kv, fmha,
                head_size=got["head_dim"], window_size=window,
            )  # fmt: skip
            value = self._evaluate(op, context=True, batch=got["batch_size"], s=got["isl"])
        else:
            op = ops.GenerationAttention(
                "attention", 1, got["num_heads"], got["num_key_value_heads"], kv,
                head_size=got["head_dim"], window_size=window,
            )  # fmt: skip
            value = self._evaluate(op, context=False, batch=got["batch_size"], s=got["step"] + 1)
        return Reading(value, basis, at)

    @functools.cache  # noqa: B019 - one instance per device and engine
    def allreduce(self, tokens: int, hidden: int, tp: int) -> Reading:
        """The all-reduce of ``tokens`` rows of ``hidden`` bf16 values over ``tp`` devices."""
        from aiconfigurator_core.sdk import operations as ops

        if tp <= 1:
            return Reading(0.0, "measured", {})
        axes = ("num_gpus", "message_size")
        table = self._table("comm", "custom_allreduce_perf", "op_name", "all_reduce", axes)
        if table is None:
            return _none(f"no all-reduce table for {self.engine}")
        basis, at = table.place({"num_gpus": tp, "message_size": tokens * hidden})
        op = ops.CustomAllReduce("allreduce", 1, hidden, tp)
        return Reading(self._evaluate(op, context=False, batch=tokens, s=1), basis, at)

    @functools.cache  # noqa: B019 - one instance per device and engine
    def moe(
        self, *, tokens: int, hidden: int, inter: int, topk: int, experts: int,
        tp: int, ep: int, fmt: str,
    ) -> Reading:  # fmt: skip
        """The routed experts of a MoE layer for ``tokens`` tokens (routed as ``DISTRIBUTION``)."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = MOE_FORMATS.get(fmt, "")
        axes = ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts")
        table = self._table("moe", "moe_perf", "moe_dtype", mode, axes)
        if table is None:
            return _none(f"MoE format {fmt!r} not in the {self.engine} tables")
        shape = {
            "num_tokens": tokens,
            "hidden_size": hidden,
            "inter_size": inter,
            "topk": topk,
            "num_experts": experts,
        }
        basis, at = table.place(shape)
        op = ops.MoE(
            "moe", 1, hidden, inter, topk, experts, tp, ep, common.MoEQuantMode[mode],
            DISTRIBUTION, 1,
        )  # fmt: skip
        return Reading(self._evaluate(op, context=False, batch=tokens, s=1), basis, at)

    @functools.cache  # noqa: B019 - one instance per device and engine
    def embedding(self, tokens: int, vocab: int, hidden: int) -> Reading:
        """The gather of ``tokens`` embedding rows: no table holds it; the database's own
        bandwidth-share model, so always ``extrapolated``."""
        from aiconfigurator_core.sdk import operations as ops

        op = ops.Embedding("embedding", 1, vocab, hidden, 0.3)
        return Reading(self._evaluate(op, context=False, batch=tokens, s=1), "extrapolated", {})


def _none(reason: str) -> Reading:
    return Reading(None, "", {}, reason)


def _quiet(function: Any, *args: Any) -> Any:
    """``function(*args)`` with the database loader's console messages muted."""
    import contextlib
    import io
    import logging

    logger = logging.getLogger("aiconfigurator_core")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return function(*args)
    finally:
        logger.setLevel(level)


@functools.cache
def kernels(system: str, engine: str, version: str) -> Kernels:
    """The ``Kernels`` of one system, engine and version, one per process."""
    return Kernels(system, engine, version)


def readings(values: Sequence[Reading]) -> tuple[np.ndarray, np.ndarray]:
    """Latencies (NaN: none) and bases of ``values`` as arrays."""
    latency = np.array([np.nan if r.latency_s is None else r.latency_s for r in values])
    return latency, np.array([r.basis for r in values], dtype=object)
