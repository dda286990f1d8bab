"""Pools: how many devices a request rate needs, colocated or with disaggregated pools.

For every model, workload (``I``, ``O``), arrival rate ``lambda`` and dtype (docs/serving.md
sections 4-5), per replica at ``lambda / N``:

- ``colocated``: one pool on one device does both phases, run by one of the sweep's named
  schedulers. For every scheduler and usable batch (it fits at its mean occupancy and meets
  TPOT), the replicas for the TTFT objective at ``[serving] slo_quantile`` (a prompt waits for
  the prefill server, M/D/1 at the scheduler's prefill of one prompt, and for the mean
  residual of the step in flight) and for the slots (utilization at most ``SLOT_LIMIT``, past
  which slots, not prefills, are the queue: ``slot_bound``); the plan is the one with the
  fewest devices, then the lowest cost (``scheduler`` and ``decode_batch`` say which).
- ``disaggregated``: a prefill pool (device, tp) and a decode pool (device, tp), every pair of
  the sweep's devices. Prefill replicas are M/D/1 queues with service ``D = t_p(1, I)`` sized
  for the TTFT objective at the quantile, the KV hand-off counted (each decode device
  receives its own shard over its own link); the decode batch is the largest that fits and
  meets the TPOT objective, the decode replicas as many as the rate needs.

Costs are paid for idle capacity: fleet price over ``lambda O``. Counts are null where the
objectives cannot be met. The plan is a reduction over the batch axis, so this analysis runs
on the grid's xarray Variables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.grid.analyses.base import Analysis, Inputs
from sweeps.grid.analyses.pools_columns import VARIABLES
from sweeps.grid.analyses.served import EXTRA_DIMS
from sweeps.physics._array import where
from sweeps.study import SCHEDULERS

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

SLOT_LIMIT = 0.9
"""Largest slot utilization ``lambda_1 / r`` a colocated plan is sized for [1]: at 0.9 of a
replica's capacity a simulated TTFT is up to 5.7x the M/D/1 figure on the prefill alone (16x
at B = 1; issue 19), the queue being the slots."""

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
"""The percentiles of TTFT and TPOT the pools table reports."""


def _side(value: Any, side: str) -> Any:
    """``value`` with its device dims renamed for one pool (``prefill`` or ``decode``)."""
    import xarray as xr

    if not isinstance(value, xr.Variable):
        return value
    names = {"hardware": f"{side}_hardware", "tp": f"{side}_tp"}
    return xr.Variable([names.get(str(d), str(d)) for d in value.dims], value.data)


def _apply(function: Any, table: Any, *args: Any) -> Any:
    """``function(table, *args)`` of a numpy-only function (the M/D/1 tables' interpolation)
    on xarray Variables: broadcast by name, evaluated on the arrays, named again."""
    import xarray as xr

    variables = [a if isinstance(a, xr.Variable) else xr.Variable((), a) for a in args]
    zero = sum((xr.zeros_like(v, dtype=np.float64) for v in variables), xr.Variable((), 0.0))
    dims = zero.dims
    arrays = [np.asarray((v + zero).transpose(*dims).values) for v in variables]
    return xr.Variable(dims, np.asarray(function(table, *arrays)))


def _mode(x: Inputs, name: str, mode: str) -> Any:
    """The serving table's ``name`` at ``mode``."""
    labels = [str(m) for m in np.asarray(x["mode"].values).reshape(-1)]
    return x[name].isel(mode=labels.index(mode))


def _tables(x: Inputs) -> dict[str, Any]:
    """The M/D/1 quantile tables: the objective's and the reported percentiles'."""
    wanted = {"slo": x.settings.slo_quantile, **QUANTILES}
    return {key: physics.md1_quantile_table(q) for key, q in wanted.items()}


def _scheduler(x: Inputs, mode: str, rate: Any, tables: dict[str, Any]) -> dict[str, Any]:
    """One scheduler's colocated plan at every batch: its replicas, devices and figures."""
    serving, output = x.settings, x["output_tokens"]
    capacity = _mode(x, "output_tokens_per_s_per_device", mode) * x["_devices"] / output
    tpot = _mode(x, "tpot_s", mode)
    admitted = _mode(x, "serving_ttft_s", mode)  # from admission
    residual = _mode(x, "step_time_steady_s", mode) / 2  # the step in flight, on average
    # the prefill server: one prompt's share of the scheduler's prefill capacity
    service = x["_prefill_alone"]
    if mode.startswith("chunked"):
        chunk = _mode(x, "chunk_tokens", mode)
        service = x["prompt_tokens"] * _mode(x, "step_time_steady_s", mode) / chunk
    slack = serving.ttft_slo_s - admitted - residual
    bound = _apply(physics.md1_max_utilization, tables["slo"], slack / service)
    by_ttft = np.ceil(rate * service / bound)
    by_slots = np.ceil(rate / (SLOT_LIMIT * capacity))
    replicas = np.maximum(by_ttft, by_slots)
    tpot_ok = (output == 1) | (tpot <= serving.tpot_slo_s)
    usable = _mode(x, "serving_feasible", mode) & tpot_ok & (bound > 0)
    return {
        "replicas": where(usable, replicas, np.nan),
        "slot_bound": by_slots > by_ttft,
        "service": service,
        "admitted": admitted + residual,
        "tpot": tpot,
        "share": 1 - physics.prefill_time_share(capacity, service),
    }


def _full(values: list[Any], sizes: dict[str, int]) -> np.ndarray:
    """One value per scheduler, each broadcast over ``sizes``: an array ``(scheduler, ...)``."""
    import xarray as xr

    out = []
    for value in values:
        v = value if isinstance(value, xr.Variable) else xr.Variable((), value)
        out.append(np.asarray(v.set_dims(sizes).transpose(*sizes).values, dtype=np.float64))
    return np.stack(out)


def _colocated(x: Inputs, rate: Any, tables: dict[str, Any]) -> dict[str, Any]:
    """The fewest devices, then the lowest cost, over the sweep's schedulers and batches."""
    import xarray as xr

    present = [str(v) for v in np.asarray(x["mode"].values).reshape(-1)]
    modes = [m for m in SCHEDULERS if m in present]
    plans = [_scheduler(x, mode, rate, tables) for mode in modes]
    price = [
        physics.fleet_price_per_hour(p["replicas"], x["_devices"], x["price_per_hour"])
        for p in plans
    ]
    probe = sum((0 * p["replicas"] for p in plans), 0 * price[0] + 0 * x["batch"])
    dims = (*(str(d) for d in probe.dims if d != "batch"), "batch")
    sizes = {d: int(probe.sizes[d]) for d in dims}
    devices = _full([p["replicas"] * x["_devices"] for p in plans], sizes)
    fleet = _full(price, sizes)
    # one key orders every (scheduler, batch): devices first, then cost (unpriced last)
    cost = np.where(np.isfinite(fleet), fleet, 0.0)
    key = np.where(np.isfinite(devices), devices * 1e6 + cost / (1 + cost), np.inf)
    shape = tuple(sizes.values())
    key = np.moveaxis(key, 0, -2).reshape(*shape[:-1], -1)  # (..., scheduler x batch)
    best = np.argmin(key, axis=-1)  # the first of equals: the earlier scheduler, smaller batch
    found = np.isfinite(np.min(key, axis=-1))
    rest = dims[:-1]

    def at(values: list[Any]) -> Any:
        flat = np.moveaxis(_full(values, sizes), 0, -2).reshape(key.shape)
        picked = np.take_along_axis(flat, best[..., None], axis=-1)[..., 0]
        return xr.Variable(rest, np.where(found, picked, np.nan))

    def each(key_: str) -> Any:
        return at([p[key_] for p in plans])

    batch = at([x["batch"]] * len(modes))
    labels = np.array(modes, dtype=object)
    chosen = xr.Variable(rest, np.where(found, labels[best // shape[-1]], None))
    replicas, service, admitted = each("replicas"), each("service"), each("admitted")
    load = rate / replicas * service
    ttft = {
        f"ttft_{name}": admitted + _apply(physics.md1_quantile_wait, tables[name], load, service)
        for name in QUANTILES
    }
    tpot = each("tpot")
    return {
        "prefill": replicas,
        "decode": replicas,
        "devices": replicas * x["_devices"],
        "batch": batch,
        "ttft": admitted + physics.md1_waiting_time(load, service),
        **ttft,
        **{f"tpot_{name}": tpot for name in QUANTILES},
        "tpot": tpot,
        "fleet": physics.fleet_price_per_hour(replicas, x["_devices"], x["price_per_hour"]),
        "power": replicas * x["_devices"] * x["_board_power"],
        "decode_share": each("share"),
        "slot_bound": each("slot_bound") == 1,
        "handoff": 0.0,
        "scheduler": chosen,
    }


def _disaggregated(x: Inputs, rate: Any, tables: dict[str, Any]) -> dict[str, Any]:
    serving, output = x.settings, x["output_tokens"]
    # a prefill replica that cannot hold the weights and one prompt's cache serves nothing
    fits = _side(x["_prefill_fits"], "prefill")
    service = where(fits, _side(x["_prefill_alone"], "prefill"), np.nan)
    # each decode device receives its own shard of the prompt's cache over its own link
    handoff = _side(x["_prompt_cache"], "decode") / serving.kv_link_bandwidth
    slack = physics.ttft_slack(serving.ttft_slo_s, service, handoff)
    bound = _apply(physics.md1_max_utilization, tables["slo"], slack / service)
    prefill = physics.prefill_replicas(rate, service, where(bound > 0, bound, np.nan))
    load = rate * service / prefill
    steady = _mode(x, "step_time_steady_s", "bound")  # t_d(B, I + O/2)
    usable = _mode(x, "serving_feasible", "bound") & (steady <= serving.tpot_slo_s)
    batch, steady = (_side(v, "decode") for v in _largest(x, usable, steady))
    decode = physics.replicas_for_rate(rate, physics.decode_request_rate(batch, output, steady))
    tp_p, tp_d = _side(x["_devices"], "prefill"), _side(x["_devices"], "decode")
    fleet = physics.fleet_price_per_hour(
        prefill, tp_p, _side(x["price_per_hour"], "prefill")
    ) + physics.fleet_price_per_hour(decode, tp_d, _side(x["price_per_hour"], "decode"))
    devices = physics.pool_devices(prefill, tp_p, decode, tp_d)
    power = physics.fleet_price_per_hour(
        prefill, tp_p, _side(x["_board_power"], "prefill")
    ) + physics.fleet_price_per_hour(decode, tp_d, _side(x["_board_power"], "decode"))
    ttft = {
        f"ttft_{name}": service
        + handoff
        + _apply(physics.md1_quantile_wait, tables[name], load, service)
        for name in QUANTILES
    }
    return {
        "prefill": prefill,
        "decode": decode,
        "devices": devices,
        "batch": batch,
        "ttft": service + handoff + physics.md1_waiting_time(load, service),
        **ttft,
        **{f"tpot_{name}": steady for name in QUANTILES},
        "tpot": steady,
        "fleet": fleet,
        "power": power,
        "decode_share": decode * tp_d / devices,
        "slot_bound": False,
        "handoff": handoff,
        "scheduler": "serial-prefill",
    }


def _largest(x: Inputs, usable: Any, value: Any) -> tuple[Any, Any]:
    """The largest batch where ``usable`` holds (NaN where none does), and ``value`` there."""
    batch = x["batch"]
    best = where(usable, batch, 0).max("batch")
    picked = where(batch == best, value, -np.inf).max("batch", skipna=False)
    found = best >= 1
    return where(found, best, np.nan), where(found, picked, np.nan)


def _compute(x: Inputs) -> dict[str, Any]:
    import xarray as xr

    rate, output, mode = x["arrival_rate"], x["output_tokens"], x["pool_mode"]
    tables = _tables(x)
    together = {k: _side(v, "decode") for k, v in _colocated(x, rate, tables).items()}
    plans = {"colocated": together, "disaggregated": _disaggregated(x, rate, tables)}

    def pick(key: str, empty: Any = np.nan) -> Any:
        split = where(mode == "colocated", plans["colocated"][key], empty)
        return where(mode == "disaggregated", plans["disaggregated"][key], split)

    devices = pick("devices")
    same = (x["prefill_hardware"] == x["decode_hardware"]) & (x["prefill_tp"] == x["decode_tp"])
    feasible = np.isfinite(devices) & np.isfinite(pick("ttft"))
    named = together["scheduler"]
    # the table's dims with the speculative and prefix axes the sweep has (extra_dims)
    dims = POOLS.dims_over({*named.dims, *feasible.dims})
    sizes = {d: int(np.asarray(x[d].values).size) for d in dims}
    scheduler = xr.Variable(named.dims, named.values).set_dims(sizes).transpose(*dims)
    split = np.asarray((mode == "disaggregated").set_dims(sizes).transpose(*dims).values)
    ok = np.asarray(feasible.transpose(*dims).values)
    names = np.array(scheduler.values, dtype=object)
    names[split] = "serial-prefill"
    named_ok = np.vectorize(lambda v: isinstance(v, str), otypes=[bool])(names) & ok
    names[~named_ok] = None
    scheduler = xr.Variable(dims, names)
    out = {
        "prefill_replicas": pick("prefill"),
        "decode_replicas": pick("decode"),
        "devices": devices,
        "decode_batch": pick("batch"),
        "pools_scheduler": scheduler,
        "pools_ttft_s": pick("ttft"),
        **{f"pools_ttft_{n}_s": pick(f"ttft_{n}") for n in QUANTILES},
        "pools_tpot_s": pick("tpot"),
        **{f"pools_tpot_{n}_s": pick(f"tpot_{n}") for n in QUANTILES},
        "goodput_tokens_per_s_per_device": physics.goodput_per_device(rate, output, devices),
        "pools_cost_per_million_output_tokens_usd": physics.cost_per_million_tokens(
            pick("fleet"), rate * output
        ),
        # the fleet at board power over the output rate: an estimate
        "pools_energy_per_output_token_j": physics.energy_per_token(
            pick("power"), 1, 1.0, rate * output
        ),
        "decode_time_share": pick("decode_share"),
        "slot_bound": pick("slot_bound", False) == 1,
        "kv_handoff_s": where(mode == "disaggregated", plans["disaggregated"]["handoff"], np.nan),
        "pools_feasible": feasible,
        "prefill_price_as_of": _side(x["hardware_price_as_of"], "prefill"),
        "decode_price_as_of": _side(x["hardware_price_as_of"], "decode"),
        "pools_row": (mode == "disaggregated") | same,
    }
    return out


POOLS = Analysis(
    name="pools",
    dims=DIMS,
    variables=VARIABLES,
    compute=_compute,
    needs=("model", "decode", "serving"),
    columns=tuple(v.name for v in VARIABLES if v.name != "pools_row"),
    study="serving",
    rows="pools_row",
    whole=True,
    extra_dims=EXTRA_DIMS,
)
