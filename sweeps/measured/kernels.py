"""Measured latencies of kernel shapes, from the database's own estimator.

``Kernels(system, engine, version)`` reads the tables of one device, engine and version
(``aiconfigurator-core``'s loader; nothing is read before the first lookup) and answers a
latency for each shape asked: a GEMM, decode or prefill attention, the MLA block (its module
tables), the tensor-parallel all-reduce, the MoE experts, the embedding gather. Each lookup
takes arrays of shapes (``*_many``, a whole grid's at once) and asks each distinct shape once
(memoized for the process); the scalar methods are the same lookup for one shape.

The value is the database's own query (its compiled estimator interpolates its tables), so
at a measured GEMM shape it is the table's value exactly. What this module adds is the basis of
each value, from the table's own rows (read with Polars): ``measured`` (the shape is a
row), ``interpolated`` (every corner of the cell of measured values around it is a row), or
``extrapolated`` (outside the rows measured together; docs/expected.md, "What each value rests
on"). A shape outside an axis's measured range is clamped into it and the reading says which
shape was asked (``at``, ``moved``), so the caller scales it by the roofline: the nearest
measured point's share of its roof; one inside every range is read where it is asked. A format
the table does not hold gives no reading (``Reading.reason``). No physics here.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sweeps.measured.database import require, systems_root

BASES = ("measured", "interpolated", "extrapolated")
"""The basis of an expected value: a table's point, between points, or outside them."""

NAMES = np.array([*BASES, ""], dtype=object)
"""Basis code -> name: ``BASES`` by their index, and ``NONE`` (no reading), ""; the codes rank
from the most certain to the least (the least certain of several is their largest code)."""

NONE = 3
"""The basis code of no reading."""

EXTRAPOLATED = 2
"""The basis code of a reading outside the measured range."""

GEMM_FORMATS: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "bfloat16",
    "fp8": "fp8",
    "int8": "int8_wo",
    "int4": "int4_wo",
    "nvfp4": "nvfp4",
    "fp8-block": "fp8_block",
}
"""Catalog weight format -> the database's GEMM mode (MXFP4 has no dense GEMM table);
``fp8-block`` is FP8 scaled in blocks, as DeepSeek's checkpoints are (``BLOCK_SCALED`` in
``sweeps.studies.expected.step``)."""

KV_FORMATS: dict[str, str] = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8", "int8": "int8"}
"""Catalog KV format -> the database's KV-cache mode."""

MLA_GEMM_FORMATS: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "bfloat16",
    "fp8": "fp8_block",
    "fp8-block": "fp8_block",
    "nvfp4": "nvfp4",
}
"""Catalog weight format -> the database's GEMM mode of the MLA module tables (their rows
measured bf16, DeepSeek's block-scaled FP8 and, on Blackwell, NVFP4 projections only)."""

MLA_BMM_FORMATS: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "bfloat16",
    "fp8": "fp8",
    "fp8-block": "fp8",
    "nvfp4": "fp8",
}
"""Catalog weight format -> the database's mode of the absorbed MLA BMMs (``mla_bmm_perf``):
bf16 projections run them in bf16, every quantized checkpoint in FP8, as aiconfigurator's
DeepSeek model picks them (``mla_bmm_quant_mode``)."""

MLA_ATTENTION_DTYPE = "bfloat16"
"""The attention format of the granular prefill MLA table's rows (``context_mla_perf``'s
``mla_dtype``: it measured bf16 attention only, aiconfigurator's default)."""

MLA_ARCHITECTURE = "DeepseekV3ForCausalLM"
"""The model whose MLA block the module tables measured (a newer table holds other
models' rows too: only these are read)."""

MOE_FORMATS: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "bfloat16",
    "fp8": "fp8",
    "int4": "int4_wo",
    "fp4": "w4a16_mxfp4",
    "nvfp4": "nvfp4",
    "fp8-block": "fp8_block",
}
"""Catalog weight format -> the database's MoE mode (``fp8-block`` as for ``GEMM_FORMATS``)."""

UNWINDOWED = ("window_size",)
"""Columns a table may lack, read as 0 where it does: a table without ``window_size`` measured
full attention only (no sliding window)."""

FILLED = "wideep_"
"""The prefix of the tables read with the database's backward fill (``Kernels._filled``):
the wide-EP tables, each measured at an older version than the engine's current one
(SGLang 0.5.14 reads its wide-EP MLA and MoE tables from 0.5.10 and its DeepEP tables from
0.5.12, the multi-node DeepEP rows from 0.5.6.post2)."""

WIDE_EP_KERNEL = "flashinfer"
"""The kernel source of the wide-EP MLA rows aiconfigurator reads by default (its
``attn_backend``); a table holding one source only (B200: ``trtllm_mla``) is read at it."""

WIDE_EP_FMHA = "fp8_block"
"""The attention format of the wide-EP MLA rows (``mla_dtype``: the only one measured, FP8
block-scaled projections and attention, DeepSeek-V3's checkpoint)."""

WIDE_EP_SMS = 20
"""The streaming multiprocessors DeepEP's normal (prefill) kernels are given: aiconfigurator's
default (``ModelConfig.sms``), a coordinate of the normal-mode table's rows."""

