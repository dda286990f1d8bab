"""Pools: how many devices a load needs, colocated per named scheduler or disaggregated.

For every model, workload (``I``, ``O``), load and dtype (docs/serving.md sections 4-5); the
load is Poisson arrivals at ``arrival_rate`` or a closed loop of ``concurrency`` clients
(``Load``: Little's law's fixed point gives its rate, ``requests_per_s``):

- one row per named scheduler of the sweep (``pool_mode`` its name): one pool on one device
  and tp does both phases, run by that scheduler, at the batch with the fewest devices, then
  the lowest cost (``colocated``);
- ``disaggregated``: a prefill pool (device, tp) and a decode pool (device, tp), every pair of
  the sweep's devices. Prefill replicas are M/D/1 queues with service ``D = t_p(1, I)`` sized
  for the TTFT objective at ``[serving] slo_quantile``, or a batched prefill pool where it
  needs fewer (``batched_pool``; ``scheduler`` says which), the KV hand-off counted (each
  decode device receives its own shard over its own link); the decode batch is the largest
  that fits and meets the TPOT objective, the decode replicas as many as the rate needs.

Costs are paid for idle capacity: fleet price over ``lambda O``. Counts are null where the
objectives cannot be met. The plan is a reduction over the batch axis, so this analysis runs
on the grid's xarray Variables.

The colocated plans and the load they carry. A colocated plan is one pool on one device and tp
running one named scheduler (docs/serving.md section 5). For every usable batch (it fits at its
mean occupancy and meets TPOT) the replicas are the fewest that meet the TTFT objective at
``[serving] slo_quantile`` (a prompt waits for the prefill server, M/D/1 at the scheduler's
prefill of one prompt, and for the mean residual of the step in flight) and keep the slots at
most ``SLOT_LIMIT`` busy (a closed loop: at most one client a slot, so that none waits for one);
the plan is the batch with the fewest devices, then the lowest cost (an argmin over the batch
dim, the smaller batch on a tie).

The load (``Load``) is Poisson arrivals at a rate or a closed loop of ``C`` clients. A closed
loop is sized for the highest rate its clients can send, ``C / E2E`` with no wait (more
replicas only lower the rate: the objectives then hold at the rate reached), and the rate it
reaches is the fixed point of Little's law, ``lambda = C / (TTFT(lambda) + (O - 1) TPOT)``
(``sweeps.physics.closed_loop``). A client sends its next request at the end of the step that
finished its last, so no step is in flight when it arrives: no residual. Its arrivals are
smoother than Poisson, so the M/D/1 waits are upper estimates (the rate a lower one).

The disaggregated plan's batched prefill pool. A prefill replica that prefills the waiting
prompts together serves ``m / t_p(m, I)`` prompts a second at ``m`` waiting. Over the grid's
batches ``m`` (those whose prompts fit beside the weights, and whose batch leaves room for the
TTFT objective: a prompt waits for the batch in flight, then for its own, ``(1 + q) t_p(m, I)``
at the quantile ``q``), the best service rate sizes the pool, at most ``SLOT_LIMIT`` of it busy
(Poisson bursts lengthen a batch). The cycle at the rate each replica then sees is
``sweeps.physics.gated_cycle``: TTFT is ``1.5 T`` on average and ``(1 + q) T`` at the quantile
``q`` (a prompt arrives uniformly in a cycle), plus the hand-off. A fluid reading: it ignores
the spread of the batch sizes, which the headroom covers. Open-loop load only (a closed loop
keeps the single-prompt M/D/1 pool)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.physics._array import where
from sweeps.schedulers import SCHEDULERS
from sweeps.studies.serving import served
from sweeps.studies.serving.closed_forms import QUANTILES, prefill_time
from sweeps.studies.serving.served import EXTRA_DIMS

Side = Callable[[Any, str], Any]
"""A device's value on one pool's dims (``prefill`` or ``decode``)."""

SLOT_LIMIT = 0.9
"""Largest slot utilization ``lambda_1 / r`` a colocated plan is sized for [1]: at 0.9 of a
replica's capacity a simulated TTFT is up to 5.7x the M/D/1 figure on the prefill alone (16x
at B = 1; issue 19), the queue being the slots."""


@dataclass(frozen=True)
class Load:
    """What a pools table is sized for: Poisson arrivals at ``value`` [request/s], or
    (``closed``) a closed loop of ``value`` clients [request]."""

    value: Any
    closed: bool

    @classmethod
    def of(cls, x: Inputs) -> Load:
        """The grid's load: its ``concurrency`` dim where it has one, else ``arrival_rate``."""
        if "concurrency" in x.values:
            return cls(x["concurrency"], True)
        return cls(x["arrival_rate"], False)

    def peak(self, fixed: Any) -> Any:
        """The rate to size for: the arrival rate, or ``C / fixed`` (no wait) [request/s]."""
        return self.value / fixed if self.closed else self.value

    def by_slots(self, rate: Any, capacity: Any, batch: Any) -> Any:
        """Replicas the slots need: the rate at most ``SLOT_LIMIT`` of their capacity, or
        a closed loop's clients at most one a slot (``ceil(C / B)``: none waits for one)."""
        if self.closed:
            return np.ceil(self.value / batch) + 0 * rate
        return np.ceil(rate / (SLOT_LIMIT * capacity))

    def rate(self, fixed: Any, service: Any, servers: Any, cap: Any) -> Any:
        """The rate the plan carries: the arrival rate, or the closed loop's fixed point."""
        if not self.closed:
            return self.value
        return physics.closed_loop_rate(self.value, fixed, service, servers, cap)

    def mean_ttft(self, ttft: Any, rate: Any, decode: Any) -> Any:
        """The mean TTFT: ``ttft``, or a closed loop's by Little's law (``C / lambda -
        decode``: equal to ``ttft`` where the slots' capacity does not bind) [s]."""
        if not self.closed:
            return ttft
        return np.maximum(physics.closed_loop_ttft(self.value, rate, decode), ttft)


