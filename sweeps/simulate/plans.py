"""``[serving] simulate = N``: the cheapest plan of every workload, simulated, as a table.

For each workload of the pools table (model, KV and weight settings, ``I``, ``O``, rate) the
cheapest feasible plan that one scheduler runs on one kind of device (the least cost, the
fewest devices where no device has a price) is simulated with ``N`` requests: its replicas,
batch and scheduler, Poisson arrivals at the workload's rate, the lengths of ``[serving]
lengths``, seed 0. ``simulated.parquet`` has one row per plan, its columns declared once in
``SIMULATED`` (units and descriptions go into the file's metadata as for every table); the
TTFT and TPOT of every request feed the CDF charts (``sweeps.charts.simulated``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sweeps.errors import ConfigError
from sweeps.grid.analyses.base import Variable
from sweeps.simulate.costs import point_inputs
from sweeps.simulate.kernel import SCHEDULER_CODES
from sweeps.simulate.run import Timeline, simulate
from sweeps.simulate.stats import summarize
from sweeps.simulate.workload import Lengths, poisson, read_lengths

WORKLOAD = (
    "model", "kv_heads", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens",
    "arrival_rate",
)  # fmt: skip
PLAN = ("prefill_hardware", "prefill_tp", "decode_hardware", "decode_tp", "pool_mode")
MODE_SCHEDULER = {"colocated": "serial-prefill", "chunked": "chunked-paced"}
"""The first round's mode names, by the scheduler they are (docs/interface.md)."""
SEED = 0

_V = Variable
SIMULATED: tuple[Variable, ...] = (
    _V("model", "-", "Model id", "str"),
    _V("kv_heads", "head", "Key/value heads in effect", "int64"),
    _V("kv_dtype", "-", "KV-cache number format", "str"),
    _V("weight_dtype", "-", "Weight number format", "str"),
    _V("prompt_tokens", "token", "Mean prompt tokens per request, I", "int64"),
    _V("output_tokens", "token", "Mean output tokens per request, O", "int64"),
    _V("arrival_rate", "request/s", "Poisson arrival rate of the workload", "float64"),
    _V("hardware", "-", "Device of the plan", "str"),
    _V("tp", "device", "Devices of one replica", "int64"),
    _V("batch", "sequence", "Slots of one replica, B", "int64"),
    _V("replicas", "replica", "Replicas of the plan", "int64"),
    _V("scheduler", "-", "Named scheduler simulated (docs/serving.md section 3)", "str"),
    _V("requests", "request", "Requests simulated", "int64"),
    _V("seed", "-", "Seed of the arrivals and lengths", "int64"),
    *(
        _V(f"{name}_{stat}_s", "s", f"{label}, {what} (simulated)")
        for name, label in (
            ("ttft", "Time to first token"),
            ("tpot", "Time per output token after the first (null: O = 1)"),
            ("latency", "End-to-end latency"),
        )
        for stat, what in (
            ("mean", "mean"),
            ("mean_ci", "half-width of the mean's 95 % confidence interval (batch means)"),
            ("p50", "median"),
            ("p90", "90th percentile"),
            ("p99", "99th percentile"),
        )
    ),
    _V("slo_attainment", "1", "Share of requests meeting both the TTFT and TPOT objectives"),
    _V("requests_per_s", "request/s", "Completed requests per second, steady window"),
    _V("output_tokens_per_s", "token/s", "Output tokens per second of the plan, steady window"),
    _V("goodput_requests_per_s", "request/s", "Requests per second meeting both objectives"),
    _V("utilization", "1", "Share of the replicas' time spent running steps"),
    _V("mean_queue_length", "request", "Mean prompts waiting per replica (Little's law)"),
)
"""The columns of ``simulated.parquet``, each declared once."""


@dataclass(frozen=True)
class Simulated:
    """One simulated plan: its row of ``simulated.parquet`` and its requests' timeline."""

    row: dict[str, Any]
    timeline: Timeline


def lengths_of(sweep: Any) -> Lengths:
    """``[serving] lengths`` as ``Lengths``; a CSV is read relative to the config file."""
    table = sweep.serving.lengths
    if table.csv is None:
        return Lengths(table.kind, cv=table.cv or 0.0, source=f"{sweep.path}: serving.lengths")
    path = Path(sweep.path).parent / table.csv
    try:
        return read_lengths(path)
    except ConfigError as error:
        detail = str(error).removeprefix(f"{path}: ")
        msg = f"{sweep.path}: serving.lengths.csv = {table.csv!r}: {detail}"
        raise ConfigError(msg) from None


