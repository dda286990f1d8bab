"""The roofline bound of every measurement, and how close each measurement came to it.

A bound is the most permissive one the cost model gives: efficiencies 1, attention FLOPs on,
and ``batch = max`` at the memory wall with no reserve. For each row (interface.md):

- ``output_tokens_per_s``: ``B / t_d(B, S)`` at the mean context ``S = I + O/2`` (rounded
  down: a shorter cache only loosens the bound), per replica, or over ``tp`` per device;
- ``itl_s``: ``t_d(B, S)``;
- ``ttft_s``: ``t_p(B, I)``;
- ``request_latency_s``: the serving layer's static-batch latency (``mode = static``,
  docs/serving.md section 1) at ``B``, ``I`` and ``O``: ``t_p(B, I)`` plus the ``O - 1`` decode
  steps at their own contexts; its bottleneck is that of the phase with the larger share of it.

The ratio is oriented so that 1 is the roof: throughput measured over bound, latency bound over
measured. A row above 1 beats its bound: a defect of the bound, or a misread row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import xarray as xr

from sweeps.calibrate.measurements import Measurement
from sweeps.config import Sweep, parse_config
from sweeps.grid import BOTTLENECK_FLAGS, build_grid

THROUGHPUT = "output_tokens_per_s"
REQUEST = "request_latency_s"
BEATS_TOLERANCE = 1e-9
"""A ratio this far above 1 is arithmetic, not a measurement beating its bound."""


@dataclass(frozen=True)
class Bound:
    """The bound of one measurement and the ratio to it (1 at the roof)."""

    measurement: Measurement
    batch: int
    context: int
    bound: float
    ratio: float
    bottleneck: str
    status: str


def _context(m: Measurement) -> int:
    return m.prompt_tokens + m.output_tokens // 2


def _group_key(m: Measurement) -> tuple[str, ...]:
    return (m.model, m.hardware, str(m.tp), m.weight_dtype, m.kv_dtype, m.compute_dtype)


def _serving_table(rows: list[Measurement]) -> str:
    """The ``[serving]`` table of the request-latency rows' workloads (empty without any)."""
    requests = [m for m in rows if m.metric == REQUEST]
    if not requests:
        return ""
    prompts = sorted({m.prompt_tokens for m in requests})
    outputs = sorted({m.output_tokens for m in requests})
    # chunking off: only the static mode is read, and a budget must exceed every batch
    return (
        f"[serving]\nprompt_tokens = {prompts}\noutput_tokens = {outputs}\n"
        "arrival_rate = [1.0]\nchunk_tokens = 0\n"
    )


def _sweep(
    key: tuple[str, ...],
    batches: Iterable[int],
    contexts: Iterable[int],
    prompts: Iterable[int],
    serving: str = "",
) -> Sweep:
    model, hardware, tp, weight, kv, compute = key
    options = f'compute_dtype = "{compute}"\n' if compute != "auto" else ""
    text = (
        '[sweep]\nname = "calibrate"\n[axes]\n'
        f'model = ["{model}"]\nhardware = ["{hardware}"]\ntp = [{tp}]\n'
        f"batch = {sorted(set(batches))}\ncontext = {sorted(set(contexts))}\n"
        f"prompt = {sorted(set(prompts))}\n"
        f'kv_dtype = ["{kv}"]\nweight_dtype = ["{weight}"]\n'
        "[options]\nattention_flops = true\nmemory_reserve = 0.0\n"
        f"bandwidth_efficiency = 1.0\ncompute_efficiency = 1.0\n{options}{serving}"
    )
    return parse_config(text, "<calibrate>")


def _point(ds: xr.Dataset, name: str, **where: int | str) -> float:
    da = ds[name]
    value = da.sel({dim: label for dim, label in where.items() if dim in da.dims}).squeeze()
    return float(np.asarray(value.values).reshape(-1)[0])


def _best_batches(key: tuple[str, ...], rows: list[Measurement]) -> dict[int, int]:
    """The memory wall (no reserve) at each ``batch = max`` row's mean context."""
    contexts = [_context(m) for m in rows if m.batch is None]
    if not contexts:
        return {}
    ds = build_grid(_sweep(key, [1], contexts, [rows[0].prompt_tokens]))
    return {c: max(1, int(_point(ds, "max_batch", batch=1, context=c))) for c in contexts}


def _request(m: Measurement, ds: xr.Dataset, batch: int) -> tuple[float, float]:
    """The static-batch request latency bound [s] and the bottleneck flag of its larger phase."""
    at = {"batch": batch, "prompt_tokens": m.prompt_tokens, "output_tokens": m.output_tokens}
    latency = _point(ds, REQUEST, **at, mode="static")
    first = _point(ds, "serving_ttft_s", **at, mode="static")
    if first >= latency - first:
        return latency, _point(ds, "prefill_bottleneck", batch=batch, prompt=m.prompt_tokens)
    return latency, _point(ds, "bottleneck", batch=batch, context=_context(m))


def _bound(m: Measurement, ds: xr.Dataset, batch: int) -> Bound:
    context, tp = _context(m), m.tp
    if m.metric == REQUEST:
        bound, flag = _request(m, ds, batch)
        ratio = bound / m.value
    elif m.metric == "ttft_s":
        bound = _point(ds, "ttft_s", batch=batch, prompt=m.prompt_tokens)
        flag = _point(ds, "prefill_bottleneck", batch=batch, prompt=m.prompt_tokens)
        ratio = bound / m.value
    else:
        step = _point(ds, "step_time_s", batch=batch, context=context)
        flag = _point(ds, "bottleneck", batch=batch, context=context)
        if m.metric == THROUGHPUT:
            bound = batch / step / (tp if m.per == "device" else 1)
            ratio = m.value / bound
        else:
            bound, ratio = step, step / m.value
    status = "beats its bound" if ratio > 1 + BEATS_TOLERANCE else "ok"
    return Bound(m, batch, context, bound, ratio, BOTTLENECK_FLAGS[int(flag)], status)


def bounds(measurements: list[Measurement]) -> list[Bound]:
    """The bound of every measurement, in the order given; one small grid per configuration."""
    groups: dict[tuple[str, ...], list[Measurement]] = defaultdict(list)
    for m in measurements:
        groups[_group_key(m)].append(m)
    found: dict[int, Bound] = {}
    for key, rows in groups.items():
        best = _best_batches(key, rows)
        batch_of = {id(m): m.batch if m.batch is not None else best[_context(m)] for m in rows}
        ds = build_grid(
            _sweep(
                key,
                batch_of.values(),
                [_context(m) for m in rows],
                [m.prompt_tokens for m in rows],
                _serving_table(rows),
            )
        )
        for m in rows:
            found[id(m)] = _bound(m, ds, batch_of[id(m)])
    return [found[id(m)] for m in measurements]