DISTRIBUTION = "power_law_1.2"
"""How tokens are routed to experts when the MoE table is read: the database's own default
for a MoE model (a power law of exponent 1.2; measured serving traffic is not balanced)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """One shape's latency from the database.

    latency_s : At the shape asked for, or (``extrapolated``) at ``at`` [s]; None: no reading
    basis : ``measured``, ``interpolated``, ``extrapolated`` or "" (no reading)
    at : The coordinates the latency was read at (the shape clamped into each axis's measured
        range)
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
class Readings:
    """Many shapes' latencies from the database, one per element of the shapes' arrays.

    latency_s : At each shape asked for, or (``extrapolated``) at ``at`` [s]; NaN: no reading
    basis : Each one's basis code (``NAMES``: measured, interpolated, extrapolated, none), int8
    at : The coordinates each latency was read at (the shapes clamped into the measured
        range), one array per coordinate; empty where the table has none
    reason : Why there is no reading ("" where there is one)
    moved : Whether each shape was clamped (its latency is read at ``at``, not at the shape;
        bool, None: none was); an ``extrapolated`` shape inside every axis's range is not
    """

    latency_s: np.ndarray
    basis: np.ndarray
    at: Mapping[str, np.ndarray] = field(default_factory=dict)
    reason: str = ""
    moved: np.ndarray | None = None

    def one(self) -> Reading:
        """The single reading of a one-shape ``Readings``."""
        latency = float(self.latency_s.flat[0])
        at = {name: float(values.flat[0]) for name, values in self.at.items()}
        reason = self.reason if np.isnan(latency) and self.reason else ""
        return Reading(None if reason else latency, str(NAMES[self.basis.flat[0]]), at, reason)


Placed = tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]
"""Shapes placed in a table: their basis codes (int8), the shapes clamped into each axis's
measured range and whether each was clamped (bool); kept in ``_Table.memo``, so never
written to."""

MEMO = 4096
"""The most placements a table keeps (``_Table.place``); it starts again when full."""

MEMO_SIZE = 1 << 16
"""The most values of shapes whose placement a table keeps (larger ones are placed anew)."""


def _key(name: str, value: Any) -> tuple[Any, ...]:
    """A hashable key of one coordinate's value (a number or an array of them)."""
    if np.ndim(value) == 0:
        return (name, float(value))
    array = np.asarray(value)
    return (name, array.shape, array.dtype.str, array.tobytes())


@dataclass(frozen=True, slots=True)
class _Table:
    """The measured points of one table at one format.

    ranges : Each coordinate's sorted measured values, over the rows at the format (what a
        shape is clamped into)
    axes : Each coordinate's sorted measured values, over the rows the basis counts (those
        at the format and, for the MoE table, the routing read: a subset of ``ranges``' rows)
    held : Whether each combination of ``axes`` is a measured row (bool, one dim per axis, in
        ``axes``' order)
    """

    ranges: Mapping[str, np.ndarray]
    axes: Mapping[str, np.ndarray]
    held: np.ndarray
    memo: dict[tuple[Any, ...], Placed] = field(default_factory=dict, compare=False)

    def place(self, shape: Mapping[str, Any], exact: Mapping[str, Any] | None = None) -> Placed:
        """``placed`` of these shapes, each distinct set of arrays once (memoized up to
        ``MEMO_SIZE`` values: a grid's configurations ask the same batches and lengths at
        other weights' shapes, and a small grid's lookups are mostly their fixed cost)."""
        point = {**shape, **(exact or {})}
        if sum(np.size(value) for value in point.values()) > MEMO_SIZE:
            return self.placed(shape, exact)  # a large grid: its per-call cost is amortized
        key = (*(_key(name, point[name]) for name in sorted(point)), tuple(shape))
        placed = self.memo.get(key)
        if placed is None:
            if len(self.memo) >= MEMO:
                self.memo.clear()
            placed = self.memo[key] = self.placed(shape, exact)
        return placed

    def placed(self, shape: Mapping[str, Any], exact: Mapping[str, Any] | None = None) -> Placed:
        """The basis code of each of the ``shape`` arrays' shapes (they broadcast; int8),
        the shapes clamped into each axis's measured range (an axis the table lacks passes
        through) and whether a shape was clamped (bool). ``exact`` gives the table's other
        coordinates (never clamped: a window, a parallel degree), which count for the basis.

        The basis is the coverage of the measured rows (docs/expected.md, "Basis"):
        ``measured`` where the shape is a measured row, ``interpolated`` where every corner of
        the cell of measured values around it (per axis the nearest measured value at or
        below and at or above) is a measured row, ``extrapolated`` elsewhere: outside an
        axis's range, or inside every range but not inside the rows measured together."""
        outside: Any = False
        clamped = {}
        for name, value in shape.items():
            held = self.ranges.get(name)
            asked = np.asarray(value, dtype=np.float64)
            if held is None or held.size == 0:
                clamped[name] = asked
                continue
            clamped[name] = np.minimum(np.maximum(asked, float(held[0])), float(held[-1]))
            outside = outside | (clamped[name] != asked)
        code = self.cover({**shape, **(exact or {})})
        size = np.broadcast_shapes(*(np.shape(v) for v in shape.values()))
        return np.broadcast_to(code, size), clamped, np.broadcast_to(outside, size)

    def cover(self, point: Mapping[str, Any]) -> np.ndarray:
        """The basis code of each point (``point``: every axis's values, arrays that
        broadcast): 0 a measured row, 1 inside the cell of measured rows around it, 2 not."""
        if self.held.size == 0:
            size = np.broadcast_shapes(*(np.shape(v) for v in point.values()))
            return np.full(size, EXTRAPOLATED, dtype=np.int8)
        beyond: Any = False
        on: Any = True
        corners: list[list[Any]] = []
        for name, held in self.axes.items():
            if np.ndim(point[name]) == 0:  # a scalar: its cell in plain Python, once a call
                low, high, hit, out = _bracket(held, float(point[name]))
                beyond, on = beyond | out, on & hit
                corners.append([low] if hit else [low, high])
                continue
            asked = np.asarray(point[name], dtype=np.float64)
            lows = np.clip(np.searchsorted(held, asked, side="right") - 1, 0, held.size - 1)
            hits = held[lows] == asked
            beyond = beyond | (asked < held[0]) | (asked > held[-1])
            on = on & hits
            highs = np.minimum(lows + ~hits, held.size - 1)
            corners.append([lows] if bool(np.all(hits)) else [lows, highs])
        inside: Any = ~np.asarray(beyond)
        for corner in itertools.product(*corners):
            inside = inside & self.held[corner]
        return np.where(inside, np.where(on, 0, 1), EXTRAPOLATED).astype(np.int8)


