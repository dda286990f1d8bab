"""``[serving] simulate = N``: the cheapest plan of every workload, simulated, as a table.

For each workload of the pools table (model, KV and weight settings, ``I``, ``O``, load; the
table as written, so a streamed run's plans are its whole table's) the cheapest feasible plan
that one scheduler runs on one kind of device (the least cost, the fewest devices where no
device has a price) is simulated with ``N`` requests: its replicas, batch and scheduler,
Poisson arrivals at the workload's rate (a closed loop of its clients where the table has a
concurrency), the lengths of ``[serving] lengths``, seed 0; with ``[workload]`` the trace
itself, its first ``N`` requests at their recorded times over the rate's scale, with their
own lengths (``sweeps.studies.serving.trace``). ``simulated.parquet`` has one row
per plan, its columns declared once in ``sweeps.studies.serving.simulated`` (units and
descriptions go into the file's metadata as for every table); the TTFT and TPOT of every
request feed the CDF charts (``sweeps.charts.simulated``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.errors import ConfigError
from sweeps.schedulers import BY_NAME, MODE_ALIASES
from sweeps.studies.serving.served import EXTRA_DIMS
from sweeps.studies.serving.simulate.kernel import SCHEDULER_CODES
from sweeps.studies.serving.simulate.run import Timeline, simulate
from sweeps.studies.serving.simulate.stats import row_values, summarize
from sweeps.studies.serving.simulate.workload import Lengths, closed_loop, poisson, read_lengths
from sweeps.studies.serving.trace import trace_load

WORKLOAD = (
    "model", "kv_heads", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens",
)  # fmt: skip
LOADS = ("arrival_rate", "concurrency")
"""A workload's load, the one of the two its pools table has."""
SEED = 0
TECHNIQUES = EXTRA_DIMS
"""The speculative, prefix and parallel dims a plan carries where the sweep has them (the
serving analyses' own, declared once in ``served``): the simulated replica verifies and hits
as the plan does (``simulate.speculation``), on its parallel layout's grid point."""
InputsAt = Callable[[Any, dict[str, int]], Any]
"""The grid's inputs at one point of a sweep (indices by dim): the engine's, handed in."""
SCENARIO = ("spec_acceptance", "prefix_hit_rate")
"""What a workload meets beside its lengths and rate: one cheapest plan each."""


@dataclass(frozen=True)
class Simulated:
    """One simulated plan: its row of ``simulated.parquet`` and its requests' timeline."""

    row: dict[str, Any]
    timeline: Timeline


def lengths_of(sweep: Any) -> Lengths:
    """``[serving] lengths`` as ``Lengths``; a CSV is read relative to the config file."""
    table = sweep.studies["serving"].lengths
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
    """Where ``wanted`` is among a sweep axis's ``values`` (None: the NaN label, as
    ``prefix_hit_rate = "trace"`` has it)."""
    for i, value in enumerate(values):
        if value == wanted or (wanted is None and value != value):  # a null: the NaN label
            return i
    msg = f"{key} = {wanted!r} is not on the sweep's axis"
    raise KeyError(msg)


def point_of(sweep: Any, plan: dict[str, Any]) -> dict[str, int]:
    """The grid indices of a plan's replica in ``sweep``."""
    from sweeps.engine.axis import NATIVE
    from sweeps.studies import AXES

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
            if axis.dim in TECHNIQUES
            and axis.dim in plan
            and (plan[axis.dim] is not None or any(v != v for v in axis.labels(sweep)))
        },
    }


def simulate_plans(
    pools: Any, sweep: Any, inputs_at: InputsAt, lengths: Lengths | None = None
) -> list[Simulated]:
    """Every cheapest plan of the pools table (a Polars frame) simulated with ``[serving]
    simulate`` requests (and ``lengths``, read from the sweep where not given), each on the
    grid's inputs at its point (``inputs_at``: the engine's, ``grid.scalar.point_inputs``)."""
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
        out.append(_simulated(sweep, plan, lengths, inputs_at))
    return out


def _simulated(
    sweep: Any, plan: dict[str, Any], lengths: Lengths, inputs_at: InputsAt
) -> Simulated:
    """One plan simulated, and its row."""
    serving = sweep.studies["serving"]
    chunked = BY_NAME[plan["scheduler"]].chunked
    clients, load = plan["concurrency"], trace_load(sweep, plan["arrival_rate"])
    arrivals = poisson(plan["arrival_rate"]) if clients is None else closed_loop(clients)
    if load is not None:  # [workload]: the trace itself, at its time scale
        arrivals = load.arrivals(serving.simulate)
    timeline = simulate(
        inputs_at(sweep, point_of(sweep, plan)), plan["scheduler"], plan["batch"],
        arrivals=arrivals, requests=serving.simulate,
        prompt=plan["prompt_tokens"], output=plan["output_tokens"], lengths=lengths,
        budget=serving.chunk_tokens if chunked else 0, replicas=plan["replicas"], seed=SEED,
    )  # fmt: skip
    stats = summarize(timeline, serving.ttft_slo_s, serving.tpot_slo_s)
    row = {
        **plan,
        "seed": SEED,
        **row_values(stats),
        "requests": int(stats["requests"]),
    }
    return Simulated(row, timeline)
