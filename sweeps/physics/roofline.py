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