def _bracket(held: np.ndarray, value: float) -> tuple[int, int, bool, bool]:
    """The cell of measured values ``held`` (sorted) around ``value``: the index of the
    nearest at or below it and of the nearest at or above it (clipped into ``held``), whether
    ``value`` is measured and whether it lies outside ``held``'s range."""
    low = min(max(int(np.searchsorted(held, value, side="right")) - 1, 0), held.size - 1)
    hit = bool(held[low] == value)
    out = bool(value < held[0] or value > held[-1])
    return low, min(low + (not hit), held.size - 1), hit, out


class Kernels:
    """The measured kernels of one ``system``, ``engine`` and ``version`` (see the module).

    Each lookup takes arrays of shapes (``*_many``): the distinct shapes among them are read
    once each (and once a process: memoized); the scalar methods read one shape."""

    def __init__(self, system: str, engine: str, version: str) -> None:
        require(f"engine {engine!r}")
        self.system, self.engine, self.version = system, engine, version
        self._memo: dict[tuple[str, bool, int], tuple[np.ndarray, np.ndarray]] = {}
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
        self,
        family: str,
        name: str,
        where: tuple[tuple[str, str], ...],
        axes: tuple[str, ...],
        counted: tuple[tuple[str, str], ...] = (),
    ) -> _Table | None:
        """The measured points of table ``name`` over ``axes`` among its rows where each
        ``(column, value)`` of ``where`` holds (None: not held); the basis counts only those
        of them where ``counted`` holds too."""
        import polars as pl

        path = self._folder(family) / f"{name}.parquet"
        if not all(value for _, value in where):
            return None
        names = tuple(dict.fromkeys((*axes, *(column for column, _ in counted))))
        if name.startswith(FILLED):
            frame = self._filled(family, name, (*names, *(c for c, _ in where)))
            if frame is None:
                return None
        elif not path.is_file():
            return None
        else:
            frame = pl.scan_parquet(path)
        columns = frame.collect_schema().names()
        # an older table measured no sliding window (vLLM 0.14.0's attention): every row is 0
        frame = frame.with_columns(
            *(pl.lit(0).alias(c) for c in UNWINDOWED if c in names and c not in columns)
        )
        if any(c not in columns and c not in UNWINDOWED for c in (*names, *(c for c, _ in where))):
            return None
        for column, value in where:
            frame = frame.filter(pl.col(column) == value)
        rows = frame.select(names).unique().collect()
        if rows.height == 0:
            return None
        ranges = {a: np.sort(rows[a].unique().to_numpy()) for a in axes}
        for column, value in counted:
            rows = rows.filter(pl.col(column) == value)
        values = {a: np.sort(rows[a].unique().to_numpy()) for a in axes}
        held = np.zeros(tuple(v.size for v in values.values()), dtype=bool)
        held[tuple(np.searchsorted(values[a], rows[a].to_numpy()) for a in axes)] = True
        return _Table(ranges, values, held)

    def _filled(self, family: str, name: str, columns: tuple[str, ...]) -> Any:
        """The rows of table ``name`` as the database serves them at this version: its own
        version's and every older version's that holds the table (the database's backward
        fill: a row the newer version lacks is read from the older), ``columns`` of each
        (a version's table lacking one is left out); None: no version holds it."""
        import polars as pl

        from sweeps.measured.database import _version_key

        root = systems_root() / "data" / self.system / family / self.engine
        here = _version_key(self.version)
        frames = []
        for folder in sorted(root.glob("*"), key=lambda p: _version_key(p.name)):
            path = folder / f"{name}.parquet"
            if _version_key(folder.name) > here or not path.is_file():
                continue
            frame = pl.scan_parquet(path)
            held = frame.collect_schema().names()
            wanted = [c for c in dict.fromkeys(columns) if c not in UNWINDOWED or c in held]
            if all(c in held for c in wanted):
                frames.append(frame.select(wanted))
        return pl.concat(frames, how="vertical_relaxed") if frames else None

    @property
    def asked(self) -> int:
        """How many shapes the estimator has been asked (each once) [1]."""
        return sum(held.size for held, _ in self._memo.values())

    def forget(self) -> None:
        """Forget the shapes read (not the tables): the next lookups ask the estimator again."""
        self._memo.clear()

    def _spec(self, op: Any) -> str:
        """The op as the estimator reads it (an attention op's kernel lanes resolved once)."""
        from aiconfigurator_core.sdk.engine import _resolve_attention_lane_orders, build_ops_json

        asked = build_ops_json([op])
        spec = self._specs.get(asked)
        if spec is None:
            if hasattr(op, "_lane_order"):
                _quiet(_resolve_attention_lane_orders, [op], self._handle[0], None)
            spec = self._specs[asked] = build_ops_json([op])
        return spec

    def _evaluate(
        self, op: Any, *, context: bool, batch: Any, s: Any, prefix: int = 0
    ) -> np.ndarray:
        """One op's latency from the database's estimator at each ``batch``, ``s`` (arrays
        that broadcast) [s], after a cached ``prefix`` of ``prefix`` tokens (a prefill's;
        0: none): each distinct pair asked once, and once a process (memoized by the op's
        spec as sorted keys and values, and the prefix); NaN where it has none.

        The estimator (aiconfigurator-core's compiled query: 2 us a shape among the measured rows,
        130 us outside them) is asked shape by
        shape: its values are not the tables' linear interpolation (a decode attention step
        between two measured contexts is not on their chord, and at a measured context need
        not be the table's value), so a NumPy interpolation of the tables would not give the
        same numbers."""
        spec = self._spec(op)
        distinct, where = _distinct_keys(np.asarray(batch), np.asarray(s))
        memo = (spec, context, prefix)
        held, values = self._memo.get(memo, (np.empty(0, np.int64), np.empty(0)))
        at = np.minimum(np.searchsorted(held, distinct), max(held.size - 1, 0))
        missing = distinct if held.size == 0 else distinct[held[at] != distinct]
        if missing.size:
            asked = np.array([self._ask(spec, context, int(k), prefix) for k in missing.tolist()])
            held, values = np.concatenate([held, missing]), np.concatenate([values, asked])
            order = np.argsort(held, kind="stable")
            held, values = held[order], values[order]
            self._memo[memo] = (held, values)
            at = np.searchsorted(held, distinct)
        return values[at][where]

    def _ask(self, spec: str, context: bool, key: int, prefix: int = 0) -> float:
        """The estimator's latency of one shape (``key``: batch and s; ``prefix`` cached
        tokens before its ``s``) [s] (NaN: none)."""
        handle = self._handle[1]
        batch, s = key >> _SHIFT, key & ((1 << _SHIFT) - 1)
        try:
            row = handle.evaluate_ops_json(
                spec, is_context=context, batch_size=batch, s=s, prefix=prefix
            )
        except Exception:
            return math.nan
        return float(row[0][1]) * 1e-3  # the database's ms

    def gemm_many(self, m: Any, n: int, k: int, fmt: str) -> Readings:
        """GEMMs of ``m`` tokens (an array) by an ``n x k`` weight in catalog format ``fmt``."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = GEMM_FORMATS.get(fmt, "")
        table = self._table("gemm", "gemm_perf", (("gemm_dtype", mode),), ("m", "n", "k"))
        if table is None:
            return _none_many(m, f"GEMM format {fmt!r} not in the {self.engine} tables")
        basis, at, moved = table.place({"m": m, "n": n, "k": k})
        n_at, k_at = round(float(at["n"].flat[0])), round(float(at["k"].flat[0]))
        op = ops.GEMM("gemm", 1, n_at, k_at, common.GEMMQuantMode[mode])
        latency = self._evaluate(op, context=False, batch=np.round(at["m"]), s=1)
        return _read(latency, basis, at, moved)

    def gemm(self, m: int, n: int, k: int, fmt: str) -> Reading:
        """A GEMM of ``m`` tokens by an ``n x k`` weight in catalog format ``fmt``."""
        return self.gemm_many(np.array([m]), n, k, fmt).one()

    def attention_many(
        self, *, prefill: bool, batch: Any, length: Any, heads: int, kv_heads: int,
        head_dim: int, window: int, fmt: str, cached: Any = None,
    ) -> Readings:  # fmt: skip
        """Attention of ``batch`` sequences (an array): a decode step against ``length``
        cached tokens, or a prefill of ``length`` prompt tokens (an array, broadcast with
        ``batch``); ``heads`` and ``kv_heads`` per device, ``window`` the sliding window
        (0: none), ``fmt`` the KV format.

        ``cached`` (a prefill only; whole tokens, an array broadcast with the others): the
        first ``cached`` of the ``length`` prompt tokens are cached, and only the others are
        computed, attending to the whole prompt (the estimator's prefix, as aiconfigurator's
        static prefill with a prefix reads it). No table row holds a prefix: the estimator
        derives it from the rows of the whole prompt, which the shape is placed among, so
        a reading with a prefix is never ``measured`` (at least ``interpolated``). Where the
        prompt is clamped into the measured range, the prefix is scaled with it (the same
        share of the prompt); ``at["cached"]`` is the prefix read at. ``cached`` 0 is the
        plain prefill, read for read."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = KV_FORMATS.get(fmt, "")
        name = "context_attention_perf" if prefill else "generation_attention_perf"
        length_axis = "isl" if prefill else "step"
        axes = ("batch_size", length_axis, "num_heads", "num_key_value_heads", "head_dim")
        where = (("kv_cache_dtype", mode),)
        table = self._table("attention", name, where, (*axes, "window_size"))
        if table is None:
            reason = f"KV format {fmt!r} not in the {self.engine} attention tables"
            return _none_phase(batch, length, reason)
        shape = {**_phase_shape(prefill, batch, length), "num_heads": heads,
                 "num_key_value_heads": kv_heads, "head_dim": head_dim}  # fmt: skip
        basis, at, moved = table.place(shape, {"window_size": window})
        got = {key: round(float(at[key].flat[0])) for key in axes[2:]}
        kv = common.KVCacheQuantMode[mode]
        if prefill:
            fmha = common.FMHAQuantMode.bfloat16
            op = ops.ContextAttention(
                "attention", 1, got["num_heads"], got["num_key_value_heads"], kv, fmha,
                head_size=got["head_dim"], window_size=window,
            )  # fmt: skip
        else:
            op = ops.GenerationAttention(
                "attention", 1, got["num_heads"], got["num_key_value_heads"], kv,
                head_size=got["head_dim"], window_size=window,
            )  # fmt: skip
        s = _asked_length(prefill, at)
        if cached is None or not prefill:
            latency = self._evaluate(op, context=prefill, batch=np.round(at["batch_size"]), s=s)
            return _read(latency, basis, at, moved)
        prompt = np.asarray(length, dtype=np.float64)
        held = np.asarray(cached, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            scaled = np.rint(held * s / prompt)  # the same share of a clamped prompt
        prefix = np.where(s == prompt, held, scaled)
        latency = self._prefixed(op, np.round(at["batch_size"]), s, prefix)
        code = np.where(prefix > 0, np.maximum(basis, 1), basis).astype(np.int8)
        return _read(latency, code, {**at, "cached": prefix}, moved)

    def _prefixed(self, op: Any, batch: Any, s: Any, prefix: Any) -> np.ndarray:
        """A prefill op's latency at each ``batch``, whole prompt ``s`` and cached ``prefix``
        (arrays that broadcast) [s]: the estimator asked at ``s - prefix`` new tokens after
        the prefix, each distinct prefix's shapes at once (``_evaluate``)."""
        sizes, prompts, prefixes = np.broadcast_arrays(batch, s, prefix)
        out = np.empty(sizes.shape)
        for value in np.unique(prefixes):
            here = prefixes == value
            out[here] = self._evaluate(
                op, context=True, batch=sizes[here], s=prompts[here] - value, prefix=int(value)
            )
        return out

    def attention(
        self, *, prefill: bool, batch: int, length: int, heads: int, kv_heads: int,
        head_dim: int, window: int, fmt: str,
    ) -> Reading:  # fmt: skip
        """Attention of one shape (``attention_many``)."""
        return self.attention_many(
            prefill=prefill, batch=np.array([batch]), length=np.array([length]), heads=heads,
            kv_heads=kv_heads, head_dim=head_dim, window=window, fmt=fmt,
        ).one()  # fmt: skip

    def mla_table(self, prefill: bool, fmt: str, kv_fmt: str) -> _Table | None:
        """The MLA module table of one phase at GEMM format ``fmt`` and KV format ``kv_fmt``
        (None: the engine's tables hold no such rows)."""
        name = "mla_context_module_perf" if prefill else "mla_generation_module_perf"
        where = (("kv_cache_dtype", KV_FORMATS.get(kv_fmt, "")),
                 ("gemm_type", MLA_GEMM_FORMATS.get(fmt, "")),
                 ("architecture", MLA_ARCHITECTURE))  # fmt: skip
        length_axis = "isl" if prefill else "step"
        return self._table("mla", name, where, ("batch_size", length_axis, "num_heads"))

    def mla_many(
        self, *, prefill: bool, batch: Any, length: Any, heads: int, native_heads: int,
        fmt: str, kv_fmt: str,
    ) -> Readings:  # fmt: skip
        """One layer's MLA block measured as one module (the database's ``MLAModule``: the
        q/kv down projection, the q up projection, attention with the kv up projection (a
        prefill) or the absorbed BMMs (a decode step) and the output projection) for
        ``batch`` sequences (an array): a decode step against ``length`` cached tokens, or a
        prefill of ``length`` prompt tokens (an array, broadcast with ``batch``); ``heads``
        per device of the model's ``native_heads``, ``fmt`` the projections' format, ``kv_fmt``
        the KV format."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        table = self.mla_table(prefill, fmt, kv_fmt)
        if table is None:
            reason = f"no MLA module table for {self.engine} at GEMM {fmt!r}, KV {kv_fmt!r}"
            return _none_phase(batch, length, reason)
        basis, at, moved = table.place({**_phase_shape(prefill, batch, length), "num_heads": heads})
        op = ops.MLAModule(
            "mla", 1, prefill, round(float(at["num_heads"].flat[0])),
            common.KVCacheQuantMode[KV_FORMATS[kv_fmt]], common.FMHAQuantMode.bfloat16,
            common.GEMMQuantMode[MLA_GEMM_FORMATS[fmt]], native_num_heads=native_heads,
        )  # fmt: skip
        s = _asked_length(prefill, at)
        latency = self._evaluate(op, context=prefill, batch=np.round(at["batch_size"]), s=s)
        return _read(latency, basis, at, moved)

    def mla_attention_table(self, prefill: bool, kv_fmt: str) -> _Table | None:
        """The granular MLA attention table of one phase at KV format ``kv_fmt`` (None: the
        engine holds none): the latent attention alone, without its projections or BMMs
        (SGLang's ``context_mla_perf`` and ``generation_mla_perf``)."""
        name = "context_mla_perf" if prefill else "generation_mla_perf"
        where: tuple[tuple[str, str], ...] = (("kv_cache_dtype", KV_FORMATS.get(kv_fmt, "")),)
        if prefill:  # the prefill table's rows also name their attention format
            where = (*where, ("mla_dtype", MLA_ATTENTION_DTYPE))
        length_axis = "isl" if prefill else "step"
        return self._table("mla", name, where, ("batch_size", length_axis, "num_heads"))

    def mla_attention_many(
        self, *, prefill: bool, batch: Any, length: Any, heads: int, kv_fmt: str
    ) -> Readings:
        """One layer's latent MLA attention from the granular tables (the database's
        ``ContextMLA``, ``GenerationMLA``) for ``batch`` sequences (an array): a decode step
        against ``length`` cached tokens (the absorbed form, over the latent cache), or a
        prefill of ``length`` prompt tokens (an array, broadcast with ``batch``); ``heads``
        per device, ``kv_fmt`` the KV format. Each of the tables' shapes was measured twice
        (two rows, within 2 % of each other, the ``tp_size`` column the heads' tp split);
        the estimator reads the first of the two in the table's order, so that is the
        value at a measured shape."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        table = self.mla_attention_table(prefill, kv_fmt)
        if table is None:
            reason = f"no granular MLA attention table for {self.engine} at KV {kv_fmt!r}"
            return _none_phase(batch, length, reason)
        basis, at, moved = table.place({**_phase_shape(prefill, batch, length), "num_heads": heads})
        got = round(float(at["num_heads"].flat[0]))
        kv = common.KVCacheQuantMode[KV_FORMATS[kv_fmt]]
        if prefill:
            fmha = common.FMHAQuantMode[MLA_ATTENTION_DTYPE]
            op: Any = ops.ContextMLA("mla_attention", 1, got, kv, fmha)
        else:
            op = ops.GenerationMLA("mla_attention", 1, got, kv)
        s = _asked_length(prefill, at)
        latency = self._evaluate(op, context=prefill, batch=np.round(at["batch_size"]), s=s)
        return _read(latency, basis, at, moved)

    def mla_bmm_table(self, pre: bool, fmt: str) -> _Table | None:
        """The absorbed MLA BMM table (``mla_bmm_perf``) of the BMM before the latent
        attention (``pre``) or after it, at weight format ``fmt`` (None: none held)."""
        where = (("op_name", "mla_gen_pre" if pre else "mla_gen_post"),
                 ("bmm_dtype", MLA_BMM_FORMATS.get(fmt, "")))  # fmt: skip
        return self._table("mla_bmm", "mla_bmm_perf", where, ("num_tokens", "num_heads"))

    def mla_bmm_many(self, *, tokens: Any, heads: int, fmt: str, pre: bool) -> Readings:
        """One layer's absorbed MLA BMM of a decode step (the database's ``MLABmm``): ``pre``
        the query's no-rope part into the latent (``heads`` BMMs of ``tokens x 128`` by
        ``128 x 512``), else the attention's latent output into the value heads (``512`` to
        ``128``); ``tokens`` an array, ``heads`` per device, ``fmt`` the weight format.
        Measured twice a shape, as the MLA attention tables are: the first row is read."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        table = self.mla_bmm_table(pre, fmt)
        if table is None:
            return _none_many(tokens, f"no MLA BMM table for {self.engine} at {fmt!r}")
        basis, at, moved = table.place({"num_tokens": tokens, "num_heads": heads})
        mode = common.GEMMQuantMode[MLA_BMM_FORMATS[fmt]]
        got = round(float(at["num_heads"].flat[0]))
        op = ops.MLABmm("mla_bmm", 1, got, mode, if_pre=pre)
        latency = self._evaluate(op, context=False, batch=np.round(at["num_tokens"]), s=1)
        return _read(latency, basis, at, moved)

    def _wide_source(self, family: str, name: str) -> str:
        """The kernel source a wide-EP MLA table is read at: ``WIDE_EP_KERNEL`` where it holds
        it, else its only one ("" where it holds several others or none)."""
        rows = self._filled(family, name, ("kernel_source",))
        if rows is None:
            return ""
        held = set(rows.collect()["kernel_source"].unique().to_list())
        if WIDE_EP_KERNEL in held or len(held) != 1:
            return WIDE_EP_KERNEL if WIDE_EP_KERNEL in held else ""
        return str(held.pop())

    def wide_mla_table(self, prefill: bool, fmt: str, kv_fmt: str) -> _Table | None:
        """The wide-EP MLA table of one phase (SGLang's DeepEP layout: the block's q and kv up
        projections, attention and output projection, without the down projection) at weight
        format ``fmt`` and KV format ``kv_fmt`` (None: no such rows)."""
        name = f"wideep_{'context' if prefill else 'generation'}_mla_perf"
        mode = WIDE_EP_FMHA if MLA_GEMM_FORMATS.get(fmt) == WIDE_EP_FMHA else ""
        where = (("kernel_source", self._wide_source("mla", name)), ("mla_dtype", mode),
                 ("kv_cache_dtype", KV_FORMATS.get(kv_fmt, "")))  # fmt: skip
        return self._table("mla", name, where, ("batch_size", "isl", "num_heads"))

    def wide_mla_many(
        self, *, prefill: bool, batch: Any, length: Any, tp: int, fmt: str, kv_fmt: str
    ) -> Readings:
        """One layer's MLA block on the wide-EP layout (the database's ``WideEPContextMLA``,
        ``WideEPGenerationMLA``) for ``batch`` sequences (an array): a prefill of ``length``
        prompt tokens, or a decode step against a context of ``length`` tokens (the table's
        ``isl`` either way); the heads DeepSeek-V3's 128 over ``tp``."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        table = self.wide_mla_table(prefill, fmt, kv_fmt)
        if table is None:
            reason = (f"no wide-EP MLA table for {self.engine} {self.version} at weights "
                      f"{fmt!r}, KV {kv_fmt!r}")  # fmt: skip
            return _none_phase(batch, length, reason)
        shape = {"batch_size": batch, "isl": np.asarray(length), "num_heads": 128 // tp}
        basis, at, moved = table.place(shape)
        kind = ops.WideEPContextMLA if prefill else ops.WideEPGenerationMLA
        op = kind(
            "mla", 1, tp, common.KVCacheQuantMode[KV_FORMATS[kv_fmt]],
            common.FMHAQuantMode[WIDE_EP_FMHA], WIDE_EP_KERNEL,
        )  # fmt: skip
        latency = self._evaluate(
            op, context=prefill, batch=np.round(at["batch_size"]), s=np.round(at["isl"])
        )
        return _read(latency, basis, at, moved)

    def wide_moe_many(
        self, *, prefill: bool, tokens: Any, hidden: int, inter: int, topk: int, experts: int,
        ep: int, replicas: int, fmt: str, distribution: str,
    ) -> Readings:  # fmt: skip
        """The routed experts of a MoE layer on the wide-EP layout (the database's
        ``MoEExpertCompute`` over SGLang's DeepEP MoE tables, one a phase): ``tokens`` a
        rank's own (an array); the table's tokens are the ``replicas`` ranks' together."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = MOE_FORMATS.get(fmt, "")
        phase = "context" if prefill else "generation"
        axes = ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts")
        table = self._table(
            "moe", f"wideep_{phase}_moe_perf", (("moe_dtype", mode),),
            (*axes, "moe_tp_size", "moe_ep_size"), (("distribution", distribution),),
        )  # fmt: skip
        every = np.asarray(tokens) * replicas
        if table is None:
            reason = f"no wide-EP MoE table for {self.engine} {self.version} at {fmt!r}"
            return _none_many(every, reason)
        shape = {"num_tokens": every, "hidden_size": hidden, "inter_size": inter,
                 "topk": topk, "num_experts": experts}  # fmt: skip
        basis, at, moved = table.place(shape, {"moe_tp_size": 1, "moe_ep_size": ep})
        h, i, k, e = (round(float(at[name].flat[0])) for name in axes[1:])
        op = ops.MoEExpertCompute(
            "moe", 1, hidden_size=h, inter_size=i, topk=k, num_experts=e, moe_ep_size=ep,
            quant_mode=common.MoEQuantMode[mode], workload_distribution=distribution,
            attention_dp_size=replicas, inference_phase=phase, num_slots=None, is_gated=True,
            enable_eplb=False,
        )  # fmt: skip
        asked = np.maximum(np.round(at["num_tokens"] / replicas), 1)  # a rank's, at ``at``
        return _read(self._evaluate(op, context=False, batch=asked, s=1), basis, at, moved)

    def deepep_many(
        self, *, prefill: bool, tokens: Any, hidden: int, topk: int, experts: int, ep: int,
        nodes: int,
    ) -> Readings:  # fmt: skip
        """A MoE layer's DeepEP dispatch and combine (the database's ``MoEAllToAll``, the two
        summed) of ``tokens`` a rank's own (an array) over ``ep`` ranks on ``nodes`` nodes:
        the normal kernels (``deepep_ht``, ``WIDE_EP_SMS`` SMs) in a prefill, the low-latency
        ones (``deepep_ll``) in a decode step, as aiconfigurator's SGLang wide-EP path picks
        them."""
        from aiconfigurator_core.sdk import operations as ops

        kind = "normal" if prefill else "ll"
        axes = ("num_token", "hidden_size", "num_topk", "num_experts")
        where = (("dispatch_sms", WIDE_EP_SMS), ("combine_sms", WIDE_EP_SMS)) if prefill else ()
        table = self._table(
            "comm", f"wideep_deepep_{kind}_perf", (("kernel_source", "deepep"),),
            (*axes, "node_num", *(c for c, _ in where)),
        )  # fmt: skip
        rows = np.asarray(tokens)
        if table is None:
            return _none_many(rows, f"no DeepEP {kind} table for {self.engine} {self.version}")
        shape = {"num_token": rows, "hidden_size": hidden, "num_topk": topk, "num_experts": experts}
        basis, at, moved = table.place(shape, {"node_num": nodes, **dict(where)})
        backend = "deepep_ht" if prefill else "deepep_ll"
        h, k, e = (round(float(at[name].flat[0])) for name in axes[1:])
        both = [
            ops.MoEAllToAll(
                f"moe_{phase}", 1, phase=phase, comm_dtype="default", comm_backend=backend,
                hidden_size=h, topk=k, num_experts=e, moe_ep_size=ep, node_num=nodes,
                sms=WIDE_EP_SMS if prefill else 0, attention_tp_size=1,
            )
            for phase in ("dispatch", "combine")
        ]  # fmt: skip
        asked = np.round(at["num_token"])
        latency = sum(self._evaluate(op, context=False, batch=asked, s=1) for op in both)
        return _read(np.asarray(latency), basis, at, moved)

    def allreduce_many(self, tokens: Any, hidden: int, tp: int) -> Readings:
        """All-reduces of ``tokens`` rows (an array) of ``hidden`` bf16 values over ``tp``
        devices (the estimator is asked at ``at``, the message size clamped into the measured
        range, as the caller's roofline scaling takes it: the estimator's own extrapolation
        beyond the range, scaled again, was counted twice)."""
        from aiconfigurator_core.sdk import operations as ops

        rows = np.asarray(tokens)
        if tp <= 1:
            return Readings(np.zeros(rows.shape), np.zeros(rows.shape, dtype=np.int8))
        axes = ("num_gpus", "message_size")
        table = self._table("comm", "custom_allreduce_perf", (("op_name", "all_reduce"),), axes)
        if table is None:
            return _none_many(rows, f"no all-reduce table for {self.engine}")
        basis, at, moved = table.place({"num_gpus": tp, "message_size": rows * hidden})
        op = ops.CustomAllReduce("allreduce", 1, hidden, tp)
        asked = np.where(moved, np.round(at["message_size"] / hidden), rows)  # read at ``at``
        return _read(self._evaluate(op, context=False, batch=asked, s=1), basis, at, moved)

    def allreduce(self, tokens: int, hidden: int, tp: int) -> Reading:
        """The all-reduce of ``tokens`` rows of ``hidden`` bf16 values over ``tp`` devices."""
        return self.allreduce_many(np.array([tokens]), hidden, tp).one()

    def moe_many(
        self, *, tokens: Any, hidden: int, inter: int, topk: int, experts: int,
        tp: int, ep: int, fmt: str, distribution: str = DISTRIBUTION,
    ) -> Readings:  # fmt: skip
        """The routed experts of a MoE layer for ``tokens`` tokens (an array; routed as
        ``distribution``, by default ``DISTRIBUTION``; the estimator is asked at the shape
        clamped into the measured ranges, tokens and widths, expert counts alike, as the
        caller's roofline scaling takes them: asked beyond them, the estimator extrapolates on
        its own and the scaling counted that twice)."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = MOE_FORMATS.get(fmt, "")
        axes = ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts")
        table = self._table(
            "moe", "moe_perf", (("moe_dtype", mode),), (*axes, "moe_tp_size", "moe_ep_size"),
            (("distribution", distribution),),
        )  # fmt: skip
        if table is None:
            return _none_many(tokens, f"MoE format {fmt!r} not in the {self.engine} tables")
        shape = {"num_tokens": tokens, "hidden_size": hidden, "inter_size": inter,
                 "topk": topk, "num_experts": experts}  # fmt: skip
        basis, at, moved = table.place(shape, {"moe_tp_size": tp, "moe_ep_size": ep})
        h, i, k, e = (round(float(at[name].flat[0])) for name in axes[1:])
        op = ops.MoE(
            "moe", 1, h, i, k, e, tp, ep, common.MoEQuantMode[mode], distribution, 1,
        )  # fmt: skip
        asked = np.round(at["num_tokens"])  # read at ``at``: the caller scales what moved
        return _read(self._evaluate(op, context=False, batch=asked, s=1), basis, at, moved)

    def dispatch_many(
        self, *, tokens: Any, hidden: int, topk: int, experts: int, tp: int, ep: int,
        replicas: int, fmt: str,
    ) -> Readings:  # fmt: skip
        """The dispatch and combine of a MoE layer's tokens over ``ep`` expert-parallel ranks
        of ``tp`` devices each, the attention in ``replicas`` data-parallel copies (``ep``
        with data-parallel attention, else 1): ``tokens`` a rank's own (an array), the
        database's pre- and post-dispatch ops summed (they hold the layer's tensor-parallel
        all-reduces). The estimator picks the collective and its message inside (its
        all-to-all tables where it holds them, else its NCCL readings; no table this module
        can place the shape in), so the basis is always ``extrapolated``, never more certain
        than what can be traced (and no ``at``)."""
        from aiconfigurator_core.sdk import common
        from aiconfigurator_core.sdk import operations as ops

        mode = MOE_FORMATS.get(fmt, "")
        if not mode:
            return _none_many(tokens, f"MoE format {fmt!r} not in the {self.engine} tables")
        quant = common.MoEQuantMode[mode]
        shape = (hidden, topk, experts, tp, ep, replicas)  # moe tp, ep, attention dp
        both = [
            ops.MoEDispatch("dispatch", 1, *shape, pre, quant_mode=quant, backend=self.engine)
            for pre in (True, False)
        ]
        latency = sum(self._evaluate(op, context=False, batch=tokens, s=1) for op in both)
        basis = np.where(np.isnan(latency), NONE, EXTRAPOLATED).astype(np.int8)
        return Readings(np.asarray(latency), basis, {})

    def moe(
        self, *, tokens: int, hidden: int, inter: int, topk: int, experts: int,
        tp: int, ep: int, fmt: str,
    ) -> Reading:  # fmt: skip
        """The routed experts of a MoE layer for ``tokens`` tokens (``moe_many``)."""
        return self.moe_many(
            tokens=np.array([tokens]), hidden=hidden, inter=inter, topk=topk, experts=experts,
            tp=tp, ep=ep, fmt=fmt,
        ).one()  # fmt: skip

    def embedding_many(self, tokens: Any, vocab: int, hidden: int) -> Readings:
        """Gathers of ``tokens`` embedding rows (an array): no table holds it; the database's
        own bandwidth-share model, so always ``extrapolated`` (and no ``at``)."""
        from aiconfigurator_core.sdk import operations as ops

        op = ops.Embedding("embedding", 1, vocab, hidden, 0.3)
        latency = self._evaluate(op, context=False, batch=tokens, s=1)
        basis = np.where(np.isnan(latency), NONE, EXTRAPOLATED).astype(np.int8)
        return Readings(latency, basis, {})

    def embedding(self, tokens: int, vocab: int, hidden: int) -> Reading:
        """The gather of ``tokens`` embedding rows (``embedding_many``)."""
        return self.embedding_many(np.array([tokens]), vocab, hidden).one()


_SHIFT = 32
"""A shape's key: its batch shifted by this many bits, or its ``s``."""


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of a flat array, without the sort where
    ``values`` is sorted already (a grid's batches or lengths, clamped: runs of equal values)."""
    if values.size > 1 and bool(np.all(values[1:] >= values[:-1])):
        new = np.empty(values.size, dtype=bool)
        new[0] = True
        np.not_equal(values[1:], values[:-1], out=new[1:])
        return values[new], np.cumsum(new) - 1
    return np.unique(values, return_inverse=True)


def _distinct_keys(batch: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct shape keys (sorted) of ``batch``, ``s`` (arrays that broadcast) and each
    shape's place among them (in the broadcast shape). A grid, batches down by lengths
    across, is the product of its distinct batches and distinct lengths: no sort of the
    grid."""
    if batch.ndim == 2 and s.ndim == 2 and batch.shape[1] == 1 and s.shape[0] == 1:
        sizes, at_size = _distinct(batch.ravel().astype(np.int64))
        lengths, at_length = _distinct(s.ravel().astype(np.int64))
        keys = ((sizes[:, None] << _SHIFT) | lengths[None, :]).ravel()
        return keys, at_size[:, None] * lengths.size + at_length[None, :]
    sizes, lengths = np.broadcast_arrays(batch, s)
    keys = (sizes.astype(np.int64) << _SHIFT) | lengths.astype(np.int64)
    distinct, where = _distinct(keys.ravel())
    return distinct, where.reshape(keys.shape)


def _phase_shape(prefill: bool, batch: Any, length: Any) -> dict[str, Any]:
    """A phase table's batch and length coordinates of ``batch`` sequences at ``length``
    tokens [token]: a prefill's prompt (``isl``), or a decode step's cached tokens before it
    (``step = context - 1``)."""
    if prefill:
        return {"batch_size": batch, "isl": np.asarray(length)}
    return {"batch_size": batch, "step": np.asarray(length) - 1}


def _asked_length(prefill: bool, at: dict[str, np.ndarray]) -> np.ndarray:
    """The estimator's ``s`` at the placed shape ``at`` [token]: a prefill's prompt, a decode
    step's context (``step + 1``)."""
    return np.round(at["isl"]) if prefill else np.round(at["step"]) + 1


def _none_phase(batch: Any, length: Any, reason: str) -> Readings:
    """No reading, with ``reason``, at every ``batch``, ``length`` pair (they broadcast)."""
    size = np.broadcast(np.asarray(batch), np.asarray(length)).shape
    return _none_many(np.zeros(size), reason)


def _read(
    latency: np.ndarray, basis: np.ndarray, at: dict[str, np.ndarray], moved: np.ndarray
) -> Readings:
    """Latencies with their basis codes (none where the estimator gave none), clamped shapes
    and whether each was clamped."""
    code = np.where(np.isnan(latency), NONE, basis).astype(np.int8)
    return Readings(latency, code, at, moved=np.broadcast_to(moved, latency.shape))


def _none_many(like: Any, reason: str) -> Readings:
    shape = np.shape(like)
    return Readings(np.full(shape, np.nan), np.full(shape, NONE, dtype=np.int8), {}, reason)


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


_LOADED: dict[tuple[str, str, str], Kernels] = {}
"""The ``Kernels`` read so far in this process, by system, engine and version."""


def kernels(system: str, engine: str, version: str) -> Kernels:
    """The ``Kernels`` of one system, engine and version, one per process."""
    key = (system, engine, version)
    if key not in _LOADED:
        _LOADED[key] = Kernels(*key)
    return _LOADED[key]


def loaded() -> tuple[Kernels, ...]:
    """The ``Kernels`` this process has made (none until an engine is asked for)."""
    return tuple(_LOADED.values())
