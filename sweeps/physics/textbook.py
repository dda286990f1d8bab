"""The two textbook functions of the seed note, with its exact keys, rounding and tie rule.

They answer for one point and return plain dicts, as the note defines them; the sweep itself
uses the array functions these are built from.
"""

from __future__ import annotations

from sweeps.physics.roofline import (
    arithmetic_intensity,
    attainable_flops,
    is_compute_bound,
    ridge_point,
    utilization,
)

BOTTLENECK_LABELS = ("memory-bound", "compute-bound")
"""Bottleneck names, indexed by the compute-bound flag (0 or 1)."""

DIGITS = 4
"""Decimals the note rounds every reported figure to."""


def compute_arithmetic_intensity(
    flops: float, bytes_accessed: float, peak_performance: float, peak_bandwidth: float
) -> dict[str, float | str]:
    """Roofline of one kernel, as in the note.

    Parameters
    ----------
    flops : Work done [FLOP]
    bytes_accessed : Traffic to and from DRAM/HBM [byte]
    peak_performance : Peak dense throughput [FLOP/s]
    peak_bandwidth : Peak DRAM/HBM bandwidth [byte/s]

    Returns
    -------
    ``arithmetic_intensity`` [FLOP/byte], ``ridge_point`` [FLOP/byte], ``bottleneck``
    (``memory-bound`` or ``compute-bound``; a tie is compute-bound), ``achieved_performance``
    [FLOP/s], ``utilization_percent`` [%], all rounded to 4 decimals.
    """
    ai = arithmetic_intensity(flops, bytes_accessed)
    ridge = ridge_point(peak_performance, peak_bandwidth)
    achieved = attainable_flops(ai, peak_performance, peak_bandwidth)
    return {
        "arithmetic_intensity": round(float(ai), DIGITS),
        "ridge_point": round(float(ridge), DIGITS),
        "bottleneck": BOTTLENECK_LABELS[int(is_compute_bound(ai, ridge))],
        "achieved_performance": round(float(achieved), DIGITS),
        "utilization_percent": round(float(utilization(achieved, peak_performance)) * 100, DIGITS),
    }


def _phase(
    total_flops: float, memory_bytes: float, peak_flops: float, peak_bandwidth: float
) -> dict[str, float | str]:
    point = compute_arithmetic_intensity(total_flops, memory_bytes, peak_flops, peak_bandwidth)
    return {
        "total_flops": round(float(total_flops), DIGITS),
        "memory_bytes": round(float(memory_bytes), DIGITS),
        "arithmetic_intensity": point["arithmetic_intensity"],
        "bottleneck": point["bottleneck"],
        "achieved_flops": point["achieved_performance"],
        "utilization_percent": point["utilization_percent"],
    }


def classify_llm_phases(
    num_params: float,
    sequence_length: int,
    batch_size: int,
    bytes_per_param: float,
    peak_flops: float,
    peak_bandwidth: float,
) -> dict[str, float | dict[str, float | str]]:
    """Prefill and decode of a dense model in the note's naive form (no KV cache).

    FLOPs are ``2 * num_params * tokens`` (``sequence_length`` tokens for prefill,
    ``batch_size`` for decode); bytes are ``num_params * bytes_per_param`` for both.

    Parameters
    ----------
    num_params : Parameters [1]
    sequence_length : Prompt tokens of the prefill [token]
    batch_size : Sequences in the decode step [sequence]
    bytes_per_param : Bytes per weight [byte]
    peak_flops : Peak dense throughput [FLOP/s]
    peak_bandwidth : Peak DRAM/HBM bandwidth [byte/s]

    Returns
    -------
    ``ridge_point`` [FLOP/byte] and the ``prefill`` and ``decode`` dicts with ``total_flops``
    [FLOP], ``memory_bytes`` [byte], ``arithmetic_intensity`` [FLOP/byte], ``bottleneck``,
    ``achieved_flops`` [FLOP/s], ``utilization_percent`` [%].
    """
    weights = num_params * bytes_per_param
    return {
        "ridge_point": round(float(ridge_point(peak_flops, peak_bandwidth)), DIGITS),
        "prefill": _phase(2 * num_params * sequence_length, weights, peak_flops, peak_bandwidth),
        "decode": _phase(2 * num_params * batch_size, weights, peak_flops, peak_bandwidth),
    }
