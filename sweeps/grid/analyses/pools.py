"""Pools: how many devices a request rate needs, colocated or with disaggregated pools.

For every model, workload (``I``, ``O``), arrival rate ``lambda`` and dtype (docs/serving.md
section 4):

- ``disaggregated``: a prefill pool (device, tp) and a decode pool (device, tp), every pair of
  the sweep's devices. Prefill replicas are M/D/1 queues with service ``D = t_p(1, I)``, as
  many as the TTFT objective allows (the KV hand-off over the link counted); the decode batch is
  the largest of the batch axis that fits and meets the TPOT objective, and the decode replicas
  as many as the rate needs.
- ``colocated``: one pool on one device does both; the largest batch whose TPOT (stalls by
  other prompts included) meets the objective and whose step in flight leaves the prompt time
  to meet TTFT, replicas for the rate and for the TTFT objective (a new prompt waits for the
  step in flight and the prompts queued ahead of it).

Costs are paid for idle capacity: fleet price over ``lambda O``. Counts are null where the
objectives cannot be met. The best batch is a reduction over the batch axis, so this analysis
runs on the grid's xarray Variables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.grid.analyses.base import Analysis, Inputs, Variable
from sweeps.grid.analyses.served import EXTRA_DIMS
from sweeps.physics._array import where

DIMS = (
    "model",
    "kv_heads",
    "kv_dtype",
    "weight_dtype",
    "prompt_tokens",
    "output_tokens",
    "arrival_rate",
    "prefill_hardware",
    "prefill_tp",
    "decode_hardware",
    "decode_tp",
    "pool_mode",
)

PLAN_DIMS = ("prefill_hardware", "prefill_tp", "decode_hardware", "decode_tp", "pool_mode")
"""The dims that make a plan of a workload at a rate: its devices, their tp and its mode."""


def _side(value: Any, side: str) -> Any:
    """``value`` with its device dims renamed for one pool (``prefill`` or ``decode``)."""
    import xarray as xr

    if not isinstance(value, xr.Variable):
        return value
    names = {"hardware": f"{side}_hardware", "tp": f"{side}_tp"}
    return xr.Variable([names.get(str(d), str(d)) for d in value.dims], value.data)


def _best(x: Inputs, usable: Any, *values: Any) -> tuple[Any, ...]:
    """The largest batch where ``usable`` holds (NaN where none does), and ``values`` there."""
    batch = x["batch"]
    best = where(usable, batch, 0).max("batch")
    at = batch == best
    # skipna off: a value that is null at the best batch (no TPOT at O = 1) stays null
    picked = tuple(where(at, v, -np.inf).max("batch", skipna=False) for v in values)
    found = best >= 1
    return (where(found, best, np.nan), *(where(found, v, np.nan) for v in picked))


def _disaggregated(x: Inputs, rate: Any) -> dict[str, Any]:
    serving, output = x.settings, x["output_tokens"]
    # a prefill replica that cannot hold the weights and one prompt's cache serves nothing
    fits = _side(x["_prefill_fits"], "prefill")
    service = where(fits, _side(x["_prefill_alone"], "prefill"), np.nan)
    # each prefill device sends its share of the prompt's cache (windows applied) over its
    # own link: the prompt's per-token bytes times I where no layer has a window
    handoff = _side(x["_prompt_cache"], "prefill") / serving.kv_link_bandwidth
    bound = physics.max_utilization(
        physics.ttft_slack(serving.ttft_slo_s, service, handoff), service
    )
    prefill = physics.prefill_replicas(rate, service, bound)
    waiting = physics.md1_waiting_time(rate * service / prefill, service)
    usable = (x["batch"] <= x["_wall"]) & (x["_colocated_steady"] <= serving.tpot_slo_s)
    batch, steady = (_side(v, "decode") for v in _best(x, usable, x["_colocated_steady"]))
    decode = physics.replicas_for_rate(rate, physics.decode_request_rate(batch, output, steady))
    tp_p, tp_d = _side(x["tp"], "prefill"), _side(x["tp"], "decode")
    fleet = physics.fleet_price_per_hour(
        prefill, tp_p, _side(x["price_per_hour"], "prefill")
    ) + physics.fleet_price_per_hour(decode, tp_d, _side(x["price_per_hour"], "decode"))
    devices = physics.pool_devices(prefill, tp_p, decode, tp_d)
    power = physics.fleet_price_per_hour(
        prefill, tp_p, _side(x["_board_power"], "prefill")
    ) + physics.fleet_price_per_hour(decode, tp_d, _side(x["_board_power"], "decode"))
    return {
        "power": power,
        "prefill": prefill,
        "decode": decode,
        "devices": devices,
        "batch": batch,
        "ttft": service + handoff + waiting,
        "tpot": steady,
        "fleet": fleet,
        "decode_share": decode * tp_d / devices,
    }


def _colocated(x: Inputs, rate: Any) -> dict[str, Any]:
    serving = x.settings
    alone = x["_prefill_alone"]
    tpot_ok = (x["output_tokens"] == 1) | (x["_colocated_tpot"] <= serving.tpot_slo_s)
    # a batch whose step in flight leaves no time for the prompt cannot meet TTFT at any
    # replica count: the largest batch that fits, meets TPOT and leaves TTFT some slack
    slack = physics.ttft_slack(serving.ttft_slo_s, alone, x["_in_flight"])
    usable = (x["batch"] <= x["_wall"]) & tpot_ok & (slack > 0)
    batch, capacity, tpot, steady = _best(
        x, usable, x["_colocated_rate"], x["_colocated_tpot"], x["_in_flight"]
    )
    # replicas for the rate, and for the TTFT objective: prompts queue as M/D/1 per replica
    bound = physics.max_utilization(physics.ttft_slack(serving.ttft_slo_s, alone, steady), alone)
    replicas = np.maximum(
        physics.replicas_for_rate(rate, capacity), physics.prefill_replicas(rate, alone, bound)
    )
    tp = x["tp"]
    values = {
        "prefill": replicas,
        "decode": replicas,
        "devices": replicas * tp,
        "batch": batch,
        "ttft": physics.colocated_queued_ttft(alone, steady, rate, replicas),
        "tpot": tpot,
        "fleet": physics.fleet_price_per_hour(replicas, tp, x["price_per_hour"]),
        "power": replicas * tp * x["_board_power"],
        # what a replica's work is, decode over decode plus prefill: 1 - r t_p(1, I)
        "decode_share": 1 - physics.prefill_time_share(capacity, alone),
    }
    return {name: _side(value, "decode") for name, value in values.items()}


def _compute(x: Inputs) -> dict[str, Any]:
    rate, output, mode = x["arrival_rate"], x["output_tokens"], x["pool_mode"]
    plans = {"colocated": _colocated(x, rate), "disaggregated": _disaggregated(x, rate)}

    def pick(key: str) -> Any:
        split = where(mode == "colocated", plans["colocated"][key], np.nan)
        return where(mode == "disaggregated", plans["disaggregated"][key], split)

    devices = pick("devices")
    same = (x["prefill_hardware"] == x["decode_hardware"]) & (x["prefill_tp"] == x["decode_tp"])
    feasible = np.isfinite(devices) & np.isfinite(pick("ttft"))
    return {
        "prefill_replicas": pick("prefill"),
        "decode_replicas": pick("decode"),
        "devices": devices,
        "decode_batch": pick("batch"),
        "pools_ttft_s": pick("ttft"),
        "pools_tpot_s": pick("tpot"),
        "goodput_tokens_per_s_per_device": physics.goodput_per_device(rate, output, devices),
        "pools_cost_per_million_output_tokens_usd": physics.cost_per_million_tokens(
            pick("fleet"), rate * output
        ),
        "decode_time_share": pick("decode_share"),
        # the fleet at board power over the output rate: an estimate
        "pools_energy_per_output_token_j": physics.energy_per_token(
            pick("power"), 1, 1.0, rate * output
        ),
        "pools_feasible": feasible,
        "prefill_price_as_of": _side(x["hardware_price_as_of"], "prefill"),
        "decode_price_as_of": _side(x["hardware_price_as_of"], "decode"),
        "pools_row": (mode == "disaggregated") | same,
    }


_V = Variable

POOLS = Analysis(
    name="pools",
    dims=DIMS,
    variables=(
        _V(
            "prefill_replicas",
            "replica",
            "Prefill replicas (colocated: the replicas)",
            "nullable",
            rank="full",
        ),
        _V(
            "decode_replicas",
            "replica",
            "Decode replicas (colocated: the replicas)",
            "nullable",
            rank="full",
        ),
        _V("devices", "device", "Devices of the plan, replicas times tp", "nullable", rank="full"),
        _V(
            "decode_batch",
            "sequence",
            "Largest batch that fits and meets the TPOT objective",
            "nullable",
            rank="full",
        ),
        _V(
            "pools_ttft_s",
            "s",
            "Time to first token with M/D/1 queueing at this rate",
            column="ttft_s",
            rank="full",
        ),
        _V(
            "pools_tpot_s",
            "s",
            "Time per output token of the plan's decode batch",
            column="tpot_s",
            rank="full",
        ),
        _V(
            "goodput_tokens_per_s_per_device",
            "token/s",
            "Output tokens per second over every device of the plan, at this rate",
            rank="full",
        ),
        _V(
            "pools_cost_per_million_output_tokens_usd",
            "USD",
            "Fleet cost of a million output "
            "tokens at this rate, idle capacity paid for (null: no price)",
            column="cost_per_million_output_tokens_usd",
            rank="full",
        ),
        _V(
            "decode_time_share",
            "1",
            "Share of device time in decode: disaggregated, the decode pool's share of the "
            "devices; colocated, decode's share of a replica's work, 1 - r t_p(1, I)",
            rank="full",
        ),
        _V(
            "pools_feasible",
            "-",
            "The objectives can be met (a batch fits and meets TPOT, the prefill device "
            "holds the weights and leaves room for TTFT)",
            "bool",
            column="feasible",
            rank="full",
        ),
        _V(
            "pools_energy_per_output_token_j",
            "J/token",
            "Estimate: the whole fleet at board power per output token at the arrival rate "
            "(null: a power unknown)",
            "nullable",
            column="energy_per_output_token_j",
            rank="full",
        ),
        _V("prefill_price_as_of", "-", "Date of the prefill device's price", "str"),
        _V("decode_price_as_of", "-", "Date of the decode device's price", "str"),
        _V(
            "pools_row",
            "-",
            "A plan: disaggregated, or colocated on one device and tp",
            "bool",
            rank="full",
        ),
    ),
    compute=_compute,
    needs=("model", "decode", "serving"),
    columns=(
        "prefill_replicas",
        "decode_replicas",
        "devices",
        "decode_batch",
        "pools_ttft_s",
        "pools_tpot_s",
        "goodput_tokens_per_s_per_device",
        "pools_cost_per_million_output_tokens_usd",
        "pools_energy_per_output_token_j",
        "decode_time_share",
        "pools_feasible",
        "prefill_price_as_of",
        "decode_price_as_of",
    ),
    study="serving",
    rows="pools_row",
    whole=True,
    extra_dims=EXTRA_DIMS,
)
