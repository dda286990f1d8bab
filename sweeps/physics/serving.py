"""Serving, a static batch (``docs/serving.md`` section 1): per-step bounds summed in closed form.

A decode step for a batch at context ``S`` costs ``F(S) = F_0 + F_full S + F_loc min(S, w)``
FLOPs and ``Q(S) = Q_0 + Q_full S + Q_loc min(S, w)`` bytes (weights and the batch's caches;
local, sliding-window layers stop growing at the window ``w``): ``context_coefficients`` builds
the three numbers of each from the per-step physics. Its bound ``t_d(S) = max(F / peak,
Q / bandwidth)`` is then piecewise affine in ``S``, and the sums over a request's life have exact
closed forms. Nothing loops over steps or requests: every function broadcasts. Continuous
batching is in ``continuous``, pools and cost in ``pools``, the front in ``pareto``.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where
from sweeps.physics.roofline import roofline_time


def context_coefficients(
    batch: Array,
    fixed: Array,
    per_sequence: Array,
    per_layer_token: Array,
    layers: Array,
    local_layers: Array,
) -> tuple[Array, Array, Array]:
    """Coefficients of a step's cost ``fixed + B per_seq + B per_lt (full S + local min(S, w))``.

    For FLOPs: ``fixed = 0``, ``per_sequence = 2 (P_act - lookup)``, ``per_layer_token =
    attention_on * 2 H d_att``. For bytes: ``fixed = W_read(B)`` (``weights_read_with_gather``
    at ``B`` tokens), ``per_sequence = 0``, ``per_layer_token = kv_elements * kb / kv_shards``.
    Per device at ``tp > 1``: divide FLOPs and weights by ``tp`` as the per-step physics does.

    Parameters
    ----------
    batch : Sequences decoded together, ``B`` [sequence]
    fixed : Cost paid once a step whatever the batch [FLOP or byte]
    per_sequence : Cost of one sequence that does not depend on its context [FLOP or byte]
    per_layer_token : Cost of one cached token in one layer, for one sequence [FLOP or byte]
    layers : Transformer layers [1]
    local_layers : Layers with a sliding window [1]

    Returns
    -------
    ``(constant, per full-layer context token, per local-layer context token)`` for the
    whole batch [FLOP or byte, per token for the last two]
    """
    per_token = batch * per_layer_token
    return (
        fixed + batch * per_sequence,
        per_token * (layers - local_layers),
        per_token * local_layers,
    )


def affine_step_time(
    context: Array,
    local_context: Array,
    flops: tuple[Array, Array, Array],
    nbytes: tuple[Array, Array, Array],
    peak_flops: Array,
    bandwidth: Array,
) -> Array:
    """Roofline time of a decode step, ``max(F / peak, Q / bandwidth)``, from its coefficients.

    Parameters
    ----------
    context : Cached tokens a full layer attends over, ``S`` (a mean when slots differ) [token]
    local_context : Cached tokens a local layer attends over, ``min(S, w)`` or its mean [token]
    flops : ``(F_0, F_full, F_loc)`` of ``context_coefficients`` [FLOP, FLOP/token, FLOP/token]
    nbytes : ``(Q_0, Q_full, Q_loc)`` of ``context_coefficients`` [byte, byte/token, byte/token]
    peak_flops : Peak throughput, efficiency applied [FLOP/s]
    bandwidth : Memory bandwidth, efficiency applied [byte/s]

    Returns
    -------
    Step time bound [s]
    """
    work = flops[0] + flops[1] * context + flops[2] * local_context
    traffic = nbytes[0] + nbytes[1] * context + nbytes[2] * local_context
    return roofline_time(work, traffic, peak_flops, bandwidth)


def _count(first: Array, last: Array) -> Array:
    """Integers in ``[first, last]``, 0 for an empty range [1]."""
    return np.maximum(last - first + 1, 0)


def _sum_positive_part(first: Array, last: Array, d0: Array, d1: Array) -> Array:
    """``sum_{S=first}^{last} max(d0 + d1 S, 0)`` over integers ``S``, exactly.

    The positive part of an affine function is one run of consecutive integers, cut at the root
    ``-d0 / d1``; it is clipped into ``[first, last + 1]`` so that empty runs stay finite.

    Parameters
    ----------
    first, last : Integer range, inclusive [token]
    d0, d1 : Affine function of ``S`` [s, s/token]

    Returns
    -------
    Sum of the positive part [s]
    """
    with np.errstate(over="ignore"):  # a near-flat line's root overflows to inf: clipped below
        root = -d0 / where(d1 == 0, 1.0, d1)
    lo = where(d1 > 0, np.floor(root) + 1, first)
    hi = where(d1 < 0, np.ceil(root) - 1, where((d1 == 0) & (d0 <= 0), first - 1, last))
    lo = np.minimum(np.maximum(lo, first), last + 1)
    hi = np.minimum(np.maximum(hi, first - 1), last)
    return _count(lo, hi) * (d0 + d1 * (lo + hi) / 2)


def _sum_max_affine(first: Array, last: Array, c0: Array, c1: Array, m0: Array, m1: Array) -> Array:
    """``sum_{S=first}^{last} max(c0 + c1 S, m0 + m1 S)`` over integers ``S``, exactly.

    ``max(c, m) = m + max(c - m, 0)``: the memory line summed as ``n (m(first) + m(last)) / 2``,
    plus the compute excess over the run of steps where compute is the larger.

    Parameters
    ----------
    first, last : Integer range, inclusive [token]
    c0, c1 : Compute time, affine in ``S`` [s, s/token]
    m0, m1 : Memory time, affine in ``S`` [s, s/token]

    Returns
    -------
    Sum of the step times [s]
    """
    memory = _count(first, last) * (m0 + m1 * (first + last) / 2)
    return memory + _sum_positive_part(first, last, c0 - m0, c1 - m1)


def static_decode_time(
    prompt: Array,
    output: Array,
    flops: tuple[Array, Array, Array],
    nbytes: tuple[Array, Array, Array],
    window: Array,
    peak_flops: Array,
    bandwidth: Array,
) -> Array:
    """Decode time of a static batch, ``sum_{j=1}^{O-1} t_d(I + j)``, in closed form.

    ``[I + 1, I + O - 1]`` is split at the window (below it local layers grow with ``S``, above
    they hold ``w``); on each side both roofs are affine and the sum is taken exactly, the
    compute/memory crossing included. ``O = 1`` has no decode step: 0.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` (an integer) [token]
    output : Output tokens, ``O >= 1`` (an integer) [token]
    flops : ``(F_0, F_full, F_loc)`` of ``context_coefficients`` [FLOP, FLOP/token, FLOP/token]
    nbytes : ``(Q_0, Q_full, Q_loc)`` of ``context_coefficients`` [byte, byte/token, byte/token]
    window : Sliding window of the local layers, an integer; ``inf`` for none [token]
    peak_flops : Peak throughput, efficiency applied [FLOP/s]
    bandwidth : Memory bandwidth, efficiency applied [byte/s]

    Returns
    -------
    Sum of the decode step bounds [s]
    """
    first, last = prompt + 1, prompt + output - 1
    cap = np.minimum(window, last)  # beyond the last step a window changes nothing; keeps inf out
    (f0, f_full, f_loc), (q0, q_full, q_loc) = flops, nbytes
    growing = _sum_max_affine(
        first,
        cap,
        f0 / peak_flops,
        (f_full + f_loc) / peak_flops,
        q0 / bandwidth,
        (q_full + q_loc) / bandwidth,
    )
    capped = _sum_max_affine(
        np.maximum(first, cap + 1),
        last,
        (f0 + f_loc * cap) / peak_flops,
        f_full / peak_flops,
        (q0 + q_loc * cap) / bandwidth,
        q_full / bandwidth,
    )
    return growing + capped


def request_latency(ttft: Array, decode_time: Array) -> Array:
    """Latency of a request, ``ttft + decode_time``.

    Parameters
    ----------
    ttft : Time to first token, ``t_p(B, I)`` for a static batch [s]
    decode_time : Time of the ``O - 1`` decode steps [s]

    Returns
    -------
    Request latency bound [s]
    """
    return ttft + decode_time


def time_per_output_token(decode_time: Array, output: Array) -> Array:
    """Mean time between output tokens, ``decode_time / (O - 1)``; NaN (null) at ``O = 1``.

    Parameters
    ----------
    decode_time : Time of the ``O - 1`` decode steps [s]
    output : Output tokens, ``O >= 1`` [token]

    Returns
    -------
    TPOT [s]
    """
    steps = output - 1
    return where(steps > 0, decode_time / where(steps > 0, steps, 1), np.nan)
