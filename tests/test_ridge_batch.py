"""``ridge_batch`` is where the decode table's bottleneck flag turns compute-bound.

The flag is compute-bound from the first integer batch at or above the ridge batch on
(``ceil(ridge_batch)``; a tie is compute-bound) and memory-bound below it, at the split compute
roof too (attention at the KV format's peak, the GEMMs at the weights': docs/cost-model.md
section 5.1), where the intensity crosses ``ridge_point`` at another batch. Checked on generated
cases against the flag over a whole batch axis (the plain loop), dense and MoE, windowed and MLA.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sweeps.config import parse_config
from sweeps.grid import build_grid

BATCHES = 2048
HARDWARE = ["h100-sxm", "h200", "b200", "mi300x", "a100-80gb", "gaudi3"]
KV = ["bf16", "fp8"]
WEIGHTS = ["bf16", "fp8", "nvfp4", "int4"]


def _grid(model: str, context: int, tp: int, attention: str):  # type: ignore[no-untyped-def]
    text = f"""
[sweep]
name = "ridge"
[axes]
model = ["{model}"]
hardware = {HARDWARE}
tp = [{tp}]
batch = [{", ".join(str(b) for b in range(1, BATCHES + 1))}]
context = [{context}]
kv_dtype = {KV}
weight_dtype = {WEIGHTS}
[options]
attention_dtype = "{attention}"
"""
    return build_grid(parse_config(text))


def _first_compute_bound(ds):  # type: ignore[no-untyped-def]
    """The first batch of the axis the flag calls compute-bound (NaN: none), per setting, and
    the ridge batch beside it, as flat arrays."""
    flag = ds["bottleneck"].transpose(..., "batch")
    ridge = ds["ridge_batch"].broadcast_like(flag.isel(batch=0)).transpose(*flag.dims[:-1])
    bound = flag.values == 1
    batches = ds["batch"].values
    first = np.where(bound.any(-1), batches[np.argmax(bound, -1)], np.nan)
    # memory-bound below the first compute-bound batch, compute-bound from it on
    assert np.all(np.diff(bound.astype(np.int8), axis=-1) >= 0)
    return first.reshape(-1), ridge.values.reshape(-1)


@settings(max_examples=12, deadline=None)
@given(
    model=st.sampled_from(
        ["llama-3-70b", "llama-3-8b", "mixtral-8x7b", "gemma-2-9b", "deepseek-v3"]
    ),
    context=st.sampled_from([128, 512, 2048, 8192]),
    tp=st.sampled_from([1, 8]),
    attention=st.sampled_from(["auto", "gemm"]),
)
@example(model="llama-3-70b", context=2048, tp=1, attention="auto")  # ridge 907 vs flag 965 once
def test_the_flag_turns_compute_bound_at_the_ceiling_of_the_ridge_batch(
    model: str, context: int, tp: int, attention: str
) -> None:
    first, ridge = _first_compute_bound(_grid(model, context, tp, attention))
    never = np.isnan(ridge)
    assert np.all(np.isnan(first[never]))  # no ridge batch: memory-bound at every batch
    inside = ~never & (ridge <= BATCHES)
    for got, at in zip(first[inside], ridge[inside], strict=True):
        tie = abs(at - round(at)) <= 1e-9 * at  # the flag's rounding decides a near-integer
        assert got == math.ceil(at) or (tie and got in (math.floor(at), math.ceil(at))), at
    assert np.all(np.isnan(first[~never & (ridge > BATCHES)]))
