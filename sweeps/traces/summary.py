"""What a trace says about its workload: arrivals, burstiness, lengths, their correlation and
prefix reuse, as one JSON-ready document (``describe``).

- rate: requests per second over the trace's span, ``(n - 1) / (t_n - t_1)`` (null over a span
  of 0); over time, the requests of each ``bin_s`` window from the first arrival;
- burstiness: the coefficient of variation of the inter-arrival times (1 for Poisson
  arrivals; null with fewer than two intervals or a mean interval of 0);
- lengths: percentiles (numpy's linear interpolation), mean, CV, min and max of prompt and
  output tokens, and their Pearson and Spearman (rank, ties averaged) correlations;
- reuse (traces with prefix-block hashes): the exact LRU hit rate at capacities from one block
  to the working set (``sweeps.traces.reuse``), the unbounded cache's, the share of requests
  that find a cached prefix, and of later turns: requests that find more than their first
  block cached (a first block shared by every request is a system prompt, not a conversation).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps.errors import ConfigError
from sweeps.traces.reuse import COLD, hit_curve, replayed
from sweeps.traces.trace import Trace

PERCENTILES = (50, 90, 95, 99)
"""Length percentiles reported [%]."""

BIN_S = 60.0
"""Default width of the arrival-rate windows [s]."""

CAPACITIES = 20
"""Capacities of the reported LRU curve, log-spaced from one block to the working set."""


def _float(value: Any) -> float | None:
    """A finite number as a float, else None (JSON has no NaN)."""
    number = float(value)
    return number if np.isfinite(number) else None


def lengths(values: np.ndarray) -> dict[str, Any]:
    """Percentiles, mean, CV, min and max of one length column [token]."""
    data = values.astype(np.float64)
    mean = float(data.mean())
    cuts = np.percentile(data, PERCENTILES)
    return {
        "mean": mean,
        "cv": _float(data.std() / mean) if mean > 0 else None,
        "min": int(values.min()),
        "max": int(values.max()),
        **{f"p{p}": float(c) for p, c in zip(PERCENTILES, cuts, strict=True)},
    }


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their mean rank."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], values.size]
    mean_rank = (starts + ends + 1) / 2.0
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    x, y = x - x.mean(), y - y.mean()
    scale = np.sqrt((x * x).sum() * (y * y).sum())
    return _float((x * y).sum() / scale) if scale > 0 else None


def correlation(prompt: np.ndarray, output: np.ndarray) -> dict[str, float | None]:
    """Pearson and Spearman correlations of prompt and output tokens [1]."""
    x, y = prompt.astype(np.float64), output.astype(np.float64)
    return {"pearson": _pearson(x, y), "spearman": _pearson(_ranks(x), _ranks(y))}


def arrivals(times: np.ndarray, bin_s: float) -> dict[str, Any]:
    """The rate, its windows and the burstiness of arrival times [s]."""
    span = float(times[-1] - times[0])
    gaps = np.diff(times)
    mean_gap = float(gaps.mean()) if gaps.size else 0.0
    windows = np.floor((times - times[0]) / bin_s).astype(np.int64)
    counts = np.bincount(windows)
    return {
        "span_s": span,
        "rate": (times.size - 1) / span if span > 0 else None,
        "interarrival_cv": _float(gaps.std() / mean_gap)
        if gaps.size >= 2 and mean_gap > 0
        else None,
        "bin_s": bin_s,
        "peak_rate": float(counts.max() / bin_s),
        "per_bin": counts.tolist(),
    }


def reuse(trace: Trace, use_numba: bool | None = None) -> dict[str, Any] | None:
    """The LRU curve and the multi-turn shares of a trace with hashes; None without."""
    if not trace.has_hashes or trace.offsets is None:
        return None
    out = replayed(trace, use_numba)
    curve = hit_curve(trace, replay_out=out)
    held = out[:-1] < COLD
    counts = np.diff(trace.offsets)
    owner = np.repeat(np.arange(counts.size), counts)
    found = np.bincount(owner, weights=held, minlength=counts.size)
    top = max(curve.working_set, 1)
    capacities = np.unique(np.geomspace(1, top, CAPACITIES).round().astype(np.int64))
    return {
        "block_tokens": trace.block_tokens,
        "working_set_blocks": curve.working_set,
        "unbounded_hit_rate": curve.unbounded_rate,
        "requests_reusing": float((found >= 1).mean()),
        "later_turns": float((found >= 2).mean()),
        "curve": {
            "capacity_blocks": capacities.tolist(),
            "hit_rate": curve.rate_at(capacities).tolist(),
        },
    }


def describe(trace: Trace, bin_s: float = BIN_S, use_numba: bool | None = None) -> dict[str, Any]:
    """The workload of ``trace`` as a JSON-ready document (module docstring; SI units)."""
    if not (np.isfinite(bin_s) and bin_s > 0):
        msg = f"bin_s = {bin_s!r} must be a number of seconds > 0"
        raise ConfigError(msg)
    return {
        "source": trace.source,
        "format": trace.format,
        "rows": trace.rows or trace.requests,
        "requests": trace.requests,
        "dropped": dict(trace.dropped),
        "arrivals": arrivals(trace.arrival, bin_s),
        "prompt_tokens": lengths(trace.prompt),
        "output_tokens": lengths(trace.output),
        "correlation": correlation(trace.prompt, trace.output),
        "reuse": reuse(trace, use_numba),
    }