def mode_value(x: Inputs, name: str, mode: str) -> Any:
    """The serving table's ``name`` at ``mode``."""
    labels = [str(m) for m in np.asarray(x["mode"].values).reshape(-1)]
    return x[name].isel(mode=labels.index(mode))


def apply(function: Any, table: Any, *args: Any) -> Any:
    """``function(table, *args)`` of a numpy-only function (the M/D/1 tables' interpolation)
    on xarray Variables: broadcast by name, evaluated on the arrays, named again."""
    import xarray as xr

    variables = [a if isinstance(a, xr.Variable) else xr.Variable((), a) for a in args]
    zero = sum((xr.zeros_like(v, dtype=np.float64) for v in variables), xr.Variable((), 0.0))
    dims = zero.dims
    arrays = [np.asarray((v + zero).transpose(*dims).values) for v in variables]
    return xr.Variable(dims, np.asarray(function(table, *arrays)))


def decode_time(output: Any, tpot: Any) -> Any:
    """A request's ``O - 1`` decode tokens, ``(O - 1) TPOT`` (0 at ``O = 1``) [s]."""
    return where(output > 1, (output - 1) * tpot, 0.0)


def _at_batch(x: Inputs, mode: str, load: Load, tables: dict[str, Any]) -> dict[str, Any]:
    """One scheduler's colocated plan at every batch: its replicas and figures."""
    serving, output = x.settings, x["output_tokens"]
    capacity = mode_value(x, "output_tokens_per_s_per_device", mode) * x["_devices"] / output
    tpot = mode_value(x, "tpot_s", mode)
    step = mode_value(x, "step_time_steady_s", mode)
    admitted = mode_value(x, "serving_ttft_s", mode)  # from admission
    # the step in flight, on average (none in a closed loop: a client sends at a step end)
    ahead = admitted + (0.0 if load.closed else step / 2)
    # the prefill server: one prompt's share of the scheduler's prefill capacity (a chunked
    # one's chunks carry the tokens computed, (1 - h) I with a prefix hit, not the prompt's I)
    service = x["_prefill_alone"]
    if mode.startswith("chunked"):
        computed = served.computed_tokens(x, x["prompt_tokens"])
        service = computed * step / mode_value(x, "chunk_tokens", mode)
    bound = apply(
        physics.md1_max_utilization, tables["slo"], (serving.ttft_slo_s - ahead) / service
    )
    decode = decode_time(output, tpot)
    rate = load.peak(ahead + decode)
    by_ttft = np.ceil(rate * service / bound)
    by_slots = load.by_slots(rate, capacity, x["batch"])
    replicas = np.maximum(by_ttft, by_slots)
    tpot_ok = (output == 1) | (tpot <= serving.tpot_slo_s)
    usable = mode_value(x, "serving_feasible", mode) & tpot_ok & (bound > 0)
    return {
        "replicas": where(usable, replicas, np.nan),
        "slot_bound": by_slots > by_ttft,
        "service": service,
        "ahead": ahead,
        "decode": decode,
        "capacity": capacity,
        "tpot": tpot,
        **{f"tpot_{n}": mode_value(x, f"_tpot_{n}", mode) for n in QUANTILES},
        "share": 1 - mode_value(x, "prefill_time_share", mode),  # the scheduler's own
        "batch": x["batch"] + 0 * replicas,
    }


