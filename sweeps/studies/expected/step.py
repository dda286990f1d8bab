"""The expected step: the cost model's operations, each read from the measured kernels.

A decode step of ``B`` sequences at context ``S`` (or a prefill of ``B`` prompts of ``N``
tokens) is the operations the cost model counts (docs/cost-model.md sections 3-4), per device
after the tensor-parallel split: the embedding gather; per layer the QKV, output, FFN (or
router and routed experts) projections as GEMMs of ``m`` tokens, attention (heads and KV
heads per device, head dim, window, KV format) and two all-reduces; the LM head. Each is read
from ``sweeps.measured.kernels`` at its shape (each distinct shape once) and held against its
own roofline bound (``sweeps.physics.kernels``); a reading outside an axis's measured range
is the nearest measured point's share of the roofline applied to the shape's own bound (its
basis ``extrapolated``, as is that of a shape inside every range but outside the rows
measured together, read where it is asked). Elementwise kernels (norms, activations) are not
counted, as the cost model counts none.

An MLA model's (DeepSeek-V3/R1) block is read whole from the MLA module tables
(``mla_generation_module_perf``, ``mla_context_module_perf``: its down and up projections,
attention or the absorbed BMMs, its output projection, as aiconfigurator reads it under
TensorRT-LLM and vLLM) as its ``attention``, ``qkv`` and ``o_proj`` zero, and held against
the sum of its projections' GEMM bounds and ``physics.mla_attention_time``; its shared expert
runs beside the routed experts (the longer of the two), which are routed as aiconfigurator's
DeepSeek routes them. Where the engine has no module table (SGLang), the block is composed as
aiconfigurator composes it there, from the granular tables: the down and q up projections as
GEMMs (``qkv``), the output projection (``o_proj``), and as ``attention`` the latent attention
(``context_mla_perf``, ``generation_mla_perf``) with the absorbed BMMs around it in a decode
step (``mla_bmm_perf``) or the kv up projection in a prefill, each with its own bound. With
neither, or another MLA shape: null, with the reason.

With expert parallelism (``Config.ep``) a step is one device's: with data-parallel attention a
rank of ``tp`` devices holds its share of the batch (the busiest rank's) and the attention and
dense layers split over its ``tp``; without it they split over all ``tp ep`` devices of the
stage, which see every sequence (``physics.dense_shards``, ``physics.attention_replicas``). The
routed experts take every rank's tokens, split ``tp`` ways on each of the ``ep`` ranks, and a
MoE layer's dispatch and combine (``dispatch``, aiconfigurator's pre- and post-dispatch, which
hold the layer's tensor-parallel all-reduces) replace its all-reduces. With ``pp`` pipeline
stages a step is the path of one micro-batch of whole sequences (``physics.micro_batches``)
through every stage, each its ``L / pp`` layers, and ``pp - 1`` hand-offs between them
(``handoff``): the bound's ``pp tau + (pp - 1) t_h`` (docs/parallel.md). An MXFP4 MoE
(``EXPERTS_ONLY``) reads its dense GEMMs in bf16 and its experts from the MXFP4 MoE tables
(docs/expected.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.measured.database import OPERATIONS, EngineChoice, resolve
from sweeps.measured.kernels import EXTRAPOLATED, NAMES, NONE, Kernels, Readings, kernels


@dataclass(frozen=True)
class Config:
    """One configuration of the grid: everything of a step but its batch and length.

    model, device : Catalog records (``sweeps.catalog.records``)
    tp : Tensor-parallel degree [device]
    kv_heads : KV heads in effect [head]
    kv_dtype, weight_dtype : Format names; kv_bytes, weight_bytes their bytes per element [byte]
    peak, attention_peak : Peak FLOP/s of the GEMMs' and attention's formats [FLOP/s]
    choice : The engine label
    ep : Expert-parallel ranks, each of ``tp`` devices [1]; 1: none
    dp_attention : With ``ep``, whether each rank holds the attention whole with its own
        sequences (a step is then one rank's: its share of the batch); without it the attention
        and dense layers are split over all ``tp ep`` devices
    pp : Pipeline stages of ``L / pp`` layers [1]; 1: none
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
    ep: int = 1
    dp_attention: bool = True
    pp: int = 1

    @property
    def shards(self) -> int:
        """Devices the attention, dense layers, shared experts and embeddings are split over,
        ``physics.dense_shards``: ``tp``, or ``tp ep`` without data-parallel attention [device]."""
        return self.tp * (1 if self.dp_attention else self.ep)

    @property
    def replicas(self) -> int:
        """Copies of the attention in a stage, ``physics.attention_replicas``: each decodes its
        own share of the sequences (``ep`` with data-parallel attention, else 1) [1]."""
        return self.ep if self.dp_attention else 1


@dataclass(frozen=True)
class Step:
    """One step's operations over a batch x length grid.

    expected, bound : Per operation, the time in the step (its count included) [s]; NaN
        where there is no reading
    basis : Per operation, the basis code of its readings (``sweeps.measured.kernels.NAMES``
        names them; int8)
    reason : Why the step has no expectation ("" where it has one)
    """

    expected: dict[str, np.ndarray]
    bound: dict[str, np.ndarray]
    basis: dict[str, np.ndarray]
    reason: str = ""

    def total(self) -> np.ndarray:
        """The expected step [s]: the sum of its operations (NaN where one has no reading)."""
        return np.sum([self.expected[op] for op in OPERATIONS], axis=0)

    def point_totals(self) -> np.ndarray:
        """``total`` of a step of independent points, each summed as a step of that one point
        is: NumPy sums one point's operations pairwise, a grid's one operation after another,
        and the two differ in the last bit [s]."""
        stacked = np.stack([self.expected[op] for op in OPERATIONS], axis=-1)
        return np.sum(np.ascontiguousarray(stacked), axis=-1)

    def total_bound(self) -> np.ndarray:
        """The sum of the operations' own bounds [s]."""
        return np.sum([self.bound[op] for op in OPERATIONS], axis=0)

    def step_basis(self) -> np.ndarray:
        """The step's basis (object array of names): the least certain of those of its
        operations that take at least ``SIGNIFICANT`` of it (the embedding gather, read from
        no table, takes 0.05 %)."""
        total = self.total()
        codes = np.stack([np.broadcast_to(self.basis[op], total.shape) for op in OPERATIONS])
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.stack([self.expected[op] for op in OPERATIONS]) / total
        counted = np.where(np.isnan(share) | (share >= SIGNIFICANT), codes, 0)
        return NAMES[counted.max(axis=0)]


EXPERTS_ONLY: dict[str, str] = {"fp4": "bf16"}
"""Weight formats whose MoE checkpoints quantize the routed experts only, and the format of
their dense GEMMs (attention projections, router, LM head): MXFP4 (GPT-OSS: bf16 beside MXFP4
experts; no dense MXFP4 GEMM table exists)."""

BLOCK_SCALED: dict[str, str] = {"fp8": "fp8-block"}
"""Weight formats an MLA model's checkpoint scales in blocks, and the format its tables are
read in (``sweeps.measured.kernels``): DeepSeek-V3's and R1's FP8 is scaled in 128 x 128
blocks, and the database measured their experts block-scaled only."""

MLA_SHAPE = (7168, 128, 192, 512, 64, 128)
"""The MLA block the database's module tables measured (DeepSeek-V3's, R1's the same): width,
query heads, query-key head dim, latent rank, rope dim, value head dim [1]."""

MLA_ROUTING = "power_law_1.01"
"""How an MLA model's tokens are routed to its experts when the MoE table is read:
aiconfigurator's DeepSeek model routes them as a power law of exponent 1.01 (its other MoE
models as ``sweeps.measured.kernels.DISTRIBUTION``, 1.2)."""

SIGNIFICANT = 0.01
"""The share of a step an operation must take for its basis to be the step's [1]."""


Timed = tuple[np.ndarray, np.ndarray, np.ndarray]
"""An operation over an array of shapes: its expected time [s], basis (object array) and
own bound [s], one of each per shape."""


class _Ops:
    """The readings of one configuration over arrays of shapes (each distinct shape read once),
    scaled where extrapolated."""

    def __init__(
        self, config: Config, db: Kernels, granular: bool = False, wide: bool = False
    ) -> None:
        self.c, self.db, self.granular, self.wide = config, db, granular, wide
        m = config.model
        self.hidden = m.width
        self.heads = max(1, m.heads // config.shards)
        self.kv = max(1, config.kv_heads // config.shards)
        # the format its tables are read in: an MLA model's FP8 is DeepSeek's block-scaled FP8
        self.weights = config.weight_dtype
        if m.is_mla:
            self.weights = BLOCK_SCALED.get(config.weight_dtype, config.weight_dtype)

    @property
    def model(self) -> Any:
        return self.c.model

    def gemm(self, m: np.ndarray, n: int, k: int, fmt: str | None = None) -> Timed:
        c = self.c
        if fmt is None and self.model.is_moe:
            fmt = EXPERTS_ONLY.get(c.weight_dtype)  # its dense GEMMs in their own format
        readings = self.db.gemm_many(m, n, k, fmt or self.weights)
        bytes_ = c.weight_bytes if fmt is None else 2.0

        def bound(s: dict[str, Any]) -> Any:
            return physics.gemm_time(s["m"], s["n"], s["k"], bytes_, c.peak, c.device.bandwidth)

        return _scaled(readings, {"m": m, "n": n, "k": k}, bound)

    def attention(
        self, batch: np.ndarray, length: np.ndarray, prefill: bool, cached: Any = None
    ) -> Timed:
        """A layer's attention, the mean over the model's layers: those with a sliding window
        (``local_layers``) read at it, the others at full attention (GPT-OSS and Gemma-2
        alternate them), each with its own bound; the basis the less certain of the two. An
        MLA model's is its MLA block (``mla``). ``cached``: a prefill of ``length`` prompt
        tokens whose first ``cached`` are cached (``_attention``; not composed for MLA)."""
        m = self.model
        if self.wide:
            return self.wide_mla(batch, length, prefill)
        if m.is_mla:
            return self.mla(batch, length, prefill)
        local = min(m.local_layers, m.layers) if m.sliding_window > 0 else 0
        if local in (0, m.layers):
            window = m.sliding_window if local else 0
            return self._attention(batch, length, prefill, window, cached)
        near = self._attention(batch, length, prefill, m.sliding_window, cached)
        far = self._attention(batch, length, prefill, 0, cached)
        share = local / m.layers
        value = share * near[0] + (1.0 - share) * far[0]
        own = share * near[2] + (1.0 - share) * far[2]
        return value, np.maximum(near[1], far[1]), own

    def _attention(
        self, batch: np.ndarray, length: np.ndarray, prefill: bool, window: int,
        cached: Any = None,
    ) -> Timed:  # fmt: skip
        """One layer's attention at ``window`` (``attention``); with ``cached``, a prefill
        after a cached prefix (``_hit``)."""
        if cached is not None and prefill:
            return self._hit(batch, length, window, cached)
        c, m = self.c, self.model
        readings = self.db.attention_many(
            prefill=prefill, batch=batch, length=length, heads=self.heads,
            kv_heads=self.kv, head_dim=m.head_dim, window=window, fmt=c.kv_dtype,
        )  # fmt: skip

        def bound(s: dict[str, Any]) -> Any:
            size = s["isl"] if prefill else s["step"] + 1
            return physics.attention_time(
                s["batch_size"], size, s["num_heads"], s["num_key_value_heads"], s["head_dim"],
                c.kv_bytes, c.attention_peak, c.device.bandwidth, prefill, window,
            )  # fmt: skip

        shape = {
            "batch_size": batch,
            ("isl" if prefill else "step"): length if prefill else length - 1,
            "num_heads": self.heads,
            "num_key_value_heads": self.kv,
            "head_dim": m.head_dim,
        }
        return _scaled(readings, shape, bound)

    def _hit(self, batch: np.ndarray, length: np.ndarray, window: int, cached: Any) -> Timed:
        """One layer's attention of a prefill of ``length`` prompt tokens whose first
        ``cached`` are cached (``Kernels.attention_many``'s prefix), bounded by
        ``physics.hit_attention_time``, and floored at the decode attention of the same
        sequences at the whole prompt: the new tokens read every cached one at least once, as
        one decode step does, and the estimator's prefix (a share of the whole prompt's
        time) has no such floor. Where the floor binds, its reading and basis; the bound
        stays the hit prefill's. ``cached`` 0 is the plain prefill, read for read."""
        c, m = self.c, self.model
        readings = self.db.attention_many(
            prefill=True, batch=batch, length=length, heads=self.heads, kv_heads=self.kv,
            head_dim=m.head_dim, window=window, fmt=c.kv_dtype, cached=cached,
        )  # fmt: skip

        def bound(s: dict[str, Any]) -> Any:
            return physics.hit_attention_time(
                s["batch_size"], s["isl"], s["cached"], s["num_heads"],
                s["num_key_value_heads"], s["head_dim"], c.kv_bytes, c.attention_peak,
                c.device.bandwidth, window,
            )  # fmt: skip

        shape = {
            "batch_size": batch,
            "isl": length,
            "cached": cached,
            "num_heads": self.heads,
            "num_key_value_heads": self.kv,
            "head_dim": m.head_dim,
        }
        value, kind, own = _scaled(readings, shape, bound)
        floor, floor_kind, _ = self._attention(batch, length, False, window)
        binds = (np.asarray(cached) > 0) & (floor > value)
        return np.where(binds, floor, value), np.where(binds, floor_kind, kind), own

    def mla(self, batch: np.ndarray, length: np.ndarray, prefill: bool) -> Timed:
        """One layer's MLA block, read as the database's module (its projections, attention
        and, in a decode step, the absorbed BMMs: what aiconfigurator reads for DeepSeek);
        its bound the sum of the projections' GEMM bounds and the latent attention's."""
        if self.granular:
            return self._mla_granular(batch, length, prefill)
        c, m = self.c, self.model
        readings = self.db.mla_many(
            prefill=prefill, batch=batch, length=length, heads=self.heads,
            native_heads=m.heads, fmt=c.weight_dtype, kv_fmt=c.kv_dtype,
        )  # fmt: skip
        length_axis = "isl" if prefill else "step"

        def bound(s: dict[str, Any]) -> Any:
            size = s["isl"] if prefill else s["step"] + 1
            return _mla_bound(c, s["batch_size"], size, s["num_heads"], prefill)

        shape = {
            "batch_size": batch,
            length_axis: length if prefill else length - 1,
            "num_heads": self.heads,
        }
        return _scaled(readings, shape, bound)

    def _mla_granular(self, batch: np.ndarray, length: np.ndarray, prefill: bool) -> Timed:
        """One layer's MLA attention from the granular tables (SGLang's, as aiconfigurator
        composes it there): a prefill up-projects the latent (the kv up projection, a GEMM
        of the prompts' tokens) and runs the latent attention; a decode step runs the
        absorbed form, the BMM into the latent, the latent attention and the BMM out of it.
        Each part scaled by its own bound where read at a clamped shape; the sum, the least
        certain basis and the sum of the bounds. The down, q up and output projections are
        GEMMs of the step's tokens (``qkv``, ``o_proj``: ``_mla_projections``)."""
        c, m = self.c, self.model
        rank, rope, v = m.kv_lora_rank, m.qk_rope_head_dim, m.v_head_dim or m.head_dim
        nope = m.head_dim - rope
        readings = self.db.mla_attention_many(
            prefill=prefill, batch=batch, length=length, heads=self.heads, kv_fmt=c.kv_dtype
        )
        length_axis = "isl" if prefill else "step"

        def bound(s: dict[str, Any]) -> Any:
            size = s["isl"] if prefill else s["step"] + 1
            return physics.mla_attention_time(
                s["batch_size"], size, s["num_heads"], rank, rope, nope, v, c.kv_bytes,
                c.attention_peak, c.device.bandwidth, prefill,
            )  # fmt: skip

        shape = {
            "batch_size": batch,
            length_axis: length if prefill else length - 1,
            "num_heads": self.heads,
        }
        attention = _scaled(readings, shape, bound)
        if prefill:
            return _plus(self.gemm(batch * length, self.heads * (nope + v), rank), attention)
        pre = self._bmm(batch, self.heads * rank, nope, pre=True)
        post = self._bmm(batch, self.heads * v, rank, pre=False)
        return _plus(pre, attention, post)

    def _bmm(self, tokens: np.ndarray, n: int, k: int, pre: bool) -> Timed:
        """An absorbed MLA BMM of ``tokens`` tokens: ``heads`` BMMs whose weights make an
        ``n x k`` GEMM's (``n`` over the heads), bounded as that GEMM."""
        c, heads = self.c, self.heads
        readings = self.db.mla_bmm_many(tokens=tokens, heads=heads, fmt=self.weights, pre=pre)

        def bound(s: dict[str, Any]) -> Any:
            scale = s["num_heads"] / heads  # the heads read at, of the device's
            return physics.gemm_time(
                s["num_tokens"], n * scale, k, c.weight_bytes, c.peak, c.device.bandwidth
            )

        return _scaled(readings, {"num_tokens": tokens, "num_heads": heads}, bound)

    def mla_projections(self, tokens: np.ndarray) -> dict[str, Timed]:
        """The MLA block's projections outside its attention, as GEMMs of ``tokens`` tokens
        (the granular composition): ``qkv`` the q and kv down projection (with the rope
        key; replicated, not split over tp) and the q up projection, ``o_proj`` the output
        projection."""
        m, heads = self.model, self.heads
        rank, rope, v = m.kv_lora_rank, m.qk_rope_head_dim, m.v_head_dim or m.head_dim
        down = self.gemm(tokens, MLA_Q_LORA_RANK + rank + rope, self.hidden)
        up = self.gemm(tokens, heads * m.head_dim, MLA_Q_LORA_RANK)
        return {"qkv": _plus(down, up), "o_proj": self.gemm(tokens, self.hidden, heads * v)}

    def wide_mla(self, batch: np.ndarray, length: np.ndarray, prefill: bool) -> Timed:
        """One layer's MLA block on the wide-EP layout, read whole from the wide-EP MLA tables
        (its q and kv up projections, attention or the absorbed BMMs, its output projection:
        what aiconfigurator reads there), held against the module's bound less the down
        projection (``wide_layer`` reads that as GEMMs)."""
        c = self.c
        readings = self.db.wide_mla_many(
            prefill=prefill, batch=batch, length=length, tp=c.tp, fmt=c.weight_dtype,
            kv_fmt=c.kv_dtype,
        )  # fmt: skip

        def bound(s: dict[str, Any]) -> Any:
            heads = self.model.heads * s["num_heads"] / 128  # the table's heads: DeepSeek's
            return _mla_bound(c, s["batch_size"], s["isl"], heads, prefill, down=False)

        shape = {"batch_size": batch, "isl": length, "num_heads": 128 // c.tp}
        return _scaled(readings, shape, bound)

    def wide_experts(self, tokens: np.ndarray, prefill: bool) -> Timed:
        """A rank's routed experts on the wide-EP layout, ``tokens`` its own: the phase's
        wide-EP MoE table at every rank's tokens together, routed as ``MLA_ROUTING``."""
        c, m = self.c, self.model
        readings = self.db.wide_moe_many(
            prefill=prefill, tokens=tokens, hidden=self.hidden, inter=m.moe_intermediate_size,
            topk=m.experts_per_token, experts=m.experts, ep=c.ep, replicas=c.replicas,
            fmt=self.weights, distribution=MLA_ROUTING,
        )  # fmt: skip

        def bound(s: dict[str, Any]) -> Any:
            return physics.experts_time(
                s["num_tokens"], self.hidden, m.moe_intermediate_size, m.experts_per_token,
                m.experts, c.tp * c.ep, c.weight_bytes, c.peak, c.device.bandwidth,
            )  # fmt: skip

        return _scaled(readings, {"num_tokens": tokens * c.replicas}, bound)

    def deepep(self, tokens: np.ndarray, prefill: bool) -> Timed:
        """A MoE layer's DeepEP dispatch and combine on the wide-EP layout, ``tokens`` a
        rank's own: the normal kernels in a prefill, the low-latency ones in a decode step
        (``Kernels.deepep_many``) over the nodes the ``ep`` ranks span; its bound the
        all-to-all's bytes (bf16 hidden states) over the scale-up link."""
        c, m = self.c, self.model
        readings = self.db.deepep_many(
            prefill=prefill, tokens=tokens, hidden=self.hidden, topk=m.experts_per_token,
            experts=m.experts, ep=c.ep, nodes=wide_nodes(c, self.db),
        )  # fmt: skip
        link = c.device.scale_up_bandwidth or math.nan

        def bound(s: dict[str, Any]) -> Any:
            sent = physics.all_to_all_bytes(
                s["num_token"] * c.replicas, m.experts_per_token, self.hidden, 2.0, 1, c.tp, c.ep
            )
            return sent / link

        return _scaled(readings, {"num_token": tokens}, bound)

    def wide_layer(self, tokens: np.ndarray, prefill: bool) -> dict[str, Timed]:
        """A layer's operations of ``tokens`` tokens outside attention on the wide-EP layout,
        as aiconfigurator's SGLang DeepEP path composes them: ``qkv`` its two GEMMs of the
        fused down projection (``qkv_a_proj`` and ``downscale``, the same ``2112 x h`` weight,
        which aiconfigurator counts twice), no ``o_proj`` (in the MLA rows) and no router
        (it wires none); ``experts`` the routed experts and the whole shared expert one after
        the other (no overlap on this path)."""
        m = self.model
        down = self.gemm(tokens, MLA_Q_LORA_RANK + m.kv_lora_rank + m.qk_rope_head_dim, self.hidden)
        routed = self.wide_experts(tokens, prefill)
        return {"qkv": _plus(down, down), "experts": _plus(routed, self.shared(tokens))}

    def allreduce(self, tokens: np.ndarray) -> Timed:
        c = self.c
        link = c.device.scale_up_bandwidth or math.nan
        devices = c.shards
        readings = self.db.allreduce_many(tokens, self.hidden, devices)

        def bound(s: dict[str, Any]) -> Any:
            size = s.get("message_size", tokens * self.hidden)
            return physics.allreduce_time(size / self.hidden, self.hidden, devices, link)

        shape = {"num_gpus": devices, "message_size": tokens * self.hidden}
        return _scaled(readings, shape, bound)

    def experts(self, tokens: np.ndarray) -> Timed:
        """A rank's routed experts, ``tokens`` its own: under expert parallelism with
        data-parallel attention they take every rank's tokens routed to them (the table's
        tokens are the ranks' together); without it every rank sees all of them."""
        c, m = self.c, self.model
        every = tokens * c.replicas
        readings = self.db.moe_many(
            tokens=every, hidden=self.hidden, inter=m.moe_intermediate_size,
            topk=m.experts_per_token, experts=m.experts, tp=c.tp, ep=c.ep, fmt=self.weights,
            **({"distribution": MLA_ROUTING} if m.is_mla else {}),
        )  # fmt: skip

        def bound(s: dict[str, Any]) -> Any:
            return physics.experts_time(
                s["num_tokens"], s["hidden_size"], s["inter_size"], s["topk"],
                s["num_experts"], c.tp * c.ep, c.weight_bytes, c.peak, c.device.bandwidth,
            )  # fmt: skip

        shape = {
            "num_tokens": every,
            "hidden_size": self.hidden,
            "inter_size": m.moe_intermediate_size,
            "topk": m.experts_per_token,
            "num_experts": m.experts,
        }
        return _scaled(readings, shape, bound)

    def shared(self, tokens: np.ndarray) -> Timed:
        """A MoE layer's shared experts for ``tokens`` tokens: their gate-and-up and down
        projections as GEMMs, split over ``Config.shards`` (the two summed)."""
        m, tp = self.model, self.c.shards
        inter = m.moe_intermediate_size * m.shared_experts // tp
        up = self.gemm(tokens, 2 * inter, self.hidden)
        down = self.gemm(tokens, self.hidden, inter)
        return up[0] + down[0], np.maximum(up[1], down[1]), up[2] + down[2]

    def dispatch(self, tokens: np.ndarray) -> Timed:
        """A MoE layer's dispatch and combine over the expert-parallel ranks, ``tokens`` a
        rank's own (aiconfigurator's pre- and post-dispatch, which hold the layer's
        tensor-parallel all-reduces too); its bound the all-to-all's bytes (bf16 hidden states,
        the decode table's link term) over the link, and two all-reduces of the rank's tokens
        over ``Config.shards`` (none on one device)."""
        c, m = self.c, self.model
        readings = self.db.dispatch_many(
            tokens=tokens, hidden=self.hidden, topk=m.experts_per_token, experts=m.experts,
            tp=c.tp, ep=c.ep, replicas=c.replicas, fmt=self.weights,
        )  # fmt: skip
        link = c.device.scale_up_bandwidth or math.nan
        sent = physics.all_to_all_bytes(
            tokens * c.replicas, m.experts_per_token, self.hidden, 2.0, 1, c.tp, c.ep
        )
        reduced = 2.0 * physics.allreduce_time(tokens, self.hidden, c.shards, link)
        own = np.broadcast_to(
            np.asarray(sent / link + reduced, dtype=np.float64), readings.latency_s.shape
        )
        return readings.latency_s, readings.basis, own

    def handoff(self, tokens: np.ndarray) -> Timed:
        """One pipeline hand-off of a micro-batch, ``tokens`` the rank's: each token's bf16
        hidden state to the next stage, split over ``Config.shards``, at the scale-up link's
        bandwidth. No table measured it (aiconfigurator's P2P is a model, not a reading), so
        its time is its bound (the decode table's hand-off, ``physics.handoff_bytes`` over
        ``physics.link_time``) and its basis ``extrapolated``; no reading where the catalog
        has no link figure."""
        c = self.c
        link = c.device.scale_up_bandwidth or math.nan
        nbytes = physics.handoff_bytes(np.asarray(tokens), self.hidden, 2.0, c.shards, 1, 1)
        time = np.asarray(physics.link_time(nbytes, link), dtype=np.float64)
        basis = np.where(np.isnan(time), NONE, EXTRAPOLATED).astype(np.int8)
        return time, basis, time

    @property
    def vocab(self) -> int:
        """The vocabulary rows a device holds, split over the attention's ``shards`` [1]."""
        return max(1, self.model.vocab_size // self.c.shards)

    def lm_head(self, rows: np.ndarray) -> Timed:
        """The LM head at ``rows`` rows (a step's last tokens: one a sequence, a verify
        step's ``k + 1``), in bf16."""
        return self.gemm(rows, self.vocab, self.hidden, "bf16")

    def embedding(self, tokens: np.ndarray) -> Timed:
        c = self.c
        vocab = self.vocab
        readings = self.db.embedding_many(tokens, vocab, self.hidden)
        bound = physics.gather_time(tokens, self.hidden, c.weight_bytes, c.device.bandwidth)
        return readings.latency_s, readings.basis, np.asarray(bound, dtype=np.float64)


MLA_Q_LORA_RANK = 1536
"""The query's latent rank of the MLA models the catalog ships (DeepSeek-V3 and R1,
``q_lora_rank`` in their config.json; the catalog keeps no column of it): the down
projection makes ``q_lora + kv_lora + rope`` (2112) a token, as aiconfigurator counts it."""


def _mla_bound(
    config: Config, batch: Any, length: Any, heads: Any, prefill: bool, down: bool = True
) -> Any:
    """The roofline bound of one layer's MLA block on one device [s]: the down projection
    (replicated; left out where ``down`` is false), the q up projection, the kv up
    projection (a prefill) or the two absorbed BMMs (a decode step), the output projection,
    each ``gemm_time`` at the step's tokens, and ``mla_attention_time``; ``heads`` the
    query heads on the device."""
    c, m = config, config.model
    rank, rope, v = m.kv_lora_rank, m.qk_rope_head_dim, m.v_head_dim or m.head_dim
    nope = m.head_dim - rope
    tokens = batch * length if prefill else batch
    wb, peak, bw = c.weight_bytes, c.peak, c.device.bandwidth
    projections = [
        *([(MLA_Q_LORA_RANK + rank + rope, m.width)] if down else []),  # q, kv down, rope key
        (heads * m.head_dim, MLA_Q_LORA_RANK),  # q up
        *([(heads * (nope + v), rank)] if prefill else [(heads * nope, rank), (heads * v, rank)]),
        (m.width, heads * v),  # output
    ]
    gemms = sum(physics.gemm_time(tokens, n, k, wb, peak, bw) for n, k in projections)
    attention = physics.mla_attention_time(
        batch, length, heads, rank, rope, nope, v, c.kv_bytes, c.attention_peak, bw, prefill
    )
    return gemms + attention


def _plus(*parts: Timed) -> Timed:
    """Operations run one after another: their times summed [s], the least certain basis
    and their bounds summed [s]."""
    value = _sum([part[0] for part in parts]) if len(parts) > 1 else parts[0][0]
    basis = parts[0][1]
    for part in parts[1:]:
        basis = np.maximum(basis, part[1])
    own = _sum([part[2] for part in parts]) if len(parts) > 1 else parts[0][2]
    return value, basis, own


def _scaled(readings: Readings, shape: dict[str, Any], bound: Callable[[Any], Any]) -> Timed:
    """Readings at ``shape`` [s], their bases and the shapes' own bounds [s]: where a reading
    was taken at a clamped shape (``extrapolated`` outside an axis's range), its share of that
    shape's roofline applied to this shape's bound."""
    latency = readings.latency_s
    own = np.broadcast_to(np.asarray(bound(shape), dtype=np.float64), latency.shape)
    if not readings.at or readings.moved is None:
        return latency, readings.basis, own
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = latency * own / bound({**shape, **readings.at})
    return np.where(readings.moved, scaled, latency), readings.basis, own


def _layer_ops(ops: _Ops, tokens: np.ndarray, prefill: bool = False) -> dict[str, Timed]:
    """The per-layer projections of ``tokens`` tokens, each once (counts applied by the
    caller); on the wide-EP layout those of the phase (``prefill``) it reads."""
    if ops.wide:
        return ops.wide_layer(tokens, prefill)
    m, tp, hidden = ops.model, ops.c.shards, ops.hidden
    qkv_n = (ops.heads + 2 * ops.kv) * m.head_dim
    out = (
        (ops.mla_projections(tokens) if ops.granular else {})
        if m.is_mla
        else {  # MLA: its projections are read in its module (attention), or granular
            "qkv": ops.gemm(tokens, qkv_n, hidden),
            "o_proj": ops.gemm(tokens, hidden, ops.heads * (m.v_head_dim or m.head_dim)),
        }
    )
    if m.is_moe:
        out["router"] = ops.gemm(tokens, m.experts, hidden, "bf16")
        out["experts"] = ops.experts(tokens)
        if m.shared_experts:
            out["experts"] = _overlapped(out["experts"], ops.shared(tokens))
    else:
        out["ffn_up"] = ops.gemm(tokens, 2 * m.intermediate_size // tp, hidden)
        out["ffn_down"] = ops.gemm(tokens, hidden, m.intermediate_size // tp)
    return out


def _overlapped(routed: Timed, shared: Timed) -> Timed:
    """The routed and shared experts run side by side (two streams, as aiconfigurator models
    them): the longer of the two [s], the less certain basis of the two and the sum of
    their bounds (both read their weights through the same memory) [s]."""
    expected = np.maximum(routed[0], shared[0])
    expected = np.where(np.isnan(routed[0]) | np.isnan(shared[0]), np.nan, expected)
    return expected, np.maximum(routed[1], shared[1]), routed[2] + shared[2]


def _no_step(shape: tuple[int, ...], reason: str) -> Step:
    nan = np.full(shape, np.nan)
    empty = np.full(shape, NONE, dtype=np.int8)
    return Step(
        {o: nan for o in OPERATIONS},
        {o: nan for o in OPERATIONS},
        {o: empty for o in OPERATIONS},
        reason,
    )


def _unsplit(config: Config) -> str:
    """Why ``config``'s parallel layout is not composed ("" where it is, or has none)."""
    m, ep, pp = config.model, config.ep, config.pp
    if pp > 1 and m.layers % pp:
        return f"pp {pp} does not divide the {m.layers} layers: not composed"
    if ep <= 1:
        return ""
    if not m.is_moe:
        return f"ep {ep}: {m.id} has no routed experts to split"
    if m.experts % ep:
        return f"ep {ep} does not divide the {m.experts} routed experts: not composed"
    return ""


def micro_batch(config: Config, batch: Any) -> Any:
    """The sequences of one micro-batch of a decode step of ``batch`` (the replica's): ``m =
    min(B, pp)`` micro-batches of whole sequences (``physics.micro_batches``), the largest
    ``ceil(B / m)`` [sequence]; ``batch`` itself at ``pp = 1``."""
    if config.pp <= 1:
        return batch
    batch = np.asarray(batch)
    return -(-batch // np.minimum(np.maximum(batch, 1), config.pp))


def rank_share(config: Config, sequences: Any) -> Any:
    """The busiest rank's share of ``sequences`` with data-parallel attention, ``ceil(S / r)``
    (``Config.replicas``); ``sequences`` itself where every device sees them all."""
    if config.replicas <= 1:
        return sequences
    return -(-np.asarray(sequences) // config.replicas)


def step(config: Config, batch: np.ndarray, length: np.ndarray, prefill: bool = False) -> Step:
    """The expected step of ``config`` over ``batch`` x ``length`` (decode: cached tokens;
    prefill: prompt tokens), each operation's time in the step, bound and basis."""
    return step_at(config, np.asarray(batch)[:, None], np.asarray(length)[None, :], prefill)


def step_at(config: Config, batch: np.ndarray, length: np.ndarray, prefill: bool = False) -> Step:
    """The expected step of ``config`` at each ``batch``, ``length`` pair (arrays that
    broadcast to the step's arrays' shape): the operations over all of them at once, each
    distinct kernel shape read once (a decode step's GEMMs over ``batch`` alone)."""
    shape = np.broadcast_shapes(np.shape(batch), np.shape(length))
    ops = _opened(config)
    if isinstance(ops, str):
        return _no_step(shape, ops)
    counts = _counts(config)
    if not prefill:  # a micro-batch crosses the stages: a prefill's prompts all at once
        batch = micro_batch(config, batch)
    batch = rank_share(config, batch)  # one rank: its share of the sequences (the busiest's)
    tokens = batch * length if prefill else batch  # the GEMMs' rows
    rows = {
        **_token_ops(ops, tokens, prefill),
        "lm_head": ops.lm_head(batch),  # the last token's logits
        "attention": ops.attention(batch, length, prefill),
    }
    expected = {op: np.zeros(shape) for op in OPERATIONS}
    bound = {op: np.zeros(shape) for op in OPERATIONS}
    basis = {op: np.zeros(shape, dtype=np.int8) for op in OPERATIONS}
    for op, (value, kind, own) in rows.items():
        expected[op][...] = value * counts[op]
        bound[op][...] = own * counts[op]
        basis[op][...] = kind
    reason = "; ".join(f"{op}: no reading" for op in OPERATIONS if np.isnan(expected[op]).any())
    return Step(expected, bound, basis, reason)


def _parallel_ops(ops: _Ops, tokens: np.ndarray, prefill: bool = False) -> dict[str, Timed]:
    """The communication of a step of ``tokens`` tokens a rank: the all-reduces, the MoE
    layers' dispatch and combine under expert parallelism (DeepEP's, of the phase, on the
    wide-EP layout), the pipeline's hand-offs."""
    c = ops.c
    out = {"allreduce": ops.allreduce(tokens)}
    if c.ep > 1:
        out["dispatch"] = ops.deepep(tokens, prefill) if ops.wide else ops.dispatch(tokens)
    if c.pp > 1:
        out["handoff"] = ops.handoff(tokens)
    return out


def _token_ops(ops: _Ops, tokens: np.ndarray, prefill: bool = False) -> dict[str, Timed]:
    """Every operation of a step read at its ``tokens`` (a rank's rows, each distinct count
    once): the layers' projections and experts, the communication and the embedding gather;
    on the wide-EP layout those of the phase (``prefill``). The one list every step reads
    (``step_at``, ``compose``, ``hit_prefill``, ``decode``); the LM head and attention are
    read at their own shapes (``_Ops.lm_head``, ``_Ops.attention``)."""
    return {
        **_layer_ops(ops, tokens, prefill),
        **_parallel_ops(ops, tokens, prefill),
        "embedding": ops.embedding(tokens),
    }


def _opened(config: Config) -> _Ops | str:
    """The operations of ``config`` read from its device's and engine's kernels, or why a
    step of it is not composed (no data, MLA, an expert-parallel layout not composed)."""
    resolved = resolve(config.device.id, config.choice)
    if resolved.system is None or resolved.version is None:
        return resolved.reason
    db = kernels(resolved.system, resolved.engine, resolved.version)
    if config.choice.a2a:
        return _unsplit(config) or _wide_reason(config, db) or _Ops(config, db, wide=True)
    source = _mla_source(config, db) if config.model.is_mla else MODULE
    if source not in (MODULE, GRANULAR):
        return source
    return _unsplit(config) or _Ops(config, db, source == GRANULAR)


MODULE, GRANULAR = "module", "granular"
"""How an MLA block is read (``_mla_source``): whole from the module tables, or composed from
the granular MLA attention and BMM tables and the projections' GEMMs."""


def _mla_source(config: Config, db: Kernels) -> str:
    """How ``config``'s MLA block is read from ``db``: ``MODULE`` where the engine holds the
    MLA module tables of both phases at its formats (TensorRT-LLM, vLLM), else ``GRANULAR``
    where it holds the granular MLA attention tables of both phases and the absorbed BMMs'
    (SGLang, as aiconfigurator composes it there), else why it is not composed."""
    m, fmt, kv = config.model, config.weight_dtype, config.kv_dtype
    shape = (m.width, m.heads, m.head_dim, m.kv_lora_rank, m.qk_rope_head_dim, m.v_head_dim)
    if shape != MLA_SHAPE:
        return f"MLA attention: the MLA tables measured DeepSeek-V3's shape only, not {m.id}'s"
    phases = (("decode", False), ("prefill", True))
    if all(db.mla_table(prefill, fmt, kv) is not None for _, prefill in phases):
        return MODULE
    weights = BLOCK_SCALED.get(fmt, fmt)
    lacking = [
        *(f"{phase} attention" for phase, prefill in phases
          if db.mla_attention_table(prefill, kv) is None),
        *(f"BMM {part}" for part, pre in (("pre", True), ("post", False))
          if db.mla_bmm_table(pre, weights) is None),
    ]  # fmt: skip
    if not lacking:
        return GRANULAR
    return (
        f"MLA attention: no {db.engine} {db.version} MLA module tables on {db.system} at GEMM "
        f"{fmt!r}, KV {kv!r}, nor granular MLA tables ({', '.join(lacking)} lacking)"
    )


def wide_nodes(config: Config, db: Kernels) -> int:
    """The nodes the ``ep`` ranks of a wide-EP layout span: ``ceil(tp ep / n)``, ``n`` the
    database system's GPUs a node (its ``system_spec``: 8 on an HGX H200 or B200, 4 on a
    GB200) [1]."""
    per_node = int(db._handle[0].system_spec["node"]["num_gpus_per_node"])
    return -(-(config.tp * config.ep) // per_node)


def _wide_reason(config: Config, db: Kernels) -> str:
    """Why ``config`` has no wide-EP step (``sglang_deepep``; "" where it has one): the
    layout (an MLA MoE model, DeepSeek-V3's block, ``ep > 1`` ranks of one device each with
    data-parallel attention: DeepEP's), or the tables (both phases' wide-EP MLA rows at its
    formats, wide-EP MoE rows at its ``ep``, DeepEP rows over its nodes). aiconfigurator
    raises on the same misses (its ``PerfDataNotAvailableError``): no fallback."""
    m, c = config.model, config
    shape = (m.width, m.heads, m.head_dim, m.kv_lora_rank, m.qk_rope_head_dim, m.v_head_dim)
    if not (m.is_mla and m.is_moe) or shape != MLA_SHAPE:
        return f"wide-EP (DeepEP): its tables measured DeepSeek-V3's MLA MoE block, not {m.id}'s"
    if c.ep <= 1 or not c.dp_attention or c.tp != 1:
        return (f"wide-EP (DeepEP): needs ep > 1 ranks of one device (tp 1) with data-parallel "
                f"attention; got tp {c.tp}, ep {c.ep}, dp_attention {c.dp_attention}")  # fmt: skip
    lacking = []
    nodes = wide_nodes(config, db)
    weights = BLOCK_SCALED.get(c.weight_dtype, c.weight_dtype)
    for phase, prefill in (("prefill", True), ("decode", False)):
        if db.wide_mla_table(prefill, c.weight_dtype, c.kv_dtype) is None:
            lacking.append(f"{phase} MLA at weights {c.weight_dtype!r}, KV {c.kv_dtype!r}")
        moe = db.wide_moe_many(
            prefill=prefill, tokens=np.ones(1), hidden=m.width, inter=m.moe_intermediate_size,
            topk=m.experts_per_token, experts=m.experts, ep=c.ep, replicas=c.replicas,
            fmt=weights, distribution=MLA_ROUTING,
        )  # fmt: skip
        if np.isnan(moe.latency_s).all():
            lacking.append(f"{phase} MoE at ep {c.ep}")
        sent = db.deepep_many(
            prefill=prefill, tokens=np.ones(1), hidden=m.width, topk=m.experts_per_token,
            experts=m.experts, ep=c.ep, nodes=nodes,
        )  # fmt: skip
        if np.isnan(sent.latency_s).all():
            lacking.append(f"{phase} DeepEP over {nodes} node(s)")
    if not lacking:
        return ""
    return (f"wide-EP (DeepEP): no {db.engine} {db.version} wide-EP tables on {db.system} for "
            f"{'; '.join(lacking)}")  # fmt: skip


def _counts(config: Config) -> dict[str, float]:
    """How many times each operation runs in a step (every stage's layers: a micro-batch's
    path) [1]: the all-reduces two a layer and one after the embedding, or with expert
    parallelism the embedding's and one dispatch and combine a layer (which hold the layer's
    all-reduces); ``pp - 1`` hand-offs."""
    layers = config.model.layers
    counts = {op: float(layers) for op in OPERATIONS}
    reduces = 1.0 if config.ep > 1 else 2.0 * layers + 1.0
    counts.update(embedding=1.0, lm_head=1.0, allreduce=reduces, handoff=config.pp - 1.0)
    return counts


def _sum(parts: list[np.ndarray]) -> np.ndarray:
    """The parts added one after another, broadcasting (as ``Step.total`` adds a grid's
    operations; a zero operation, one the model lacks, is left out: x + 0 is x) [s]."""
    total = parts[0] + parts[1]
    for part in parts[2:]:
        total = total + part
    return total


@dataclass(frozen=True)
class Pass:
    """One configuration's expected pass over ``batch`` x ``context`` (``compose``): what
    ``step`` and ``step_at`` give for the decode grid, batch 1, the wall and the prefill grid,
    bit for bit, each operation at its own dims.

    expected, bound, basis : Per operation the model has, its decode time in the step [s],
        bound [s] and basis codes (int8), (batch, 1) for those of the step's tokens and
        (batch, context) for attention
    step, ttft : The decode step and the prefill of the batch's prompts (batch, context) [s]
    step_basis : The decode step's basis code (``Step.step_basis``; int8)
    b1 : The decode step at batch 1, one per context [s]
    wall : The step at each wall batch and its context, summed as a one-point step [s]
    reason : Why a decode operation has no reading ("" where all have)
    """

    expected: dict[str, np.ndarray]
    bound: dict[str, np.ndarray]
    basis: dict[str, np.ndarray]
    step: np.ndarray
    step_basis: np.ndarray
    ttft: np.ndarray
    b1: np.ndarray
    wall: np.ndarray
    reason: str


def compose(
    config: Config,
    batch: np.ndarray,
    context: np.ndarray,
    wall_batch: np.ndarray,
    wall_context: np.ndarray,
) -> Pass | str:
    """The expected pass of ``config`` (``Pass``) over ``batch`` x ``context`` (cached tokens;
    the prompts' too), at batch 1 and at each ``wall_batch`` with its ``wall_context``: the
    operations of the step's tokens read once over the distinct token counts of all four
    steps, decode attention once over the grid (a grid: its distinct shapes are its distinct
    batches by its distinct lengths) and once over batch 1 and the wall, prefill attention
    over the grid. A string: why there is none."""
    ops = _opened(config)
    if isinstance(ops, str):
        return ops
    n_b, n_c, n_w = batch.size, context.size, wall_batch.size
    decoded = rank_share(config, micro_batch(config, batch))  # a rank's micro-batch
    walled = rank_share(config, micro_batch(config, wall_batch))
    prompted = rank_share(config, batch)  # a prefill's prompts cross the stages at once
    steps = np.concatenate([decoded, np.ones(1, dtype=np.int64), walled])  # a token each
    prompts = (prompted[:, None] * context[None, :]).ravel()
    heads, at_heads = np.unique(steps, return_inverse=True)  # the LM head: the last tokens
    if ops.wide:  # each phase's tokens read from its own tables
        rows, where = _phased_rows(ops, steps, prompts)
    else:
        tokens, where = np.unique(np.concatenate([steps, prompts]), return_inverse=True)
        rows = _token_ops(ops, tokens)
    rows["lm_head"] = ops.lm_head(heads)
    grid = ops.attention(decoded[:, None], context[None, :], False)
    sizes = np.concatenate([np.ones(n_c, dtype=np.int64), walled])
    extra = ops.attention(sizes, np.concatenate([context, wall_context]), False)
    prefill = ops.attention(prompted[:, None], context[None, :], True)
    at = {
        "decode": where[:n_b], "b1": where[n_b], "wall": where[n_b + 1 : n_b + 1 + n_w],
        "prefill": where[n_b + 1 + n_w :].reshape(n_b, n_c),
        "heads": {"decode": at_heads[:n_b], "b1": at_heads[n_b], "wall": at_heads[n_b + 1 :]},
    }  # fmt: skip
    return _assemble(config, rows, (grid, extra, prefill), at, (n_b, n_c))


def _phased_rows(
    ops: _Ops, steps: np.ndarray, prompts: np.ndarray
) -> tuple[dict[str, Timed], np.ndarray]:
    """The operations of the step's tokens on the wide-EP layout, whose tables differ by phase:
    the decode steps' token counts read as a decode step's, the prompts' as a prefill's, one
    after the other; and each of ``steps`` then ``prompts``' place among them."""
    decoded, at_decoded = np.unique(steps, return_inverse=True)
    prompted, at_prompted = np.unique(prompts, return_inverse=True)
    parts = []
    for tokens, prefill in ((decoded, False), (prompted, True)):
        parts.append(_token_ops(ops, tokens, prefill))
    rows = {
        op: (
            np.concatenate([parts[0][op][0], parts[1][op][0]]),
            np.concatenate([parts[0][op][1], parts[1][op][1]]),
            np.concatenate([parts[0][op][2], parts[1][op][2]]),
        )
        for op in parts[0]
    }
    return rows, np.concatenate([at_decoded, at_prompted + decoded.size])


def _assemble(  # long: the four steps' sums, each in the order its step adds
    config: Config,
    rows: dict[str, Timed],
    attention: tuple[Timed, Timed, Timed],
    at: dict[str, Any],
    shape: tuple[int, int],
) -> Pass:
    """``compose``'s pass from its readings: ``rows`` over the distinct token counts,
    ``attention`` decode's over the grid and over batch 1 and the wall (one after the
    other), prefill's over the grid; ``at`` each step's token counts' places in ``rows``
    (``at["heads"]``: in the LM head's, read at the steps' last tokens alone)."""
    counts = _counts(config)
    grid, extra, prefill = attention
    one, wall = slice(0, shape[1]), slice(shape[1], None)
    expected: dict[str, np.ndarray] = {}
    bound: dict[str, np.ndarray] = {}
    basis: dict[str, np.ndarray] = {}
    b1: list[np.ndarray] = []
    ttft: list[np.ndarray] = []
    walls = dict.fromkeys(OPERATIONS, np.zeros(extra[0][wall].shape))
    for op in OPERATIONS:
        count = counts[op]
        if op == "attention":
            value, kind, own = grid
            expected[op], bound[op], basis[op] = value * count, own * count, kind
            b1.append(extra[0][one] * count)
            walls[op] = extra[0][wall] * count
            ttft.append(prefill[0] * count)
            continue
        if op not in rows:
            continue
        value, kind, own = rows[op]
        places = at["heads"] if op == "lm_head" else at
        expected[op] = (value[places["decode"]] * count)[:, None]
        bound[op] = (own[places["decode"]] * count)[:, None]
        basis[op] = kind[places["decode"]][:, None]
        b1.append(value[places["b1"]] * count)
        walls[op] = value[places["wall"]] * count
        prefilled = places["decode"][:, None] if op == "lm_head" else at["prefill"]
        ttft.append(value[prefilled] * count)
    total = _sum([expected[op] for op in OPERATIONS if op in expected])
    stacked = np.stack(list(walls.values()), axis=-1)  # a point's operations, pairwise
    reason = "; ".join(f"{op}: no reading" for op in OPERATIONS
                       if op in expected and np.isnan(expected[op]).any())  # fmt: skip
    return Pass(
        expected, bound, basis, total, _basis_code(expected, basis, total), _sum(ttft),
        _sum(b1), np.sum(np.ascontiguousarray(stacked), axis=-1), reason,
    )  # fmt: skip


@dataclass(frozen=True)
class HitPrefill:
    """One configuration's prefills of ``batch`` x ``prompt`` x hit (``hit_prefill``): the
    prompts' first ``cached`` tokens cached, the others computed.

    ttft : The prefill of the batch's prompts (time to first token) [s]; NaN: not composed
    basis : Its basis code (``Step.step_basis``'s rule; int8)
    reason : Why a point has no value ("" where it has one), per point (object)
    """

    ttft: np.ndarray
    basis: np.ndarray
    reason: np.ndarray


MLA_PREFIX = (
    "MLA: a prefill after a cached prefix is not composed (the MLA tables are read without a "
    "prefix)"
)
"""Why an MLA model's hit prefill (a cached prefix) has no expectation."""


def hit_prefill(
    config: Config, batch: np.ndarray, prompt: np.ndarray, cached: np.ndarray
) -> HitPrefill | str:
    """The expected prefill of ``config``'s ``batch`` prompts of ``prompt`` tokens whose first
    ``cached`` tokens are cached (whole tokens, at most ``prompt - 1``; ``(1 or batch, prompt,
    hit)``): the operations of the step's tokens at the ``batch (prompt - cached)`` new
    tokens, the LM head at the batch's last tokens, attention the new tokens' against the
    whole prompt (``_Ops._hit``). Summed as ``compose`` sums its TTFT, so ``cached`` 0 is
    ``Pass.ttft`` bit for bit. An MLA model's is composed at ``cached`` 0 only
    (``MLA_PREFIX``). A string: why there is none."""
    ops = _opened(config)
    if isinstance(ops, str):
        return ops
    prompted = rank_share(config, batch)  # a prefill's prompts cross the stages at once
    b3, p3 = prompted[:, None, None], prompt[None, :, None]
    shape = np.broadcast_shapes(b3.shape, p3.shape, np.shape(cached))
    new = np.broadcast_to(b3 * (p3 - cached), shape).astype(np.int64)  # each prefill's
    tokens, where = np.unique(new, return_inverse=True)
    last = rank_share(config, micro_batch(config, batch))  # the LM head, as compose reads it
    heads, at_heads = np.unique(last, return_inverse=True)
    rows = {**_token_ops(ops, tokens, True), "lm_head": ops.lm_head(heads)}
    mla = config.model.is_mla
    attention = ops.attention(b3, p3, True, None if mla else np.asarray(cached, np.float64))
    empty = np.broadcast_to(mla & (np.asarray(cached) > 0), shape)  # not composed
    if mla:  # the plain prefill where nothing is cached, none elsewhere
        attention = (
            np.where(empty, np.nan, attention[0]),
            np.where(empty, NONE, attention[1]),
            attention[2],
        )
    counts = _counts(config)
    expected: dict[str, np.ndarray] = {}
    basis: dict[str, np.ndarray] = {}
    for op in OPERATIONS:
        if op == "attention":
            value, kind, _ = attention
        elif op in rows:
            value, kind, _ = rows[op]
            place = at_heads[:, None, None] if op == "lm_head" else where.reshape(shape)
            value, kind = value[place], kind[place]
        else:
            continue
        expected[op], basis[op] = value * counts[op], kind
    total = _sum(list(expected.values()))
    reasons = np.full(shape, "", dtype=object)
    missing = [op for op, value in expected.items()
               if np.isnan(np.broadcast_to(value, shape)[~empty]).any()]  # fmt: skip
    if missing:
        reasons[np.isnan(total)] = "; ".join(f"{op}: no reading" for op in missing)
    reasons[empty] = MLA_PREFIX
    return HitPrefill(total, _basis_code(expected, basis, total), reasons)


@dataclass(frozen=True)
class Decoded:
    """A decode step of ``config`` over ``batch`` x ``context`` alone (``decode``): what
    ``compose`` gives as its decode step, bit for bit, without its prefill, batch 1 or wall.

    expected : Per operation the model has, its time in the step [s], (batch, 1) for those of
        the step's tokens and (batch, context) for attention
    step : The step (batch, context) [s]
    step_basis : Its basis code (``Step.step_basis``; int8)
    reason : Why an operation has no reading ("" where all have)
    """

    expected: dict[str, np.ndarray]
    step: np.ndarray
    step_basis: np.ndarray
    reason: str


def decode(
    config: Config, batch: np.ndarray, context: np.ndarray, rows_each: int = 1
) -> Decoded | str:
    """The decode step of ``config`` at each of ``batch`` sequences of ``rows_each`` rows (a
    verify step's ``k + 1``: the GEMMs' and the LM head's ``m``, attention's single-query
    sequences) by each ``context`` (cached tokens), summed as ``compose`` sums its decode step
    (``_sum`` in ``OPERATIONS``' order), each distinct shape read once. The pipeline's
    micro-batches and a rank's share are of whole sequences, each with its rows. A string:
    why there is none."""
    ops = _opened(config)
    if isinstance(ops, str):
        return ops
    decoded = rank_share(config, micro_batch(config, batch)) * rows_each  # a rank's, its rows
    tokens, where = np.unique(decoded, return_inverse=True)
    rows = {
        **_token_ops(ops, tokens),
        "lm_head": ops.lm_head(tokens),
        "attention": ops.attention(decoded[:, None], context[None, :], False),
    }
    counts = _counts(config)
    expected: dict[str, np.ndarray] = {}
    basis: dict[str, np.ndarray] = {}
    for op in OPERATIONS:
        if op not in rows:
            continue
        value, kind, _ = rows[op]
        if op != "attention":  # one reading a token count, as a column over the contexts
            value, kind = value[where][:, None], kind[where][:, None]
        expected[op], basis[op] = value * counts[op], kind
    total = _sum(list(expected.values()))
    reason = "; ".join(f"{op}: no reading" for op, v in expected.items() if np.isnan(v).any())
    return Decoded(expected, total, _basis_code(expected, basis, total), reason)


def verify_attention_floor(
    config: Config, batch: np.ndarray, context: np.ndarray, draft_tokens: int
) -> np.ndarray:
    """The roofline floor of a verify step's attention with each cache read once
    (``physics.verify_attention_time``), over the step's layers at the rank's micro-batch of
    ``batch`` sequences by each ``context`` (batch, context) [s]: the mean layer's as
    ``_Ops.attention`` means them (windowed layers at the window, the others full). NaN for an
    MLA model, whose block is read whole, its projections with its attention."""
    m = config.model
    shape = (batch.size, context.size)
    if m.is_mla:
        return np.full(shape, np.nan)
    sequences = rank_share(config, micro_batch(config, batch))[:, None]
    heads, kv = max(1, m.heads // config.shards), max(1, config.kv_heads // config.shards)

    def layer(window: int) -> np.ndarray:
        return physics.verify_attention_time(
            sequences, context[None, :], draft_tokens, heads, kv, m.head_dim, config.kv_bytes,
            config.attention_peak, config.device.bandwidth, window,
        )  # fmt: skip

    local = min(m.local_layers, m.layers) if m.sliding_window > 0 else 0
    if local in (0, m.layers):
        mean = layer(m.sliding_window if local else 0)
    else:
        share = local / m.layers
        mean = share * layer(m.sliding_window) + (1.0 - share) * layer(0)
    return np.broadcast_to(mean * _counts(config)["attention"], shape)


def _basis_code(
    expected: dict[str, np.ndarray], basis: dict[str, np.ndarray], total: np.ndarray
) -> np.ndarray:
    """``Step.step_basis``'s codes (int8): the least certain basis of the operations that
    take at least ``SIGNIFICANT`` of the step (or whose share is NaN)."""
    code = np.zeros(total.shape, dtype=np.int8)
    with np.errstate(invalid="ignore", divide="ignore"):
        for op, value in expected.items():
            share = value / total
            counted = np.where(np.isnan(share) | (share >= SIGNIFICANT), basis[op], 0)
            np.maximum(code, counted, out=code, casting="unsafe")
    return code


def expected_inputs(sweep: Any) -> dict[str, tuple[str, np.ndarray]]:
    """The records the expected pass reads, as derived inputs (none without an engine):
    ``_model_records`` by model, ``_device_records`` by device, ``_engine_choices`` by engine,
    and with speculation ``_draft_records`` by draft (``speculative_expected``)."""
    if not getattr(sweep, "engine", ()):
        return {}

    def objects(values: Any) -> np.ndarray:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out

    drafts = getattr(sweep, "spec_draft", ())
    return {
        "_model_records": ("model", objects(sweep.models)),
        "_device_records": ("hardware", objects(sweep.hardware)),
        "_engine_choices": ("engine", objects(sweep.engine)),
        **({"_draft_records": ("spec_draft", objects(drafts))} if drafts else {}),
    }
