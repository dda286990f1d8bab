"""Mixture of experts: the batches that matter when the weights a step reads grow with the batch.

A dense decode step reads its weights ``W`` whatever the batch, so the share of the ceiling at
batch ``B`` is ``B KV / (W + B KV)`` and the knee, ceiling and ridge batches are closed forms
(``sweeps.physics.decode``). A mixture of experts reads only the experts its tokens touch
(cost-model section 3): with uniform routing ``W(B) = A + (F - A) (t(B) - k) / (E - k)``, where
``t(B) = E (1 - (1 - k/E)**B)`` is the expected number of distinct experts per MoE layer, ``A``
the bytes one token reads (``B = 1``) and ``F`` the bytes when every expert is read. ``W`` grows
from ``A`` towards ``F``, so at a small batch a larger share of the step is cache, and the knee
comes earlier than ``F / KV`` says.

Each batch here is the root of ``s B = W(B)`` for a slope ``s`` [byte/sequence]: the knee at
``s = KV``, a fraction ``f`` of the ceiling at ``s = (1 - f) / f KV``, the ridge point ``R`` at
``s = (F_seq - R KV) / R``. ``W`` is concave in ``B`` (``t`` is), so ``s B - W(B)`` is convex,
negative at ``B = 0`` (``W(0)`` is the bytes no routed expert holds) and has one positive root,
found by Newton's method from ``F / s`` (above the root: ``W <= F``), which never overshoots
a convex function's root. For a dense model (``E <= k``) ``W = F`` and each function returns
the dense closed form of ``sweeps.physics.decode``, bit for bit.

Every function takes the routing as the same four parameters (their one description):

- ``active_bytes``: bytes a step of one token reads, ``A`` [byte]
- ``all_bytes``: bytes a step reads when it touches every expert, ``F`` [byte]
- ``experts``: routed experts per MoE layer, ``E`` (1 for dense) [1]
- ``experts_per_token``: experts each token is routed to, ``k`` (1 for dense) [1]

The batch functions count in ``A`` and ``F`` the bytes the whole batch shares, apart from the
per-sequence bytes (``kv_seq``: the cache, the embedding row).
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, on_values, where
from sweeps.physics.decode import batch_for_fraction, ridge_batch

NEWTON_STEPS = 60
"""Newton iterations of ``batch_at_slope`` at most: from ``F / s`` the error falls quadratically
once near the root; 60 reach float precision on every catalog MoE from batch 1e-3 to 1e9. The
iteration stops earlier where a step leaves every batch as it was, bit for bit (a fixed point:
each later step would repeat it), typically after 1-6 steps; so the result is that of all 60."""


def _routing(experts: Array, experts_per_token: Array) -> tuple[Array, Array, Array]:
    """Whether the model routes (``E > k``), ``E - k`` where it does (1 where not) and
    ``ln(1 - k / E)`` where it does (``ln 0.5`` where not, unused) [bool, 1, 1]."""
    routes = experts > experts_per_token
    spare = where(routes, experts - experts_per_token, 1.0)
    keep = where(routes, 1 - experts_per_token / where(routes, experts, 1.0), 0.5)
    return routes, spare, np.log(keep)


def moe_weights_read(
    active_bytes: Array,
    all_bytes: Array,
    experts: Array,
    experts_per_token: Array,
    tokens: Array,
) -> Array:
    """Weight bytes a step of ``T`` tokens reads, ``A + (F - A) (t(T) - k) / (E - k)``.

    ``sweeps.physics.params_read`` in bytes, from the bytes of one token and of every expert.

    Parameters
    ----------
    active_bytes, all_bytes, experts, experts_per_token : The routing (module doc) [byte,
        byte, 1, 1]
    tokens : Tokens in the step, ``T`` (the batch for decode) [token]

    Returns
    -------
    Weight bytes read, ``F`` for a dense model [byte]
    """
    routes, spare, log_keep = _routing(experts, experts_per_token)
    touched = experts * (1 - np.exp(tokens * log_keep))
    share = where(routes, (touched - experts_per_token) / spare, 1.0)
    return active_bytes + (all_bytes - active_bytes) * share


def batch_at_slope(
    slope: Array,
    active_bytes: Array,
    all_bytes: Array,
    experts: Array,
    experts_per_token: Array,
) -> Array:
    """The batch ``B`` at which ``s B`` equals the weights read, ``s B = W(B)`` (module doc).

    Parameters
    ----------
    slope : Bytes per sequence the batch must outweigh, ``s`` (> 0) [byte/sequence]
    active_bytes, all_bytes, experts, experts_per_token : The routing (module doc) [byte,
        byte, 1, 1]

    Returns
    -------
    Batch (continuous), ``F / s`` for a dense model [sequence]
    """
    args = (slope, active_bytes, all_bytes, experts, experts_per_token)
    return on_values(_newton, *args)


def _newton(
    slope: Array,
    active_bytes: Array,
    all_bytes: Array,
    experts: Array,
    experts_per_token: Array,
) -> Array:
    """``batch_at_slope`` on bare arrays: ``NEWTON_STEPS`` steps from ``F / s``, or fewer
    where a step changes no batch (a fixed point: the rest would change none) [sequence]."""
    routes, spare, log_keep = _routing(experts, experts_per_token)
    routed = where(routes, all_bytes - active_bytes, 0.0)
    batch = all_bytes / slope
    for _ in range(NEWTON_STEPS):
        gap = slope * batch - moe_weights_read(
            active_bytes, all_bytes, experts, experts_per_token, batch
        )
        # dW/dB = (F - A) E (-ln q) q**B / (E - k), q = 1 - k/E
        rise = routed * experts * -log_keep * np.exp(batch * log_keep) / spare
        descent = slope - rise
        step = where(descent > 0, gap / where(descent > 0, descent, 1.0), 0.0)
        previous, batch = batch, batch - np.maximum(step, 0.0)
        # a control decision, not a value's: the result is bit for bit that of every step (a
        # NaN stays NaN)
        if np.all((batch == previous) | np.isnan(previous)):
            break
    return batch


def moe_knee_batch(
    active_bytes: Array,
    all_bytes: Array,
    experts: Array,
    experts_per_token: Array,
    kv_seq: Array,
) -> Array:
    """Batch at which decode reaches half its ceiling: ``B KV_seq = W(B)``.

    Parameters
    ----------
    active_bytes, all_bytes, experts, experts_per_token : The routing, apart from the
        per-sequence bytes (module doc) [byte, byte, 1, 1]
    kv_seq : Bytes each sequence adds to a step (its cache) [byte]

    Returns
    -------
    Knee batch (continuous), ``W / KV_seq`` for a dense model [sequence]
    """
    # f = 1/2: slope (1 - f) / f KV = KV, and the dense f / (1 - f) W / KV = W / KV, exactly
    return moe_batch_for_fraction(0.5, active_bytes, all_bytes, experts, experts_per_token, kv_seq)


def moe_batch_for_fraction(
    fraction: Array,
    active_bytes: Array,
    all_bytes: Array,
    experts: Array,
    experts_per_token: Array,
    kv_seq: Array,
) -> Array:
    """Batch at which decode reaches ``fraction`` of its ceiling: ``(1 - f) / f B KV = W(B)``.

    Parameters
    ----------
    fraction : Target share of the ceiling, 0 < f < 1 [1]
    active_bytes, all_bytes, experts, experts_per_token : The routing, apart from the
        per-sequence bytes (module doc) [byte, byte, 1, 1]
    kv_seq : Bytes each sequence adds to a step (its cache) [byte]

    Returns
    -------
    Batch (continuous), ``f / (1 - f) W / KV_seq`` for a dense model [sequence]
    """
    slope = (1 - fraction) / fraction * kv_seq
    found = batch_at_slope(slope, active_bytes, all_bytes, experts, experts_per_token)
    dense = batch_for_fraction(fraction, all_bytes, kv_seq)
    return where(experts > experts_per_token, found, dense)


def moe_ridge_batch(
    ridge: Array,
    active_bytes: Array,
    all_bytes: Array,
    experts: Array,
    experts_per_token: Array,
    flops_per_sequence: Array,
    kv_seq: Array,
) -> Array:
    """Batch at which decode turns compute-bound: ``(F_seq - R KV_seq) / R B = W(B)``.

    Exists only where the ceiling ``F_seq / KV_seq`` is above the ridge point (NaN elsewhere),
    as ``sweeps.physics.ridge_batch``, which it equals for a dense model.

    Parameters
    ----------
    ridge : Ridge point of the device, ``R`` [FLOP/byte]
    active_bytes, all_bytes, experts, experts_per_token : The routing, apart from the
        per-sequence bytes (module doc) [byte, byte, 1, 1]
    flops_per_sequence : FLOPs per sequence per step, ``F_seq``, as ``ridge_batch`` takes
        them (attention's as their time at the GEMM peak) [FLOP]
    kv_seq : Bytes each sequence adds to a step (its cache) [byte]

    Returns
    -------
    Ridge batch (continuous), NaN where none exists [sequence]
    """
    margin = flops_per_sequence - ridge * kv_seq
    exists = margin > 0
    slope = where(exists, margin, 1.0) / ridge
    found = batch_at_slope(slope, active_bytes, all_bytes, experts, experts_per_token)
    dense = ridge_batch(ridge, all_bytes, flops_per_sequence, kv_seq)
    return where(experts > experts_per_token, where(exists, found, np.nan), dense)


def moe_fraction_of_ceiling(
    batch: Array,
    active_bytes: Array,
    all_bytes: Array,
    experts: Array,
    experts_per_token: Array,
    kv_seq: Array,
) -> Array:
    """Share of the asymptotic ceiling reached at batch ``B``: ``B KV / (W(B) + B KV)``.

    Parameters
    ----------
    batch : Sequences decoded together [sequence]
    active_bytes, all_bytes, experts, experts_per_token : The routing, apart from the
        per-sequence bytes (module doc) [byte, byte, 1, 1]
    kv_seq : Bytes each sequence adds to a step (its cache) [byte]

    Returns
    -------
    Fraction of the ceiling, 0..1 [1]
    """
    read = moe_weights_read(active_bytes, all_bytes, experts, experts_per_token, batch)
    kv = batch * kv_seq
    return kv / (read + kv)