def _smallest(x: Inputs, plans: dict[str, Any]) -> dict[str, Any]:
    """Each of ``plans``' values at the batch with the fewest devices, then the lowest cost
    (the smaller batch on a tie); NaN where no batch is usable."""
    import xarray as xr

    devices = plans["replicas"] * x["_devices"]
    fleet = physics.fleet_price_per_hour(plans["replicas"], x["_devices"], x["price_per_hour"])
    probe = 0 * devices + 0 * fleet
    dims = (*(str(d) for d in probe.dims if d != "batch"), "batch")
    sizes = {d: int(probe.sizes[d]) for d in dims}

    def full(value: Any) -> np.ndarray:
        v = value if isinstance(value, xr.Variable) else xr.Variable((), value)
        return np.asarray(v.set_dims(sizes).transpose(*sizes).values, dtype=np.float64)

    cost = np.nan_to_num(full(fleet), nan=0.0)
    count = full(devices)
    key = np.where(np.isfinite(count), count * 1e6 + cost / (1 + cost), np.inf)
    best = np.argmin(key, axis=-1)[..., None]
    found = np.isfinite(np.take_along_axis(key, best, axis=-1)[..., 0])
    rest = dims[:-1]
    return {
        name: xr.Variable(
            rest, np.where(found, np.take_along_axis(full(value), best, axis=-1)[..., 0], np.nan)
        )
        for name, value in plans.items()
    }


def colocated(x: Inputs, mode: str, load: Load, tables: dict[str, Any]) -> dict[str, Any]:
    """The colocated plan of scheduler ``mode``: the batch with the fewest devices, then the
    lowest cost, and its figures at the load it carries."""
    plan = _smallest(x, _at_batch(x, mode, load, tables))
    replicas, service, ahead, decode = (plan[k] for k in ("replicas", "service", "ahead", "decode"))
    rate = load.rate(ahead + decode, service, replicas, replicas * plan["capacity"])
    busy = rate / replicas * service
    ttft = ahead + physics.md1_waiting_time(busy, service)
    mean = load.mean_ttft(ttft, rate, decode)
    ttfts = {
        f"ttft_{name}": mean
        - ttft
        + ahead
        + apply(physics.md1_quantile_wait, tables[name], busy, service)
        for name in QUANTILES
    }
    tpot = plan["tpot"]
    return {
        "prefill": replicas,
        "decode": replicas,
        "devices": replicas * x["_devices"],
        "batch": plan["batch"],
        "rate": rate,
        "ttft": mean,
        **ttfts,
        **{f"tpot_{name}": plan[f"tpot_{name}"] for name in QUANTILES},
        "tpot": tpot,
        "fleet": physics.fleet_price_per_hour(replicas, x["_devices"], x["price_per_hour"]),
        "power": replicas * x["_devices"] * x["_board_power"],
        "decode_share": plan["share"],
        "slot_bound": plan["slot_bound"] == 1,
        "handoff": 0.0,
    }


