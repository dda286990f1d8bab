"""Decode: one step that produces a token for each of ``B`` sequences at context ``S``."""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def decode_flops_per_sequence(
    active_params: Array, attention_flops: Array, attention_on: Array, lookup_params: Array = 0
) -> Array:
    """FLOPs one sequence costs per decode step, ``F_seq = 2 (P_act - lookup) (+ attention)``.

    The input embedding is a gather and computes nothing (``lookup_params``, see
    ``sweeps.physics.embedding.lookup_params``: ``V h_m`` untied, 0 tied); the default 0 is
    the note's ``2 P_act``.

    Parameters
    ----------
    active_params : Parameters used per token [1]
    attention_flops : Attention FLOPs of one token against its cache [FLOP]
    attention_on : 1 to count attention FLOPs, 0 to reproduce the seed note [1]
    lookup_params : Parameters a token looks up without computing (0 for the note's form) [1]

    Returns
    -------
    FLOPs per sequence per step [FLOP]
    """
    return 2 * (active_params - lookup_params) + attention_on * attention_flops


def decode_flops(batch: Array, flops_per_sequence: Array) -> Array:
    """FLOPs of one decode step for the whole batch, ``B * F_seq``.

    Parameters
    ----------
    batch : Sequences decoded together, ``B`` [sequence]
    flops_per_sequence : FLOPs per sequence per step [FLOP]

    Returns
    -------
    Step FLOPs [FLOP]
    """
    return batch * flops_per_sequence


def decode_bytes(weights_read: Array, batch: Array, kv_seq: Array) -> Array:
    """Bytes one decode step moves: the weights once, every sequence's own cache.

    Parameters
    ----------
    weights_read : Weight bytes read by the step [byte]
    batch : Sequences decoded together [sequence]
    kv_seq : KV-cache bytes of one sequence [byte]

    Returns
    -------
    Step bytes, ``W + B * KV_seq`` [byte]
    """
    return weights_read + batch * kv_seq


def fraction_of_ceiling(batch: Array, weight_bytes: Array, kv_seq: Array) -> Array:
    """Share of the asymptotic ceiling reached at batch ``B``: ``B KV / (W + B KV)``.

    The same with or without attention FLOPs, since both FLOP terms grow with ``B``.

    Parameters
    ----------
    batch : Sequences decoded together [sequence]
    weight_bytes : Weight bytes read per step [byte]
    kv_seq : KV-cache bytes of one sequence [byte]

    Returns
    -------
    Fraction of the ceiling, 0..1 [1]
    """
    kv = batch * kv_seq
    return kv / (weight_bytes + kv)


def batch_for_fraction(fraction: Array, weight_bytes: Array, kv_seq: Array) -> Array:
    """Batch at which decode reaches ``fraction`` of its ceiling, ``f / (1 - f) * W / KV_seq``.

    Parameters
    ----------
    fraction : Target share of the ceiling, 0 < f < 1 [1]
    weight_bytes : Weight bytes [byte]
    kv_seq : KV-cache bytes of one sequence [byte]

    Returns
    -------
    Batch (continuous) [sequence]
    """
    return fraction / (1 - fraction) * weight_bytes / kv_seq


def knee_batch(weight_bytes: Array, kv_seq: Array) -> Array:
    """Batch at which decode reaches half its ceiling, ``W / KV_seq``.

    Parameters
    ----------
    weight_bytes : Weight bytes [byte]
    kv_seq : KV-cache bytes of one sequence [byte]

    Returns
    -------
    Knee batch (continuous) [sequence]
    """
    return weight_bytes / kv_seq


def ridge_batch(
    ridge: Array, weight_bytes: Array, flops_per_sequence: Array, kv_seq: Array
) -> Array:
    """Batch at which decode turns compute-bound, ``R W / (F_seq - R KV_seq)``.

    It exists only where the ceiling ``F_seq / KV_seq`` lies above the ridge; elsewhere decode is
    memory-bound at every batch and the result is NaN (a null in the outputs).

    Parameters
    ----------
    ridge : Ridge point of the device [FLOP/byte]
    weight_bytes : Weight bytes [byte]
    flops_per_sequence : FLOPs per sequence per step as their time at the peak of ``ridge``:
        ``F_gemm + r F_att`` where attention runs at another peak (docs/cost-model.md 5.1),
        so the result is where the split roof's bottleneck turns [FLOP]
    kv_seq : KV-cache bytes of one sequence [byte]

    Returns
    -------
    Ridge batch (continuous), NaN where none exists [sequence]
    """
    margin = flops_per_sequence - ridge * kv_seq
    exists = margin > 0
    return where(exists, ridge * weight_bytes / where(exists, margin, 1.0), np.nan)


def max_batch(capacity: Array, reserve: Array, weight_bytes: Array, kv_seq: Array) -> Array:
    """Largest batch whose weights and caches fit: ``floor((C (1 - r) - W) / KV_seq)``, >= 0.

    Zero means the model does not fit at all.

    Parameters
    ----------
    capacity : Device memory [byte]
    reserve : Fraction of memory kept for activations and runtime [1]
    weight_bytes : Weight bytes held on the device [byte]
    kv_seq : KV-cache bytes of one sequence held on the device [byte]

    Returns
    -------
    Memory-wall batch [sequence]
    """
    return np.maximum(np.floor((capacity * (1 - reserve) - weight_bytes) / kv_seq), 0)


def tile_fill(batch: Array, tile_rows: Array = 16) -> Array:
    """Useful share of an MMA tile's rows when a decode step offers ``B`` rows.

    Parameters
    ----------
    batch : Sequences decoded together [sequence]
    tile_rows : Rows of one tensor-core tile [1]

    Returns
    -------
    Row fill, ``B / (rows * ceil(B / rows))``, 0..1 [1]
    """
    return batch / (tile_rows * np.ceil(batch / tile_rows))


def tokens_per_second(batch: Array, step_time: Array) -> Array:
    """Decode throughput, one token per sequence per step.

    Parameters
    ----------
    batch : Sequences decoded together [sequence]
    step_time : Time of one decode step [s]

    Returns
    -------
    Throughput [token/s]
    """
    return batch / step_time
