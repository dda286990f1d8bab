"""``[serving] simulate = N``: the cheapest plan of every workload, simulated, as a table.

For each workload of the pools table (model, KV and weight settings, ``I``, ``O``, load; the
table as written, so a streamed run's plans are its whole table's) the cheapest feasible plan
that one scheduler runs on one kind of device (the least cost, the fewest devices where no
device has a price) is simulated with ``N`` requests: its replicas, batch and scheduler,
Poisson arrivals at the workload's rate (a closed loop of its clients where the table has a
concurrency), the lengths of ``[serving] lengths``, seed 0. ``simulated.parquet`` has one row
per plan, its columns declared once in ``SIMULATED`` (units and descriptions go into the
file's metadata as for every table); the TTFT and TPOT of every request feed the CDF
charts (``sweeps.charts.simulated``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.errors import ConfigError
from sweeps.grid.analyses.base import Variable
from sweeps.grid.analyses.served import EXTRA_DIMS
from sweeps.simulate.costs import point_inputs
from sweeps.simulate.kernel import SCHEDULER_CODES
from sweeps.simulate.run import Timeline, simulate
from sweeps.simulate.stats import summarize
from sweeps.simulate.workload import Lengths, closed_loop, poisson, read_lengths
from sweeps.studies.serving.schedulers import MODE_ALIASES

WORKLOAD = (
    "model", "kv_heads", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens",
)  # fmt: skip
LOADS = ("arrival_rate", "concurrency")
"""A workload's load, the one of the two its pools table has."""
SEED = 0
TECHNIQUES = EXTRA_DIMS
"""The speculative, prefix and parallel dims a plan carries where the sweep has them (the
serving analyses' own, declared once in ``served``): the simulated replica verifies and hits
as the plan does (``sweeps.simulate.speculation``), on its parallel layout's grid point."""
SCENARIO = ("spec_acceptance", "prefix_hit_rate")
"""What a workload meets beside its lengths and rate: one cheapest plan each."""

