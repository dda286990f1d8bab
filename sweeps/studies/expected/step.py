"""The expected step: the cost model's operations, each read from the measured kernels.

A decode step of ``B`` sequences at context ``S`` (or a prefill of ``B`` prompts of ``N``
tokens) is the operations the cost model counts (docs/cost-model.md sections 3-4), per device
after the tensor-parallel split: the embedding gather; per layer the QKV, output, FFN (or
router and routed experts) projections as GEMMs of ``m`` tokens, attention (heads and KV
heads per device, head dim, window, KV format) and two all-reduces; the LM head. Each is read
from ``sweeps.measured.kernels`` at its shape (each distinct shape once) and held against its
own roofline bound (``sweeps.physics.kernels``); a reading outside the measured range is the
nearest measured point's share of the roofline applied to the shape's own bound
(``extrapolated``). Elementwise kernels (norms, activations) are not counted, as the cost
model counts none; MLA attention is not composed (null, with the reason).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.measured.database import OPERATIONS, EngineChoice, resolve
from sweeps.measured.kernels import Kernels, Reading, kernels


@dataclass(frozen=True)
class Config:
    """One configuration of the grid: everything of a step but its batch and length.

    model, device : Catalog records (``sweeps.catalog.records``)
    tp : Tensor-parallel degree [device]
    kv_heads : KV heads in effect [head]
    kv_dtype, weight_dtype : Format names; kv_bytes, weight_bytes their bytes per element [byte]
    peak, attention_peak : Peak FLOP/s of the GEMMs' and attention's formats [FLOP/s]
    choice : The engine label
    """

    model: Any
    device: Any
    tp: int
    kv_heads: int
    kv_dtype: str
    weight_dtype: str
    kv_bytes: float
    weight_bytes: float
    peak: float
    attention_peak: float
    choice: EngineChoice


@dataclass(frozen=True)
class Step:
    """One step's operations over a batch x length grid.

    expected, bound : Per operation, the time in the step (its count included) [s]; NaN
        where there is no reading
    basis : Per operation, the least certain basis of its readings (object array)
    reason : Why the step has no expectation ("" where it has one)
    """

    expected: dict[str, np.ndarray]
    bound: dict[str, np.ndarray]
    basis: dict[str, np.ndarray]
    reason: str = ""

    def total(self) -> np.ndarray:
        """The expected step [s]: the sum of its operations (NaN where one has no reading)."""
        return np.sum([self.expected[op] for op in OPERATIONS], axis=0)

    def total_bound(self) -> np.ndarray:
        """The sum of the operations' own bounds [s]."""
        return np.sum([self.bound[op] for op in OPERATIONS], axis=0)

    def step_basis(self) -> np.ndarray:
        """The step's basis: the least certain of those of its operations that take at least
        ``SIGNIFICANT`` of it (the embedding gather, read from no table, takes 0.05 %)."""
        rank = {"": 3, "extrapolated": 2, "interpolated": 1, "measured": 0}
        names = np.asarray(("measured", "interpolated", "extrapolated", ""), dtype=object)
        ranks = np.vectorize(rank.__getitem__, otypes=[int])(
            np.stack([self.basis[op] for op in OPERATIONS])
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.stack([self.expected[op] for op in OPERATIONS]) / self.total()
        counted = np.where(np.isnan(share) | (share >= SIGNIFICANT), ranks, 0)
        return names[counted.max(axis=0)]


SIGNIFICANT = 0.01
"""The share of a step an operation must take for its basis to be the step's [1]."""


_LEAST = {"measured": 0, "interpolated": 1, "extrapolated": 2, "": 3}


def _worse(a: str, b: str) -> str:
    return a if _LEAST[a] >= _LEAST[b] else b


class _Ops:
    """The readings of one configuration, each shape once, scaled where extrapolated."""

    def __init__(self, config: Config, db: Kernels) -> None:
        self.c, self.db = config, db
        m = config.model
        self.hidden = m.width
        self.heads = max(1, m.heads // config.tp)
        self.kv = max(1, config.kv_heads // config.tp)

    def gemm(self, m: float, n: int, k: int, fmt: str | None = None) -> tuple[float, str, float]:
        c = self.c
        reading = self.db.gemm(int(m), n, k, fmt or c.weight_dtype)
        bytes_ = c.weight_bytes if fmt is None else 2.0

        def bound(s: dict[str, float]) -> float:
            return float(
                physics.gemm_time(s["m"], s["n"], s["k"], bytes_, c.peak, c.device.bandwidth)
            )

        return _scaled(reading, {"m": m, "n": n, "k": k}, bound)

    def attention(self, batch: float, length: float, prefill: bool) -> tuple[float, str, float]:
        c, m = self.c, self.model
        window = m.sliding_window if m.sliding_window > 0 and m.local_layers >= m.layers else 0
        reading = self.db.attention(
            prefill=prefill, batch=int(batch), length=int(length), heads=self.heads,
            kv_heads=self.kv, head_dim=m.head_dim, window=window, fmt=c.kv_dtype,
        )  # fmt: skip

        def bound(s: dict[str, float]) -> float:
            size = s["isl"] if prefill else s["step"] + 1
            return float(
                physics.attention_time(
                    s["batch_size"],
                    size,
                    s["num_heads"],
                    s["num_key_value_heads"],
                    s["head_dim"],
                    c.kv_bytes,
                    c.attention_peak,
                    c.device.bandwidth,
                    prefill,
                )
            )

        shape = {
            "batch_size": batch,
            ("isl" if prefill else "step"): length if prefill else length - 1,
            "num_heads": self.heads,
            "num_key_value_heads": self.kv,
            "head_dim": m.head_dim,
        }
        return _scaled(reading, shape, bound)

    @property
    def model(self) -> Any:
        return self.c.model

    def allreduce(self, tokens: float) -> tuple[float, str, float]:
        c = self.c
        link = c.device.scale_up_bandwidth or math.nan
        reading = self.db.allreduce(int(tokens), self.hidden, c.tp)

        def bound(s: dict[str, float]) -> float:
            size = s.get("message_size", tokens * self.hidden)
            return float(physics.allreduce_time(size / self.hidden, self.hidden, c.tp, link))

        return _scaled(reading, {"num_gpus": c.tp, "message_size": tokens * self.hidden}, bound)

    def experts(self, tokens: float) -> tuple[float, str, float]:
        c, m = self.c, self.model
        reading = self.db.moe(
            tokens=int(tokens), hidden=self.hidden, inter=m.moe_intermediate_size,
            topk=m.experts_per_token, experts=m.experts, tp=c.tp, ep=1, fmt=c.weight_dtype,
        )  # fmt: skip

        def bound(s: dict[str, float]) -> float:
            return float(
                physics.experts_time(
                    s["num_tokens"],
                    s["hidden_size"],
                    s["inter_size"],
                    s["topk"],
                    s["num_experts"],
                    c.tp,
                    c.weight_bytes,
                    c.peak,
                    c.device.bandwidth,
                )
            )

        shape = {
            "num_tokens": tokens,
            "hidden_size": self.hidden,
            "inter_size": m.moe_intermediate_size,
            "topk": m.experts_per_token,
            "num_experts": m.experts,
        }
        return _scaled(reading, shape, bound)

    def embedding(self, tokens: float) -> tuple[float, str, float]:
        c = self.c
        reading = self.db.embedding(int(tokens), max(1, self.model.vocab_size // c.tp), self.hidden)
        bound = float(physics.gather_time(tokens, self.hidden, c.weight_bytes, c.device.bandwidth))
        return (math.nan if reading.latency_s is None else reading.latency_s), reading.basis, bound


def _scaled(
    reading: Reading, shape: dict[str, float], bound: Callable[[dict[str, float]], float]
) -> tuple[float, str, float]:
    """A reading at ``shape`` [s], its basis and the shape's own bound [s]: where the reading
    was taken at a clamped shape (``extrapolated``), its share of that shape's roofline
    applied to this shape's bound."""
    own = bound(shape)
    if reading.latency_s is None:
        return math.nan, "", own
    if reading.basis != "extrapolated" or not reading.at:
        return reading.latency_s, reading.basis, own
    at = {**shape, **reading.at}
    return reading.latency_s * own / bound(at), reading.basis, own


def _layer_ops(ops: _Ops, tokens: float) -> dict[str, tuple[float, str, float]]:
    """The per-layer projections of ``tokens`` tokens, each once (counts applied by the caller)."""
    m, tp, hidden = ops.model, ops.c.tp, ops.hidden
    qkv_n = (ops.heads + 2 * ops.kv) * m.head_dim
    out = {
        "qkv": ops.gemm(tokens, qkv_n, hidden),
        "o_proj": ops.gemm(tokens, hidden, ops.heads * (m.v_head_dim or m.head_dim)),
    }
    if m.is_moe:
        out["router"] = ops.gemm(tokens, m.experts, hidden, "bf16")
        out["experts"] = ops.experts(tokens)
    else:
        out["ffn_up"] = ops.gemm(tokens, 2 * m.intermediate_size // tp, hidden)
        out["ffn_down"] = ops.gemm(tokens, hidden, m.intermediate_size // tp)
    return out


def _no_step(shape: tuple[int, ...], reason: str) -> Step:
    nan = np.full(shape, np.nan)
    empty = np.full(shape, "", dtype=object)
    return Step(
        {o: nan for o in OPERATIONS},
        {o: nan for o in OPERATIONS},
        {o: empty for o in OPERATIONS},
        reason,
    )


def step(config: Config, batch: np.ndarray, length: np.ndarray, prefill: bool = False) -> Step:
    """The expected step of ``config`` over ``batch`` x ``length`` (decode: cached tokens;
    prefill: prompt tokens), each operation's time in the step, bound and basis."""
    shape = (len(batch), len(length))
    resolved = resolve(config.device.id, config.choice)
    if resolved.system is None or resolved.version is None:
        return _no_step(shape, resolved.reason)
    if config.model.is_mla:
        return _no_step(shape, "MLA attention is not composed from the database's kernels")
    ops = _Ops(config, kernels(resolved.system, resolved.engine, resolved.version))
    layers = config.model.layers
    counts = {op: float(layers) for op in OPERATIONS}
    counts.update(embedding=1.0, lm_head=1.0, allreduce=2.0 * layers + 1.0)
    expected = {op: np.zeros(shape) for op in OPERATIONS}
    bound = {op: np.zeros(shape) for op in OPERATIONS}
    basis = {op: np.full(shape, "measured", dtype=object) for op in OPERATIONS}

    def put(op: str, i: Any, j: Any, value: tuple[float, str, float]) -> None:
        expected[op][i, j] = value[0] * counts[op]
        bound[op][i, j] = value[2] * counts[op]
        basis[op][i, j] = value[1]

    lm_n = max(1, config.model.vocab_size // config.tp)
    for i, b in enumerate(batch):
        for j, n in enumerate(length):
            tokens = b * n if prefill else b  # the GEMMs' rows
            if prefill or j == 0:  # a decode step's GEMMs do not depend on the context
                rows = {
                    **_layer_ops(ops, tokens),
                    "allreduce": ops.allreduce(tokens),
                    "embedding": ops.embedding(tokens),
                    "lm_head": ops.gemm(b, lm_n, ops.hidden, "bf16"),  # the last token's logits
                }
            for op, value in rows.items():
                put(op, i, j, value)
            put("attention", i, j, ops.attention(b, n, prefill))
    reasons = {op: "" for op in OPERATIONS}
    for op in OPERATIONS:
        if np.isnan(expected[op]).any():
            reasons[op] = f"{op}: no reading"
    reason = "; ".join(r for r in reasons.values() if r)
    return Step(expected, bound, basis, reason)


def expected_inputs(sweep: Any) -> dict[str, tuple[str, np.ndarray]]:
    """The records the expected pass reads, as derived inputs (none without an engine):
    ``_model_records`` by model, ``_device_records`` by device, ``_engine_choices`` by engine."""
    if not getattr(sweep, "engine", ()):
        return {}

    def objects(values: Any) -> np.ndarray:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out

    return {
        "_model_records": ("model", objects(sweep.models)),
        "_device_records": ("hardware", objects(sweep.hardware)),
        "_engine_choices": ("engine", objects(sweep.engine)),
    }
