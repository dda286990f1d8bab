"""Roofline of one kernel: arithmetic intensity, ridge point, bottleneck, attainable FLOP/s."""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array


def arithmetic_intensity(flops: Array, bytes_moved: Array) -> Array:
    """Arithmetic intensity of a kernel.

    Parameters
    ----------
    flops : Work done [FLOP]
    bytes_moved : Traffic to and from DRAM/HBM [byte]

    Returns
    -------
    Arithmetic intensity [FLOP/byte]
    """
    return flops / bytes_moved


def ridge_point(peak_flops: Array, bandwidth: Array) -> Array:
    """Ridge point of a device: the intensity at which the two roofs meet.

    Parameters
    ----------
    peak_flops : Peak dense throughput [FLOP/s]
    bandwidth : Peak DRAM/HBM bandwidth [byte/s]

    Returns
    -------
    Ridge point [FLOP/byte]
    """
    return peak_flops / bandwidth


def is_compute_bound(intensity: Array, ridge: Array) -> Array:
    """True where a kernel is compute-bound; a tie (``AI == ridge``) is compute-bound.

    Parameters
    ----------
    intensity : Arithmetic intensity [FLOP/byte]
    ridge : Ridge point of the device [FLOP/byte]

    Returns
    -------
    Compute-bound flag [bool]
    """
    return intensity >= ridge


def attainable_flops(intensity: Array, peak_flops: Array, bandwidth: Array) -> Array:
    """Attainable throughput under the roofline, ``min(AI * bandwidth, peak)``.

    Parameters
    ----------
    intensity : Arithmetic intensity [FLOP/byte]
    peak_flops : Peak dense throughput [FLOP/s]
    bandwidth : Peak DRAM/HBM bandwidth [byte/s]

    Returns
    -------
    Attainable throughput [FLOP/s]
    """
    return np.minimum(intensity * bandwidth, peak_flops)


def utilization(attainable: Array, peak_flops: Array) -> Array:
    """Fraction of peak compute the roofline allows.

    Parameters
    ----------
    attainable : Attainable throughput [FLOP/s]
    peak_flops : Peak dense throughput [FLOP/s]

    Returns
    -------
    Utilization, 0..1 [1]
    """
    return attainable / peak_flops


def roofline_time(flops: Array, bytes_moved: Array, peak_flops: Array, bandwidth: Array) -> Array:
    """Lower bound on a kernel's time: the slower of computing and moving its bytes.

    Parameters
    ----------
    flops : Work done [FLOP]
    bytes_moved : Traffic to and from DRAM/HBM [byte]
    peak_flops : Peak dense throughput [FLOP/s]
    bandwidth : Peak DRAM/HBM bandwidth [byte/s]

    Returns
    -------
    Time bound [s]
    """
    return np.maximum(flops / peak_flops, bytes_moved / bandwidth)


def asymptotic_ceiling(flops_per_sequence: Array, kv_seq: Array) -> Array:
    """Decode arithmetic intensity as batch tends to infinity, ``F_seq / KV_seq``.

    Weights are read once per step whatever the batch, each sequence's KV cache is not, so the
    weight term vanishes from ``AI(B) = B F_seq / (W + B KV_seq)`` as ``B`` grows.

    Parameters
    ----------
    flops_per_sequence : FLOPs of one sequence in one decode step [FLOP]
    kv_seq : KV-cache bytes of one sequence [byte]

    Returns
    -------
    Asymptotic ceiling [FLOP/byte]
    """
    return flops_per_sequence / kv_seq


def split_compute_time(
    gemm_flops: Array, attention_flops: Array, peak_flops: Array, attention_ratio: Array
) -> Array:
    """Compute time of a step whose GEMMs and attention run at different peaks.

    ``F_gemm / P + F_att / P_att = (F_gemm + r F_att) / P`` with ``r = P / P_att``: an FP4
    checkpoint's GEMMs run at the FP4 peak, its attention at the KV format's (docs/cost-model.md).

    Parameters
    ----------
    gemm_flops : FLOPs of the weight GEMMs [FLOP]
    attention_flops : FLOPs of attention (scores and weighted sum) [FLOP]
    peak_flops : Peak throughput of the GEMMs' format [FLOP/s]
    attention_ratio : GEMM peak over the attention format's peak, ``r`` [1]

    Returns
    -------
    Time at the compute roof [s]
    """
    return (gemm_flops + attention_ratio * attention_flops) / peak_flops


def split_roofline_time(
    gemm_flops: Array,
    attention_flops: Array,
    bytes_moved: Array,
    peak_flops: Array,
    attention_ratio: Array,
    bandwidth: Array,
) -> Array:
    """Roofline time with the compute roof split between GEMMs and attention [s]:
    ``max(split_compute_time, bytes / bandwidth)``; ``roofline_time`` where ``r = 1``.

    Parameters
    ----------
    gemm_flops, attention_flops : FLOPs of the GEMMs and of attention [FLOP]
    bytes_moved : Bytes moved [byte]
    peak_flops : Peak throughput of the GEMMs' format [FLOP/s]
    attention_ratio : GEMM peak over the attention peak [1]
    bandwidth : Memory bandwidth [byte/s]
    """
    compute = split_compute_time(gemm_flops, attention_flops, peak_flops, attention_ratio)
    return np.maximum(compute, bytes_moved / bandwidth)


def split_compute_bound(
    gemm_flops: Array,
    attention_flops: Array,
    bytes_moved: Array,
    peak_flops: Array,
    attention_ratio: Array,
    bandwidth: Array,
) -> Array:
    """True where the split compute time reaches the memory time (a tie is compute-bound).

    Parameters as ``split_roofline_time``; returns the compute-bound flag [bool].
    """
    compute = split_compute_time(gemm_flops, attention_flops, peak_flops, attention_ratio)
    return compute >= bytes_moved / bandwidth