def _values(ds: Any, name: str) -> np.ndarray:
    """``name`` with one axis per workload dim, then one for every plan [as stored]."""
    var = ds[name].variable.set_dims({d: ds.sizes[d] for d in (*WORKLOAD, *PLAN)})
    shape = [ds.sizes[d] for d in WORKLOAD] + [-1]
    return np.asarray(var.transpose(*WORKLOAD, *PLAN).values).reshape(shape)


def cheapest_plans(ds: Any) -> list[dict[str, Any]]:
    """The cheapest feasible one-device plan of each workload of ``ds``'s pools variables:
    labels and indices of its workload, device, tp, batch, replicas and scheduler."""
    usable = np.asarray(ds["pool_mode"].values).astype(str) != "disaggregated"
    ok = _values(ds, "pools_row") & _values(ds, "pools_feasible")
    ok &= np.broadcast_to(usable, [ds.sizes[d] for d in PLAN]).reshape(-1)
    cost, devices = _values(ds, "pools_cost_per_million_output_tokens_usd"), _values(ds, "devices")
    batch, replicas = _values(ds, "decode_batch"), _values(ds, "decode_replicas")
    plans = []
    for at in np.ndindex(*ok.shape[:-1]):
        if not ok[at].any():
            continue
        keyed = np.where(ok[at], np.where(np.isnan(cost[at]), np.inf, cost[at]), np.inf)
        order = np.lexsort((np.where(ok[at], devices[at], np.inf), keyed))
        best = int(order[0])
        where = np.unravel_index(best, [ds.sizes[d] for d in PLAN])
        labels = {d: ds[d].values[i] for d, i in zip(PLAN, where, strict=True)}
        name = str(labels["pool_mode"])
        plans.append({
            "at": dict(zip(WORKLOAD, at, strict=True)),
            "hardware": str(labels["decode_hardware"]),
            "tp": int(labels["decode_tp"]),
            "batch": int(batch[at][best]),
            "replicas": int(replicas[at][best]),
            "scheduler": MODE_SCHEDULER.get(name, name),
        })  # fmt: skip
    return plans


def _point(ds: Any, plan: dict[str, Any]) -> dict[str, int]:
    """The grid indices of a plan's replica."""
    at = plan["at"]
    hardware = int(np.flatnonzero(ds["hardware"].values == plan["hardware"])[0])
    tp = int(np.flatnonzero(ds["tp"].values == plan["tp"])[0])
    keys = ("model", "kv_heads", "kv_dtype", "weight_dtype")
    return {**{k: int(at[k]) for k in keys}, "hardware": hardware, "tp": tp}


def simulate_plans(ds: Any, sweep: Any, lengths: Lengths | None = None) -> list[Simulated]:
    """Every cheapest plan of ``ds`` simulated with ``[serving] simulate`` requests (and
    ``lengths``, read from the sweep where not given)."""
    serving, lengths = sweep.serving, lengths or lengths_of(sweep)
    out = []
    for plan in cheapest_plans(ds):
        if plan["scheduler"] not in SCHEDULER_CODES:
            continue
        at = plan["at"]
        prompt = int(ds["prompt_tokens"].values[at["prompt_tokens"]])
        output = int(ds["output_tokens"].values[at["output_tokens"]])
        rate = float(ds["arrival_rate"].values[at["arrival_rate"]])
        chunked = plan["scheduler"].startswith("chunked")
        timeline = simulate(
            point_inputs(sweep, _point(ds, plan)), plan["scheduler"], plan["batch"],
            arrivals=poisson(rate), requests=serving.simulate, prompt=prompt, output=output,
            lengths=lengths, budget=serving.chunk_tokens if chunked else 0,
            replicas=plan["replicas"], seed=SEED,
        )  # fmt: skip
        stats = summarize(timeline, serving.ttft_slo_s, serving.tpot_slo_s)
        row = {
            "model": str(ds["model"].values[at["model"]]),
            "kv_heads": int(np.asarray(ds["kv_heads_count"].values)[at["model"], at["kv_heads"]]),
            "kv_dtype": str(ds["kv_dtype"].values[at["kv_dtype"]]),
            "weight_dtype": str(ds["weight_dtype"].values[at["weight_dtype"]]),
            "prompt_tokens": prompt,
            "output_tokens": output,
            "arrival_rate": rate,
            **{k: plan[k] for k in ("hardware", "tp", "batch", "replicas", "scheduler")},
            "seed": SEED,
            **{
                k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in stats.items()
            },
        }
        row["requests"] = int(stats["requests"])
        out.append(Simulated(row, timeline))
    return out
