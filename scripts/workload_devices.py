"""The devices a ``[workload]`` trace needs, by the closed forms and by simulation, and the
prefix hit rate its config's ``prefix_trace`` would see on each device: the figures of
docs/workloads.md.

    python scripts/workload_devices.py configs/serving-azure-conv-llama3-70b.toml

- By closed form: the fewest devices of a feasible colocated plan of the pools table (the closed
  forms at the trace's mean lengths and rates, the config's objectives and schedulers), per
  device, KV format and rate scale, at a hit rate of 0.
- By simulation: per tp, the pools table's largest ``chunked-greedy`` batch there at any of
  the rates (one plan at every load; the config's ``chunk_tokens`` its budget), and the
  fewest replicas of it whose
  replay of the trace (the config's first ``[serving] simulate`` requests, at the scale's
  times, dealt to the replicas in turn) meets the TTFT objective at ``slo_quantile`` (p90)
  and the TPOT objective at the mean; the least ``replicas x tp`` over tp.
- The hit rate: ``prefix.parquet``'s ``hit_rate`` at the ``"trace"`` label, per device, tp
  and KV format.

Prints Markdown tables. Reads only the config and the files it names.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import polars as pl

import sweeps
from sweeps.grid.scalar import point_inputs
from sweeps.studies.serving.simulate import simulate, summarize
from sweeps.studies.serving.trace import TraceLoad

MOST_REPLICAS = 16
SCHEDULER = "chunked-greedy"
"""The named scheduler simulated (its pools rows give the batch at each tp)."""


def _index(values: list[Any], wanted: Any) -> int:
    return next(i for i, v in enumerate(values) if v == wanted or (wanted is None and v != v))


def by_closed_form(pools: pl.DataFrame) -> pl.DataFrame:
    """The fewest devices of a feasible colocated plan, per device, KV format and rate."""
    plain = pools.filter(
        pl.col("feasible")
        & (pl.col("pool_mode").cast(pl.String) != "disaggregated")
        & (pl.col("prefix_hit_rate") == 0.0)
    )
    fewest = plain.sort("devices", "decode_tp", maintain_order=True)
    return fewest.group_by("decode_hardware", "kv_dtype", "arrival_rate").agg(
        pl.col("devices").first(), pl.col("decode_replicas").first(), pl.col("decode_tp").first()
    )


def _meets(sweep: Any, point: dict[str, int], batch: int, replicas: int, load: TraceLoad) -> Any:
    serving = sweep.studies["serving"]
    timeline = simulate(
        point_inputs(sweep, point), SCHEDULER, batch, arrivals=load.arrivals(serving.simulate),
        budget=serving.chunk_tokens, replicas=replicas,
    )  # fmt: skip
    stats = summarize(timeline, serving.ttft_slo_s, serving.tpot_slo_s)
    ttft = float(np.quantile(timeline.first - timeline.arrival, serving.slo_quantile))
    ok = ttft <= serving.ttft_slo_s and stats["tpot_mean_s"] <= serving.tpot_slo_s
    return ok, ttft


def by_simulation(sweep: Any, pools: pl.DataFrame, device: str, kv: str, load: TraceLoad) -> str:
    """The least ``replicas x tp`` whose replay meets the objectives, and its p90 TTFT."""
    best: tuple[int, int, int, float] | None = None
    rows = pools.filter(
        (pl.col("decode_hardware").cast(pl.String) == device)
        & (pl.col("kv_dtype").cast(pl.String) == kv)
        & (pl.col("prefix_hit_rate") == 0.0)
        & (pl.col("pool_mode").cast(pl.String) == SCHEDULER)
        & pl.col("decode_batch").is_not_null()
    )
    batches = rows.group_by("decode_tp").agg(pl.col("decode_batch").max()).sort("decode_tp")
    for tp, batch in batches.rows():
        point = {
            "hardware": _index([h.id for h in sweep.hardware], device),
            "tp": _index(list(sweep.tp), tp),
            "kv_dtype": _index([d.name for d in sweep.kv_dtype], kv),
            "prefix_hit_rate": _index(list(sweep.prefix_hit_rate), 0.0),
        }
        for replicas in range(1, MOST_REPLICAS + 1):
            if best is not None and replicas * tp >= best[0]:
                break
            ok, ttft = _meets(sweep, point, batch, replicas, load)
            if ok:
                best = (replicas * tp, replicas, tp, ttft)
                break
    if best is None:
        return f"more than {MOST_REPLICAS} replicas"
    return f"{best[0]} ({best[1]} x tp {best[2]}, p90 TTFT {best[3]:.2f} s)"


def main(path: str) -> None:
    sweep = sweeps.load_config(path)
    frames = sweeps.export.frames(sweeps.run(sweep))
    pools, prefix = frames["pools"], frames["prefix"]
    closed = by_closed_form(pools)
    loads = [load for load in sweep.arrival_rate if isinstance(load, TraceLoad)]
    if not loads:
        sys.exit(f"{path}: no [workload] trace")
    print("| device | KV | load | by closed form (devices) | by simulation (devices) |")
    print("|---|---|---|---|---|")
    for device in (h.id for h in sweep.hardware):
        for kv in (d.name for d in sweep.kv_dtype):
            for load in loads:
                found = closed.filter(
                    (pl.col("decode_hardware").cast(pl.String) == device)
                    & (pl.col("kv_dtype").cast(pl.String) == kv)
                    & (pl.col("arrival_rate") == load.rate)
                ).select("devices", "decode_replicas", "decode_tp")
                planned = "none feasible"
                if found.height:
                    devices, replicas, tp = found.row(0)
                    planned = f"{devices} ({replicas} x tp {tp})"
                simulated = by_simulation(sweep, pools, device, kv, load)
                scale = f"x{load.scale:g} ({load.rate:.2f} req/s)"
                print(f"| {device} | {kv} | {scale} | {planned} | {simulated} |")
    traced = prefix.filter(pl.col("prefix_hit_rate").is_null())
    if traced.height:
        rates = traced.group_by("hardware", "tp", "kv_dtype").agg(pl.col("hit_rate").first())
        print("\n| device | tp | hit rate, bf16 cache | hit rate, fp8 cache |\n|---|---|---|---|")
        for device in (h.id for h in sweep.hardware):
            for tp in sweep.tp:
                cells = []
                for kv in ("bf16", "fp8"):
                    cell = rates.filter(
                        (pl.col("hardware").cast(pl.String) == device)
                        & (pl.col("tp") == tp)
                        & (pl.col("kv_dtype").cast(pl.String) == kv)
                    )["hit_rate"]
                    cells.append(f"{100 * cell[0]:.1f}%" if len(cell) else "-")
                print(f"| {device} | {tp} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main(sys.argv[1])