def batched_pool(
    x: Inputs, rate: Any, handoff: Any, each: Any, first: Any, side: Side
) -> dict[str, Any]:
    """Replicas of the batched prefill pool for ``rate`` and its TTFT (mean and percentiles),
    ``handoff`` the KV hand-off on the decode side [s]; NaN where no batch serves. ``each``
    is a step of ``m`` prompts at ``m`` = the grid's batches, ``first`` one prompt alone [s],
    both on the prefill pool's dims; ``side`` puts a device's value there."""
    serving, batch = x.settings, x["batch"]
    wall = physics.max_batch(
        x["memory"], x.options.memory_reserve, x["weight_bytes"], x["_prompt_cache"]
    )
    room = (serving.ttft_slo_s - handoff) / (1 + serving.slo_quantile)
    usable = (side(wall, "prefill") >= batch) & (each <= room)
    service = where(usable, batch / each, 0.0)  # prompts per second at m waiting
    best = service.max("batch")
    # the slope of the chord from one prompt to the best batch (one prompt: serial's)
    at = where(service == best, batch, np.inf).min("batch")
    largest = where(batch == at, each, -np.inf).max("batch")
    slope = where(at > 1, (largest - first) / where(at > 1, at - 1, 1.0), first)
    found = best > 0
    replicas = where(found, np.ceil(rate / (SLOT_LIMIT * where(found, best, 1.0))), np.nan)
    cycle = physics.gated_cycle(rate / replicas, first, slope)
    return {
        "replicas": replicas,
        "ttft": 1.5 * cycle + handoff,
        **{f"ttft_{name}": (1 + q) * cycle + handoff for name, q in QUANTILES.items()},
    }


_V = Variable


def _percentiles(prefix: str, what: str) -> tuple[Variable, ...]:
    return tuple(
        _V(
            f"pools_{prefix}_{name}_s",
            "s",
            f"{what}, its {name} (expected value of the plan's scheduler at roofline step costs)",
            column=f"{prefix}_{name}_s",
            rank="full",
        )
        for name in ("p50", "p90", "p99")
    )


