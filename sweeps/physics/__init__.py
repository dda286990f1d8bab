"""The cost model of ``docs/cost-model.md`` as pure, vectorized functions.

Every function takes numbers, numpy arrays or xarray DataArrays (duck-typed: only arithmetic,
comparisons and numpy ufuncs are used, never an ``if`` on a value) and returns the same kind of
object, broadcast. Units are SI throughout: bytes, FLOP, seconds, FLOP/s, bytes/s.
Nothing here reads a file, a config or the catalog.
"""

from sweeps.physics.decode import (
    batch_for_fraction,
    decode_bytes,
    decode_flops,
    decode_flops_per_sequence,
    fraction_of_ceiling,
    knee_batch,
    max_batch,
    ridge_batch,
    tile_fill,
    tokens_per_second,
)
from sweeps.physics.model import (
    allreduce_bytes,
    attention_flops_per_token,
    causal_attention_pairs,
    expected_experts_touched,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_cached_layer_tokens,
    kv_shards,
    params_read,
    weight_bytes,
)
from sweeps.physics.prefill import (
    prefill_attention_pairs,
    prefill_bytes,
    prefill_flops,
    prefill_memory_bound_prompt,
)
from sweeps.physics.roofline import (
    arithmetic_intensity,
    asymptotic_ceiling,
    attainable_flops,
    is_compute_bound,
    ridge_point,
    roofline_time,
    utilization,
)
from sweeps.physics.textbook import classify_llm_phases, compute_arithmetic_intensity

__all__ = [
    "allreduce_bytes",
    "arithmetic_intensity",
    "asymptotic_ceiling",
    "attainable_flops",
    "attention_flops_per_token",
    "batch_for_fraction",
    "causal_attention_pairs",
    "classify_llm_phases",
    "compute_arithmetic_intensity",
    "decode_bytes",
    "decode_flops",
    "decode_flops_per_sequence",
    "expected_experts_touched",
    "fraction_of_ceiling",
    "is_compute_bound",
    "knee_batch",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_cached_layer_tokens",
    "kv_shards",
    "max_batch",
    "params_read",
    "prefill_attention_pairs",
    "prefill_bytes",
    "prefill_flops",
    "prefill_memory_bound_prompt",
    "ridge_batch",
    "ridge_point",
    "roofline_time",
    "tile_fill",
    "tokens_per_second",
    "utilization",
    "weight_bytes",
]
