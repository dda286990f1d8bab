"""The pools table's colocated plans, one per named scheduler, and the load they carry.

A colocated plan is one pool on one device and tp running one named scheduler
(docs/serving.md section 5). For every usable batch (it fits at its mean occupancy and meets
TPOT) the replicas are the fewest that meet the TTFT objective at ``[serving] slo_quantile``
(a prompt waits for the prefill server, M/D/1 at the scheduler's prefill of one prompt, and
for the mean residual of the step in flight) and keep the slots at most ``SLOT_LIMIT`` busy
(a closed loop: at most one client a slot, so that none waits for one);
the plan is the batch with the fewest devices, then the lowest cost (an argmin over the batch
dim, the smaller batch on a tie).

The load (``Load``) is Poisson arrivals at a rate or a closed loop of ``C`` clients. A closed
loop is sized for the highest rate its clients can send, ``C / E2E`` with no wait (more
replicas only lower the rate: the objectives then hold at the rate reached), and the rate it
reaches is the fixed point of Little's law, ``lambda = C / (TTFT(lambda) + (O - 1) TPOT)``
(``sweeps.physics.closed_loop``). A client sends its next request at the end of the step that
finished its last, so no step is in flight when it arrives: no residual. Its arrivals are
smoother than Poisson, so the M/D/1 waits are upper estimates (the rate a lower one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Inputs
from sweeps.physics._array import where
from sweeps.studies.serving.closed_forms import QUANTILES

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
    # the prefill server: one prompt's share of the scheduler's prefill capacity
    service = x["_prefill_alone"]
    if mode.startswith("chunked"):
        service = x["prompt_tokens"] * step / mode_value(x, "chunk_tokens", mode)
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