VARIABLES: tuple[Variable, ...] = (
    _V(
        "prefill_replicas",
        "replica",
        "Prefill replicas (colocated: the replicas)",
        "count",
        rank="full",
    ),
    _V(
        "decode_replicas",
        "replica",
        "Decode replicas (colocated: the replicas)",
        "count",
        rank="full",
    ),
    _V("devices", "device", "Devices of the plan, replicas times tp", "count", rank="full"),
    _V(
        "decode_batch",
        "sequence",
        "Batch of the plan: colocated, the one with the fewest devices, then the lowest cost; "
        "disaggregated, the largest that fits and meets the TPOT objective",
        "count",
        rank="full",
    ),
    _V(
        "pools_scheduler",
        "-",
        "The named scheduler the plan runs (disaggregated: its prefill pool's, serial-prefill "
        "or batched-prefill; null: no plan)",
        "str",
        column="scheduler",
        rank="full",
    ),
    _V(
        "pools_request_rate",
        "request/s",
        "Requests per second the plan serves: the arrival rate, or a closed loop's by "
        "Little's law, concurrency / (TTFT + (O - 1) TPOT) at its fixed point",
        column="requests_per_s",
        rank="full",
    ),
    _V(
        "pools_ttft_s",
        "s",
        "Mean time to first token at this rate: the prompt's M/D/1 wait, the mean residual of "
        "the step in flight (colocated) or the KV hand-off (disaggregated), its prefill",
        column="ttft_s",
        rank="full",
    ),
    *_percentiles("ttft", "Time to first token under the load (M/D/1 waits)"),
    _V(
        "pools_tpot_s",
        "s",
        "Time per output token of the plan's batch, saturated (prefill stalls included)",
        column="tpot_s",
        rank="full",
    ),
    *_percentiles(
        "tpot",
        "Time per output token over the requests, saturated: serial- and batched-prefill "
        "spread by a request's place in its slot group (none where B <= O - 1); chunked and "
        "disaggregated decode run one step for every token, so no spread (each equals the mean)",
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
        "pools_energy_per_output_token_j",
        "J/token",
        "Estimate: the whole fleet at board power per output token at the arrival rate "
        "(null: a power unknown)",
        "nullable",
        column="energy_per_output_token_j",
        rank="full",
    ),
    _V(
        "decode_time_share",
        "1",
        "Share of device time in decode: disaggregated, the decode pool's share of the "
        "devices; colocated, decode's share of a replica's work",
        rank="full",
    ),
    _V(
        "slot_bound",
        "-",
        "Colocated: the replicas were set by the slots (utilization at most 0.9), not by the "
        "prefill queue; there the M/D/1 figure on the prefill alone understates TTFT",
        "bool",
        rank="full",
    ),
    _V(
        "kv_handoff_s",
        "s",
        "KV hand-off: each decode device's shard of the prompt's cache over its own link "
        "(null: colocated)",
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
    _V("prefill_price_as_of", "-", "Date of the prefill device's price (null: none)", "date"),
    _V("decode_price_as_of", "-", "Date of the decode device's price (null: none)", "date"),
    _V(
        "pools_row",
        "-",
        "A plan: disaggregated, or colocated on one device and tp",
        "bool",
        rank="full",
    ),
)
"""Every variable of the pools table, in its column order (``pools_row`` is no column)."""

DIMS = (
    "model",
    "kv_heads",
    "kv_dtype",
    "weight_dtype",
    "prompt_tokens",
    "output_tokens",
    "prefill_hardware",
    "prefill_tp",
    "decode_hardware",
    "decode_tp",
    "pool_mode",
)

LOADS = ("arrival_rate", "concurrency")
"""The load of a pools table, one of the two (``[serving]`` gives one): Poisson arrivals at a
rate, or a closed loop of clients."""

PLAN_DIMS = ("prefill_hardware", "prefill_tp", "decode_hardware", "decode_tp", "pool_mode")
"""The dims that make a plan of a workload at a rate: its devices, their tp and its mode."""


def _side(value: Any, side: str) -> Any:
    """``value`` with its device dims renamed for one pool (``prefill`` or ``decode``)."""
    import xarray as xr

    if not isinstance(value, xr.Variable):
        return value
    names = {"hardware": f"{side}_hardware", "tp": f"{side}_tp"}
    return xr.Variable([names.get(str(d), str(d)) for d in value.dims], value.data)


def _tables(x: Inputs) -> dict[str, Any]:
    """The M/D/1 quantile tables: the objective's and the reported percentiles'."""
    wanted = {"slo": x.settings.slo_quantile, **QUANTILES}
    return {key: physics.md1_quantile_table(q) for key, q in wanted.items()}


@dataclass(frozen=True)
class Steps:
    """The step times a disaggregated plan is sized on [s], each on the grid's device dims
    (``hardware``, ``tp``): one code path (``disaggregated``), two sources of step costs, the
    bound's (``Steps.bound``: every pair of devices) and the expected ones
    (``sweeps.studies.expected.pools``: both pools on one device and tp).

    ``alone``: one prompt prefilled alone, ``t_p(1, I)``, the prefill server's service;
    ``prefills``: a step of ``m`` whole prompts at ``m`` = the grid's batches, ``t_p(m, I)``;
    ``steady``: the decode step ``t_d(B, I + O/2)`` at ``B`` = the grid's batches; ``usable``:
    where that batch fits at its mean occupancy; ``side``: a device's value on one pool's dims.
    """

    alone: Any
    prefills: Any
    steady: Any
    usable: Any
    side: Side

    @classmethod
    def bound(cls, x: Inputs) -> Steps:
        """The serving table's roofline steps, the pools on every pair of devices."""
        return cls(
            x["_prefill_alone"],
            prefill_time(x, x["batch"], x["prompt_tokens"]),
            mode_value(x, "step_time_steady_s", "bound"),  # t_d(B, I + O/2)
            mode_value(x, "serving_feasible", "bound"),
            _side,
        )


def disaggregated(x: Inputs, load: Load, tables: dict[str, Any], steps: Steps) -> dict[str, Any]:
    """The disaggregated plan on ``steps``: both pools' replicas, the decode batch and the
    figures at the load it carries (docs/serving.md section 5)."""
    serving, output, side = x.settings, x["output_tokens"], steps.side
    # a prefill replica that cannot hold the weights and one prompt's cache serves nothing
    fits = side(x["_prefill_fits"], "prefill")
    service = where(fits, side(steps.alone, "prefill"), np.nan)
    # each decode device receives its own shard of the prompt's cache over its own link
    handoff = side(x["_prompt_cache"], "decode") / serving.kv_link_bandwidth
    slack = physics.ttft_slack(serving.ttft_slo_s, service, handoff)
    bound = apply(physics.md1_max_utilization, tables["slo"], slack / service)
    usable = steps.usable & (steps.steady <= serving.tpot_slo_s)
    batch, steady = (side(v, "decode") for v in _decode_batch(x, usable, steps.steady, load))
    decode_s = decode_time(output, steady)
    peak = load.peak(service + handoff + decode_s)
    prefill = physics.prefill_replicas(peak, service, where(bound > 0, bound, np.nan))
    per_decode = physics.decode_request_rate(batch, output, steady)
    decode = physics.replicas_for_rate(peak, per_decode)
    if load.closed:  # every client in a decode slot: none waits for one
        decode = np.maximum(decode, np.ceil(load.value / batch))
    rate = load.rate(service + handoff + decode_s, service, prefill, decode * per_decode)
    busy = rate * service / prefill
    ttft = service + handoff + physics.md1_waiting_time(busy, service)
    mean = load.mean_ttft(ttft, rate, decode_s)
    ttfts = {
        f"ttft_{name}": mean
        - ttft
        + service
        + handoff
        + apply(physics.md1_quantile_wait, tables[name], busy, service)
        for name in QUANTILES
    }
    scheduler: Any = "serial-prefill"
    if not load.closed:  # the batched prefill pool, where it needs fewer replicas
        each, first = side(steps.prefills, "prefill"), side(steps.alone, "prefill")
        batched = batched_pool(x, rate, handoff, each, first, side)
        fewer = batched["replicas"] < where(np.isfinite(prefill), prefill, np.inf)
        prefill = where(fewer, batched["replicas"], prefill)
        mean = where(fewer, batched["ttft"], mean)
        ttfts = {k: where(fewer, batched[k], v) for k, v in ttfts.items()}
        scheduler = _names(fewer, "batched-prefill", "serial-prefill")
    return {
        **_fleet(x, prefill, decode, side),
        "batch": batch,
        "rate": rate,
        "ttft": mean,
        **ttfts,
        **{f"tpot_{name}": steady for name in QUANTILES},
        "tpot": steady,
        "slot_bound": False,
        "handoff": handoff,
        "scheduler": scheduler,
    }


def _fleet(x: Inputs, prefill: Any, decode: Any, side: Side) -> dict[str, Any]:
    """Both pools' replicas, devices, price an hour, board power and decode share."""
    tp_p, tp_d = side(x["_devices"], "prefill"), side(x["_devices"], "decode")

    def both(name: str) -> Any:
        return physics.fleet_price_per_hour(
            prefill, tp_p, side(x[name], "prefill")
        ) + physics.fleet_price_per_hour(decode, tp_d, side(x[name], "decode"))

    devices = physics.pool_devices(prefill, tp_p, decode, tp_d)
    return {
        "prefill": prefill,
        "decode": decode,
        "devices": devices,
        "fleet": both("price_per_hour"),
        "power": both("_board_power"),
        "decode_share": decode * tp_d / devices,
    }


def _names(cond: Any, yes: str, no: str) -> Any:
    """``yes`` where ``cond`` holds, else ``no``: a Variable of names on ``cond``'s dims."""
    import xarray as xr

    return xr.Variable(cond.dims, np.where(np.asarray(cond.values), yes, no).astype(object))


def _decode_batch(x: Inputs, usable: Any, value: Any, load: Load) -> tuple[Any, Any]:
    """The decode pool's batch and ``value`` there: the largest usable (a closed loop: the
    smallest usable that holds every client, the largest where none does)."""
    if not load.closed:
        return _largest(x, usable, value)
    batch = x["batch"]
    holds = usable & (batch >= load.value)
    small = where(holds, batch, np.inf).min("batch")
    picked = where(batch == small, value, np.inf).min("batch")
    found = np.isfinite(small)
    large, at = _largest(x, usable, value)
    return where(found, small, large), where(found, picked, at)


def _largest(x: Inputs, usable: Any, value: Any) -> tuple[Any, Any]:
    """The largest batch where ``usable`` holds (NaN where none does), and ``value`` there."""
    batch = x["batch"]
    best = where(usable, batch, 0).max("batch")
    picked = where(batch == best, value, -np.inf).max("batch", skipna=False)
    found = best >= 1
    return where(found, best, np.nan), where(found, picked, np.nan)


def _scheduler_names(x: Inputs, split: Any, feasible: Any) -> Any:
    """The ``scheduler`` column: a colocated row's mode, a disaggregated row's prefill pool's
    scheduler (``split``: its name, or a Variable of names), null where no plan is found."""
    import xarray as xr

    mode = x["pool_mode"]
    from sweeps.studies import DIMS  # the registry: not at import

    dims = POOLS.dims_over(set(x.values) & {*feasible.dims, *mode.dims}, DIMS)
    sizes = {d: int(np.asarray(x[d].values).size) for d in dims}

    def full(value: Any) -> np.ndarray:
        v = value if isinstance(value, xr.Variable) else xr.Variable((), value)
        return np.array(v.set_dims(sizes).transpose(*dims).values, dtype=object)

    names = full(xr.Variable(mode.dims, np.asarray(mode.values, dtype=object)))
    apart = full(mode == "disaggregated").astype(bool)
    names[apart] = full(split)[apart]
    names[~full(feasible).astype(bool)] = None
    return xr.Variable(dims, names)


def _compute(x: Inputs) -> dict[str, Any]:
    output, mode, load = x["output_tokens"], x["pool_mode"], Load.of(x)
    tables = _tables(x)
    labels = [str(m) for m in np.asarray(mode.values).reshape(-1)]
    plans = {
        name: {k: _side(v, "decode") for k, v in colocated(x, name, load, tables).items()}
        for name in labels
        if name in SCHEDULERS
    }
    plans["disaggregated"] = disaggregated(x, load, tables, Steps.bound(x))

    def pick(key: str, empty: Any = np.nan) -> Any:
        chosen = empty
        for name, plan in plans.items():
            chosen = where(mode == name, plan[key], chosen)
        return chosen

    devices, rate = pick("devices"), pick("rate")
    same = (x["prefill_hardware"] == x["decode_hardware"]) & (x["prefill_tp"] == x["decode_tp"])
    feasible = np.isfinite(devices) & np.isfinite(pick("ttft"))

    def time(key: str) -> Any:
        """A plan's time [s], null where it has none: an M/D/1 queue with no replica (a pool
        that meets no objective) waits forever, which is no time."""
        value = pick(key)
        return where(np.isfinite(value), value, np.nan)

    scheduler = _scheduler_names(x, plans["disaggregated"]["scheduler"], feasible)
    out = {
        "prefill_replicas": pick("prefill"),
        "decode_replicas": pick("decode"),
        "devices": devices,
        "decode_batch": pick("batch"),
        "pools_scheduler": scheduler,
        "pools_request_rate": rate,
        "pools_ttft_s": time("ttft"),
        **{f"pools_ttft_{n}_s": time(f"ttft_{n}") for n in QUANTILES},
        "pools_tpot_s": time("tpot"),
        **{f"pools_tpot_{n}_s": time(f"tpot_{n}") for n in QUANTILES},
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


def _rows(sweep: Any, dims: tuple[str, ...]) -> int:
    """Rows of the pools table: each one-pool plan on one device and tp, and every pair of
    them for the disaggregated plan (``pools_row``)."""
    from sweeps.studies.serving.table import POOL_MODE

    one_pool = len(POOL_MODE.labels(sweep)) - 1  # the schedulers, disaggregated apart
    devices = len(sweep.hardware) * len(sweep.tp)
    rest = [d for d in dims if d not in PLAN_DIMS]
    return int(sweep.points(rest)) * (one_pool * devices + devices**2)


POOLS = Analysis(
    name="pools",
    dims=DIMS,
    variables=VARIABLES,
    compute=_compute,
    needs=("model", "decode", "serving"),
    columns=tuple(v.name for v in VARIABLES if v.name != "pools_row"),
    study="serving",
    rows="pools_row",
    count=_rows,
    whole=True,
    extra_dims=(*EXTRA_DIMS, *LOADS),
)
