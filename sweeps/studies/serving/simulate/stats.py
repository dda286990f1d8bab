"""What a simulation says: means and percentiles with confidence intervals, attainment, goodput.

Statistics are taken over the steady part of a run: the first ``warmup`` share of requests (an
empty system filling) is left out, and in a closed loop the last ``C`` (the clients stopping
one by one). Confidence intervals are batch means: the kept requests in arrival order cut
into ``batches`` consecutive batches, the statistic taken per batch, a Student-t interval on
their mean (waits of neighbouring requests are correlated; batches of many requests are
nearly independent). Throughput counts completions between the 10th and 90th percentile of
completion times.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np

from sweeps.studies.serving.simulate.run import Timeline

BATCHES = 20
"""Batches of the batch-means confidence intervals."""

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
"""The percentiles reported of TTFT, TPOT and end-to-end latency."""


def student_t(level: float, dof: int) -> float:
    """Two-sided Student-t quantile at ``level`` with ``dof`` degrees of freedom (Cornish-Fisher
    expansion in ``1/dof`` to third order: within 1e-3 of the exact value from 10 dof) [1]."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / dof + g2 / dof**2 + g3 / dof**3


def batch_means(
    values: np.ndarray,
    statistic: Callable[[np.ndarray], Any] = np.mean,
    level: float = 0.95,
    batches: int = BATCHES,
) -> tuple[float, float]:
    """``statistic`` of ``values`` (NaN left out) and the half-width of its confidence
    interval at ``level`` by batch means; NaN for both where fewer than two per batch."""
    kept = values[~np.isnan(values)]
    if kept.size < 2 * batches:
        return (float(statistic(kept)) if kept.size else math.nan), math.nan
    per = np.array([statistic(part) for part in np.array_split(kept, batches)])
    spread = float(np.std(per, ddof=1)) / math.sqrt(batches)
    return float(statistic(kept)), student_t(level, batches - 1) * spread


def steady(timeline: Timeline, warmup: float = 0.1) -> slice:
    """The requests the statistics keep, in arrival order."""
    n = timeline.prompt.size
    start = int(n * warmup)
    tail = min(timeline.concurrency, n // 10)
    return slice(start, max(n - tail, start + 1))


def throughput(timeline: Timeline) -> tuple[float, float]:
    """Requests and output tokens per second of the whole pool, in the steady window
    [request/s, token/s]."""
    order = np.argsort(timeline.done, kind="stable")
    done = timeline.done[order]
    lo, hi = int(done.size * 0.1), int(done.size * 0.9)
    span = done[hi] - done[lo] if hi > lo else 0.0
    if not span > 0:
        return math.nan, math.nan
    inside = (done > done[lo]) & (done <= done[hi])
    return float(inside.sum() / span), float(timeline.output[order][inside].sum() / span)


NULL_REASONS = "null_reasons"
"""The key of ``summarize``'s answer that says, of each statistic left null, why."""


def _times(
    name: str, values: np.ndarray, level: float, reasons: dict[str, str]
) -> dict[str, float]:
    """Mean, its confidence half-width and percentiles of one time [s]; each null (NaN),
    its reason in ``reasons``, where nothing was measured. A time is never 0: a request that
    took none is one the simulated clock could not resolve, not a measurement."""
    kept = values[~np.isnan(values)]
    resolved = kept[kept > 0]
    out: dict[str, float] = {}
    mean, half = batch_means(resolved, np.mean, level) if resolved.size else (math.nan, math.nan)
    out[f"{name}_mean_s"], out[f"{name}_mean_ci_s"] = mean, half
    for label, q in QUANTILES.items():
        out[f"{name}_{label}_s"] = float(np.quantile(resolved, q)) if resolved.size else math.nan
    if not kept.size:
        why = "no request in the steady window" + (
            " has a second token (O = 1)" if name == "tpot" and values.size else ""
        )
    elif resolved.size < kept.size:
        why = f"{kept.size - resolved.size} request(s) with a time of 0: not resolved"
    else:
        why = f"fewer than {2 * BATCHES} requests for {BATCHES} batch means"
    for column, value in out.items():
        if math.isnan(value):
            reasons[column] = why
    return out


def summarize(  # long: every statistic of the table, named as its columns
    timeline: Timeline,
    ttft_slo_s: float = math.inf,
    tpot_slo_s: float = math.inf,
    level: float = 0.95,
    warmup: float = 0.1,
) -> dict[str, Any]:
    """The statistics of one simulation, keyed as the columns of ``simulated.parquet``, and
    under ``NULL_REASONS`` why each statistic left null (NaN) has no value."""
    keep = steady(timeline, warmup)
    reasons: dict[str, str] = {}
    out: dict[str, Any] = {"requests": float(timeline.prompt.size)}
    for name, values in (
        ("ttft", timeline.ttft[keep]),
        ("tpot", timeline.tpot[keep]),
        ("latency", timeline.latency[keep]),
    ):
        out |= _times(name, values, level, reasons)
    tpot = timeline.tpot[keep]
    meets = (timeline.ttft[keep] <= ttft_slo_s) & (np.isnan(tpot) | (tpot <= tpot_slo_s))
    rate, tokens = throughput(timeline)
    replicas = timeline.makespan.size
    out["slo_attainment"] = float(meets.mean())
    out["requests_per_s"] = rate
    out["output_tokens_per_s"] = tokens
    out["goodput_requests_per_s"] = rate * out["slo_attainment"]
    if math.isnan(rate):
        for column in ("requests_per_s", "output_tokens_per_s", "goodput_requests_per_s"):
            reasons[column] = "the completions between the 10th and 90th percentile span no time"
    horizon = float(timeline.makespan.max())
    out["utilization"] = float(timeline.busy.sum() / (replicas * horizon))
    # Little's law over the whole run: the time-average of the waiting requests per replica
    out["mean_queue_length"] = float(np.sum(timeline.wait) / (replicas * horizon))
    out[NULL_REASONS] = reasons
    return out


def row_values(stats: dict[str, Any]) -> dict[str, Any]:
    """``summarize``'s answer as a table row: a NaN statistic is a null; ``NULL_REASONS``
    rides along (no column: the manifest reads it)."""
    return {k: v if k == NULL_REASONS or not math.isnan(v) else None for k, v in stats.items()}
