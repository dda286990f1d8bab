"""Disaggregated pools and cost (``docs/serving.md`` sections 4 and 5), in closed form.

Requests arrive as a Poisson stream at ``lambda``. A prefill replica serves one prompt at a time
in a deterministic time ``D``: an M/D/1 queue, whose mean wait bounds the utilization a TTFT
objective allows. Decode replicas are sized by their steady request rate. Costs divide what the
devices cost an hour by the tokens they produce; an unknown price (NaN or None) gives NaN, never
zero. Every function broadcasts.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, nan_for_none, where

SECONDS_PER_HOUR = 3600.0
"""Seconds in the hour a device price is quoted for [s]."""

TOKENS_PER_MILLION = 1e6
"""Tokens a cost is quoted for [token]."""


def kv_handoff_time(prompt: Array, kv_bytes_per_token: Array, link_bandwidth: Array) -> Array:
    """Time to move a prompt's cache from the prefill to the decode pool, ``I kv_tok / link``.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    kv_bytes_per_token : KV-cache bytes of one token, all layers, whole model [byte]
    link_bandwidth : Bandwidth of the link between the pools [byte/s]

    Returns
    -------
    Hand-off time, ``t_kv`` [s]
    """
    return prompt * kv_bytes_per_token / link_bandwidth


def md1_waiting_time(utilization: Array, service_time: Array) -> Array:
    """Mean wait in an M/D/1 queue, ``rho D / (2 (1 - rho))``; inf at ``rho >= 1``.

    The Pollaczek-Khinchine formula with a deterministic service time.

    Parameters
    ----------
    utilization : Arrival rate times service time, ``rho`` [1]
    service_time : Deterministic service time, ``D`` [s]

    Returns
    -------
    Mean time in the queue before service, ``W_q`` [s]
    """
    stable = utilization < 1
    slack = where(stable, 1 - utilization, 1.0)
    return where(stable, utilization * service_time / (2 * slack), np.inf)


def ttft_slack(ttft_slo: Array, service_time: Array, handoff_time: Array) -> Array:
    """Time a request may wait in the prefill queue and still meet its TTFT objective.

    Parameters
    ----------
    ttft_slo : TTFT objective [s]
    service_time : Prefill time of one prompt, ``D`` [s]
    handoff_time : KV hand-off time, ``t_kv`` (0 for colocated) [s]

    Returns
    -------
    Slack ``x = ttft_slo - D - t_kv``; the pool cannot meet the objective where ``x <= 0`` [s]
    """
    return ttft_slo - service_time - handoff_time


def max_utilization(slack: Array, service_time: Array) -> Array:
    """Largest utilization whose M/D/1 wait fits the slack, ``2x / (2x + D)``; NaN where ``x <= 0``.

    It solves ``rho D / (2 (1 - rho)) = x``.

    Parameters
    ----------
    slack : Waiting time the objective allows, ``x`` [s]
    service_time : Deterministic service time, ``D`` [s]

    Returns
    -------
    Utilization bound, ``rho_max`` (NaN: infeasible) [1]
    """
    feasible = slack > 0
    room = where(feasible, slack, 0.0)
    return where(feasible, 2 * room / (2 * room + service_time), np.nan)


def replicas_for_rate(arrival_rate: Array, capacity: Array) -> Array:
    """Fewest replicas that carry an arrival rate, ``ceil(lambda / mu)``; NaN where ``mu`` is NaN.

    Parameters
    ----------
    arrival_rate : Requests arriving, ``lambda`` [request/s]
    capacity : Requests one replica may take, ``mu`` [request/s]

    Returns
    -------
    Replicas [replica]
    """
    return np.ceil(arrival_rate / capacity)


def prefill_replicas(arrival_rate: Array, service_time: Array, utilization_bound: Array) -> Array:
    """Prefill replicas that meet the TTFT objective, ``ceil(lambda D / rho_max)``; NaN if none can.

    Parameters
    ----------
    arrival_rate : Requests arriving, ``lambda`` [request/s]
    service_time : Prefill time of one prompt, ``D`` [s]
    utilization_bound : ``rho_max`` of ``max_utilization`` [1]

    Returns
    -------
    Prefill replicas, ``N_p`` [replica]
    """
    return replicas_for_rate(arrival_rate, utilization_bound / service_time)


def decode_request_rate(batch: Array, output: Array, step_time_steady: Array) -> Array:
    """Requests per second a decode replica finishes, ``B / ((O - 1) t_steady)``; inf at ``O = 1``.

    Parameters
    ----------
    batch : Decode batch, ``B_d`` [sequence]
    output : Output tokens of a request, ``O >= 1`` [token]
    step_time_steady : Decode step at the mean context [s]

    Returns
    -------
    Decode rate, ``mu_d`` [request/s]
    """
    steps = output - 1
    return where(steps > 0, batch / (where(steps > 0, steps, 1) * step_time_steady), np.inf)


def pool_devices(
    prefill_count: Array, prefill_tp: Array, decode_count: Array, decode_tp: Array
) -> Array:
    """Devices of both pools, ``N_p tp_p + N_d tp_d``.

    Parameters
    ----------
    prefill_count : Prefill replicas, ``N_p`` (a colocated plan's replicas, with 0 decode) [replica]
    prefill_tp : Devices of one prefill replica [device]
    decode_count : Decode replicas, ``N_d`` [replica]
    decode_tp : Devices of one decode replica [device]

    Returns
    -------
    Devices [device]
    """
    return prefill_count * prefill_tp + decode_count * decode_tp


def goodput_per_device(arrival_rate: Array, output: Array, devices: Array) -> Array:
    """Output tokens/s per device of a fleet that meets its objectives, ``lambda O / devices``.

    Parameters
    ----------
    arrival_rate : Requests arriving, ``lambda`` [request/s]
    output : Output tokens of a request [token]
    devices : Devices of the fleet [device]

    Returns
    -------
    Goodput per device [token/s]
    """
    return arrival_rate * output / devices


def colocated_queued_ttft(
    prefill_time: Array, step_time_steady: Array, arrival_rate: Array, replicas: Array
) -> Array:
    """TTFT of a colocated fleet under load, ``t_p(1, I) + t_steady + W_q``.

    A new prompt waits for the step in flight, then for the prompts ahead of it: M/D/1 with
    ``D = t_p(1, I)`` at ``rho = (lambda / N) t_p(1, I)``.

    Parameters
    ----------
    prefill_time : Prefill of one prompt, ``t_p(1, I)`` [s]
    step_time_steady : Decode step at the mean context [s]
    arrival_rate : Requests arriving at the fleet, ``lambda`` [request/s]
    replicas : Colocated replicas, ``N`` [replica]

    Returns
    -------
    TTFT with queueing [s]
    """
    utilization = arrival_rate / replicas * prefill_time
    return prefill_time + step_time_steady + md1_waiting_time(utilization, prefill_time)


# --- cost (section 5) -----------------------------------------------------------------------


def fleet_price_per_hour(replicas: Array, tp: Array, price_per_hour: Array) -> Array:
    """What ``N`` replicas of ``tp`` devices cost an hour; NaN where the price is unknown.

    Parameters
    ----------
    replicas : Replicas [replica]
    tp : Devices of one replica [device]
    price_per_hour : Price of one device-hour, NaN or None when unknown [USD/(device h)]

    Returns
    -------
    Fleet price [USD/h]
    """
    return replicas * tp * nan_for_none(price_per_hour)


def cost_per_million_tokens(price_per_hour: Array, tokens_per_s: Array) -> Array:
    """Cost of a million tokens, ``1e6 price / (3600 tokens_per_s)``; NaN for an unknown price.

    Saturated: a device's price and its output tokens/s. At a load: the fleet's price and
    ``lambda O``, so idle capacity is paid for.

    Parameters
    ----------
    price_per_hour : Price of what produces the tokens, NaN or None when unknown [USD/h]
    tokens_per_s : Tokens it produces [token/s]

    Returns
    -------
    Cost per million tokens [USD]
    """
    price = nan_for_none(price_per_hour)
    return TOKENS_PER_MILLION * price / (SECONDS_PER_HOUR * tokens_per_s)


def gated_cycle(arrival_rate: Array, first: Array, slope: Array) -> Array:
    """Cycle of a prefill server that prefills every waiting prompt together, ``T``.

    Each batch holds the prompts that arrived during the one before (a gated server, in the
    fluid limit): ``T = t_p(max(1, lambda T))`` with the prefill of ``k`` prompts on the chord
    ``t_p(k) = t_1 + (k - 1) s`` (a roofline is convex in ``k``: the chord lies above it), so
    ``T = t_1`` where ``lambda t_1 <= 1`` and ``(t_1 - s) / (1 - lambda s)`` beyond; inf where
    ``lambda s >= 1`` (the server cannot keep up).

    Parameters
    ----------
    arrival_rate : Prompts arriving at the server, ``lambda`` [request/s]
    first : Prefill of one prompt, ``t_1 = t_p(1, I)`` [s]
    slope : Time each further prompt of a batch adds, ``s`` [s]

    Returns
    -------
    Cycle, ``T`` [s]
    """
    stable = arrival_rate * slope < 1
    room = where(stable, 1 - arrival_rate * slope, 1.0)
    grown = where(stable, (first - slope) / room, np.inf)
    return where(arrival_rate * first <= 1, first, grown)
