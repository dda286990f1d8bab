"""What one step costs: the grid's per-step physics, tabulated for the simulator.

A step carries some decodes, each at its own context ``S`` (the tokens it attends over, its
own new one included), and some prompt chunks, each of ``c`` tokens after a prefix of ``p``
already cached. Its time is the roofline bound of exactly that:

- FLOPs: ``decode_flops[S]`` per decode (``sweeps.physics.decode_flops_per_sequence`` at the
  context's cached token-layers, as the decode table); per chunk ``token_flops c`` (the linear
  layers, the lookup excluded), ``pair_flops (pairs[p + c] - pairs[p])`` (causal attention
  against the prefix, windows applied: ``sweeps.physics.prefill_attention_pairs``) and
  ``logit_flops`` when the chunk holds the prompt's last token (``sweeps.physics.prefill_flops``
  split into its three terms);
- bytes: ``weights[T]`` once for the step's ``T`` tokens (``weights_read`` of the grid: the
  MoE experts ``T`` tokens touch and their embedding rows), ``cache[S]`` per decode (its cache
  read), ``cache[p + c]`` per chunk (the prefix read, ``cache[p]``, plus its own KV writes,
  ``cache[p + c] - cache[p]``);
- time: ``sweeps.physics.roofline_time`` at the grid's peak and bandwidth (efficiencies
  applied), per device at the point's tp.

Every table is the grid's own function evaluated on an integer range, so a step of ``B``
decodes at one context costs the decode table's ``step_time_s`` and a step of ``m`` whole
prompts the prefill table's ``t_p(m, I)`` (tests/test_simulate_costs.py holds them equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeps import physics

POINT_DIMS = ("model", "hardware", "tp", "kv_heads", "kv_dtype", "weight_dtype")
"""The dims that fix one replica's step costs (the batch and the workload are the simulator's)."""


@dataclass(frozen=True)
class StepCosts:
    """The per-step physics of one replica, as tables the compiled loop indexes.

    peak : Peak throughput, efficiency applied [FLOP/s]
    bandwidth : Memory bandwidth, efficiency applied [byte/s]
    decode_flops : FLOPs of one decode at context ``S`` (index ``S``) [FLOP]
    cache : KV bytes of one sequence holding ``n`` tokens, busiest device (index ``n``) [byte]
    pairs : Causal query-key pairs of the first ``n`` prompt tokens, all layers [token**2]
    weights : Weight bytes a step of ``T`` tokens reads (index ``T``) [byte]
    token_flops : Linear-layer FLOPs of one prompt token [FLOP]
    pair_flops : FLOPs of one causal pair summed over layers [FLOP]
    logit_flops : FLOPs of the lm_head on a prompt's last token [FLOP]
    tp : Devices of the replica [device]
    stages : Pipeline stages, ``pp``: a step of ``m < pp`` whole sequences takes ``pp / m``
        times its roofline (``sweeps.physics.pipeline_fill``) [1]
    fixed : Time a step of ``T`` tokens adds to its roofline (index ``T``), None: nothing.
        The bound's tables have none; expected step costs (``sweeps.studies.expected.steps``)
        put there what is not a sum over the step's sequences (the GEMMs of its ``T``
        tokens) [s]
    """

    peak: float
    bandwidth: float
    decode_flops: np.ndarray
    cache: np.ndarray
    pairs: np.ndarray
    weights: np.ndarray
    token_flops: float
    pair_flops: float
    logit_flops: float
    tp: int
    stages: float = 1.0
    fixed: np.ndarray | None = None

    def fixed_table(self) -> np.ndarray:
        """``fixed``, or zeros: what the loop adds to a step of ``T`` tokens [s]."""
        return self.fixed if self.fixed is not None else np.zeros(self.weights.size)

    @property
    def max_context(self) -> int:
        """Largest context the tables cover [token]."""
        return int(self.decode_flops.size - 1)

    @property
    def max_tokens(self) -> int:
        """Largest step the tables cover [token]."""
        return int(self.weights.size - 1)


def _layer_tokens(x: Any, context: np.ndarray) -> np.ndarray:
    """Cached token-layers of a sequence at ``context`` tokens [token]."""
    return physics.kv_cached_layer_tokens(context, x["layers"], x["local_layers"], x["_window"])


def _prefill_terms(x: Any) -> tuple[float, float, float]:
    """``sweeps.physics.prefill_flops`` of one prompt split into its per-token, per-pair and
    logits terms, per device [FLOP]."""
    vocab, width, tied = x["vocab_size"], x["hidden_size"], x["tied_embeddings"]
    embedding = physics.embedding_params(vocab, width, tied)
    logits = physics.logit_params(vocab, width)
    common = (x["active_params"], x["heads"], x["_prefill_attention_dim"])
    attention_on = x["_attention_on"]
    token = physics.prefill_flops(1, 1, *common, 0.0, attention_on, embedding, 0.0)
    pair = physics.prefill_flops(1, 0, *common, 1.0, attention_on, embedding, 0.0)
    logit = physics.prefill_flops(1, 0, *common, 0.0, attention_on, embedding, logits)
    tp = x["_stage_devices"]  # a prompt crosses the pipeline's stages in turn
    return float(token / tp), float(pair / tp), float(logit / tp)


def step_costs(x: Any, max_context: int, max_tokens: int) -> StepCosts:
    """The tables of ``StepCosts`` for the grid's inputs ``x`` (``point_inputs``), up to a
    context of ``max_context`` and a step of ``max_tokens`` tokens."""
    from sweeps.engine.steps import weights_read

    tp = x["_flop_devices"]  # a replica's devices: tp, or tp x ep x pp with the parallel axes
    context = np.arange(max_context + 1, dtype=np.float64)
    layer_tokens = _layer_tokens(x, context)
    lookup = physics.lookup_params(x["vocab_size"], x["hidden_size"], x["tied_embeddings"])
    attention = physics.attention_flops_per_token(x["heads"], x["attention_dim"], layer_tokens)
    # attention at its own peak (engine/split.py): its FLOPs as their time at the GEMM
    # peak, ``ratio`` the GEMM peak over the attention peak (1 where one peak runs both)
    ratio = float(x["_attention_ratio"])
    decode = (
        physics.decode_flops_per_sequence(
            x["active_params"], ratio * attention, x["_attention_on"], lookup
        )
        / tp
    )
    cache = physics.kv_bytes_per_sequence(x["_kv_elements"], x["kv_bytes"], layer_tokens)
    pairs = physics.prefill_attention_pairs(context, x["layers"], x["local_layers"], x["_window"])
    tokens = np.arange(max_tokens + 1, dtype=np.float64)
    token, pair, logit = _prefill_terms(x)
    return StepCosts(
        peak=float(x["_peak"]),
        bandwidth=float(x["_bandwidth"]),
        decode_flops=np.ascontiguousarray(decode, dtype=np.float64),
        cache=np.ascontiguousarray(cache / x["_shards"], dtype=np.float64),
        pairs=np.ascontiguousarray(pairs, dtype=np.float64),
        weights=np.ascontiguousarray(weights_read(x, tokens), dtype=np.float64),
        token_flops=token,
        pair_flops=ratio * pair,
        logit_flops=logit,
        tp=int(x["_devices"]),
        stages=float(x["_pp"]),
    )


def step_time(
    costs: StepCosts,
    contexts: np.ndarray | list[int],
    chunks: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
) -> float:
    """The time of one step of decodes at ``contexts`` and prompt ``chunks`` of
    ``(prefix, tokens, prompt)`` each, in plain Python: what the compiled loop computes [s]."""
    contexts = np.asarray(contexts, dtype=np.int64)
    flops = float(np.sum(costs.decode_flops[contexts]))
    nbytes = float(np.sum(costs.cache[contexts]))
    tokens = int(contexts.size)
    for prefix, size, prompt in chunks:
        end = prefix + size
        flops += costs.token_flops * size + costs.pair_flops * (
            costs.pairs[end] - costs.pairs[prefix]
        )
        flops += costs.logit_flops if end == prompt else 0.0
        nbytes += costs.cache[end]
        tokens += size
    nbytes += costs.weights[tokens]
    roof = physics.roofline_time(flops, nbytes, costs.peak, costs.bandwidth)
    roof = roof + float(costs.fixed_table()[tokens])
    fill = physics.pipeline_fill(contexts.size + len(chunks), costs.stages)
    return float(roof * fill)