_V = Variable
SIMULATED: tuple[Variable, ...] = (
    _V("model", "-", "Model id", "str"),
    _V("kv_heads", "head", "Key/value heads in effect", "int64"),
    _V("kv_dtype", "-", "KV-cache number format", "str"),
    _V("weight_dtype", "-", "Weight number format", "str"),
    _V("prompt_tokens", "token", "Mean prompt tokens per request, I", "int64"),
    _V("output_tokens", "token", "Mean output tokens per request, O", "int64"),
    _V(
        "arrival_rate",
        "request/s",
        "Poisson arrival rate of the workload (null: a closed loop)",
        "float64",
    ),
    _V(
        "concurrency",
        "request",
        "Closed-loop clients of the workload (null: Poisson arrivals)",
        "int64",
    ),
    _V(
        "spec_acceptance",
        "1",
        "Draft acceptance the workload meets (null: no speculation axes)",
        "float64",
    ),
    _V(
        "prefix_hit_rate",
        "1",
        "Prefix hit rate the workload meets (null: no prefix axes)",
        "float64",
    ),
    _V("hardware", "-", "Device of the plan", "str"),
    _V("tp", "device", "Devices of one replica", "int64"),
    _V("batch", "sequence", "Slots of one replica, B", "int64"),
    _V("replicas", "replica", "Replicas of the plan", "int64"),
    _V("scheduler", "-", "Named scheduler simulated (docs/serving.md section 3)", "str"),
    _V("spec_tokens", "token", "Draft tokens of the plan, k (null: no speculation axes)", "int64"),
    _V("spec_draft", "-", "Draft of the plan (null: no speculation axes)", "str"),
    _V("kv_tier", "-", "Tier of the plan's cached prefixes (null: no prefix axes)", "str"),
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


def cheapest_plans(pools: Any) -> Any:
    """The cheapest feasible one-device plan of each workload of the pools table (a Polars
    frame): least cost (no price last), then fewest devices; one row per workload."""
    import polars as pl

    one_device = pl.col("pool_mode").cast(pl.String) != "disaggregated"
    usable = pools.filter(one_device & pl.col("feasible") & pl.col("devices").is_not_null())
    ranked = usable.sort(
        ["cost_per_million_output_tokens_usd", "devices"], nulls_last=True, maintain_order=True
    )
    keys = [*WORKLOAD, *(c for c in (*LOADS, *SCENARIO) if c in pools.columns)]
    return ranked.group_by(keys, maintain_order=True).first().sort(keys, maintain_order=True)


def _plain(value: Any) -> Any:
    """A frame's value as the axis labels have it (categories as text)."""
    return value if value is None or isinstance(value, int | float) else str(value)


def _index(values: Any, wanted: Any, key: str) -> int:
    """Where ``wanted`` is among a sweep axis's ``values``."""
    for i, value in enumerate(values):
        if value == wanted:
            return i
    msg = f"{key} = {wanted!r} is not on the sweep's axis"
    raise KeyError(msg)


def _point(sweep: Any, plan: dict[str, Any]) -> dict[str, int]:
    """The grid indices of a plan's replica in ``sweep``."""
    from sweeps.axes import AXES
    from sweeps.config import NATIVE

    model = _index([m.id for m in sweep.models], plan["model"], "model")
    counts = [
        sweep.models[model].kv_heads if label == NATIVE else int(label) for label in sweep.kv_heads
    ]
    return {
        "model": model,
        "kv_heads": _index(counts, plan["kv_heads"], "kv_heads"),
        "kv_dtype": _index([d.name for d in sweep.kv_dtype], plan["kv_dtype"], "kv_dtype"),
        "weight_dtype": _index(
            [d.name for d in sweep.weight_dtype], plan["weight_dtype"], "weight_dtype"
        ),
        "hardware": _index([h.id for h in sweep.hardware], plan["hardware"], "hardware"),
        "tp": _index(list(sweep.tp), plan["tp"], "tp"),
        **{
            axis.dim: _index(axis.labels(sweep), plan[axis.dim], axis.dim)
            for axis in AXES
            if axis.dim in TECHNIQUES and plan.get(axis.dim) is not None
        },
    }


def simulate_plans(pools: Any, sweep: Any, lengths: Lengths | None = None) -> list[Simulated]:
    """Every cheapest plan of the pools table (a Polars frame) simulated with ``[serving]
    simulate`` requests (and ``lengths``, read from the sweep where not given)."""
    lengths = lengths or lengths_of(sweep)
    out = []
    for found in cheapest_plans(pools).iter_rows(named=True):
        mode = str(found["pool_mode"])
        plan = {
            **{k: found.get(k) for k in (*WORKLOAD, *LOADS)},
            "model": str(found["model"]),
            "kv_dtype": str(found["kv_dtype"]),
            "weight_dtype": str(found["weight_dtype"]),
            "hardware": str(found["decode_hardware"]),
            "tp": int(found["decode_tp"]),
            "batch": int(found["decode_batch"]),
            "replicas": int(found["decode_replicas"]),
            "scheduler": MODE_ALIASES.get(mode, mode),
            **{d: _plain(found[d]) for d in TECHNIQUES if d in found},
        }
        if plan["scheduler"] not in SCHEDULER_CODES:
            continue
        out.append(_simulated(sweep, plan, lengths))
    return out


def _simulated(sweep: Any, plan: dict[str, Any], lengths: Lengths) -> Simulated:
    """One plan simulated, and its row."""
    serving = sweep.serving
    chunked = plan["scheduler"].startswith("chunked")
    clients = plan["concurrency"]
    arrivals = poisson(plan["arrival_rate"]) if clients is None else closed_loop(clients)
    timeline = simulate(
        point_inputs(sweep, _point(sweep, plan)), plan["scheduler"], plan["batch"],
        arrivals=arrivals, requests=serving.simulate,
        prompt=plan["prompt_tokens"], output=plan["output_tokens"], lengths=lengths,
        budget=serving.chunk_tokens if chunked else 0, replicas=plan["replicas"], seed=SEED,
    )  # fmt: skip
    stats = summarize(timeline, serving.ttft_slo_s, serving.tpot_slo_s)
    row = {
        **plan,
        "seed": SEED,
        **{k: None if math.isnan(v) else v for k, v in stats.items()},
        "requests": int(stats["requests"]),
    }
    return Simulated(row, timeline)
