"""The traces' benchmark line: a generated 1e6-request trace read and described, and its
exact LRU curve at 20 capacities (issue 47: under 3 s and under 10 s).

The trace is generated, seeded: Poisson arrivals, lognormal lengths, and conversations whose
turns share their first blocks (a system-prompt block every request shares, then the
conversation's own), so that the LRU replay has reuse to find. The read and the description
run on the package's CSV written to a temporary folder; the curve on the trace with hashes.
The numba replay is warmed up first, so compilation is not timed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

SUMMARY_BUDGET_S = 3.0
"""What reading and describing 1e6 requests may take [s]."""

CURVE_BUDGET_S = 10.0
"""What the LRU curve of 1e6 requests at 20 capacities may take [s]."""

MAX_BLOCKS = 64
"""Most 512-token blocks of one generated prompt [block]."""


def generated(requests: int, seed: int = 0) -> Any:
    """A seeded trace of ``requests`` requests with prefix hashes (module docstring)."""
    from sweeps.traces import Trace

    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / 300, requests))
    prompt = np.clip(np.rint(rng.lognormal(7.0, 1.0, requests)), 1, MAX_BLOCKS * 512)
    output = np.maximum(np.rint(rng.lognormal(5.0, 0.8, requests)), 1)
    blocks = np.ceil(prompt / 512).astype(np.int64)
    conversation = rng.integers(0, max(requests // 4, 1), requests)
    offsets = np.concatenate([[0], np.cumsum(blocks)])
    owner = np.repeat(np.arange(requests), blocks)
    position = np.arange(offsets[-1]) - offsets[owner]
    hashes = np.where(position == 0, 0, 1 + conversation[owner] * MAX_BLOCKS + position)
    return Trace(
        arrival=arrival, prompt=prompt.astype(np.int64), output=output.astype(np.int64),
        hashes=hashes.astype(np.int64), offsets=offsets, block_tokens=512, format="mooncake",
        source="generated",
    )  # fmt: skip


def measure_traces(requests: int = 1_000_000) -> dict[str, Any]:
    """Time reading and describing a generated trace of ``requests`` requests (the package's
    CSV), and its LRU curve at 20 capacities.

    Returns ``requests`` [1], ``blocks`` [1], ``read_s``, ``describe_s``, ``curve_s`` [s], the
    budgets scaled to ``requests`` [s] and whether each was met.
    """
    import polars as pl

    from sweeps.bench.timing import timed
    from sweeps.traces import describe, hit_curve, read_trace

    trace = generated(requests)
    hit_curve(generated(100))  # the compiled replay loaded (or compiled) before timing
    with tempfile.TemporaryDirectory(prefix="sweeps-bench-traces-") as tmp:
        path = Path(tmp) / "trace.csv"
        frame = {"arrival_s": trace.arrival, "prompt_tokens": trace.prompt}
        pl.DataFrame({**frame, "output_tokens": trace.output}).write_csv(path)
        read_s, plain = timed(lambda: read_trace(path))
    describe_s = timed(lambda: describe(plain))[0]

    def curve() -> Any:
        found = hit_curve(trace)
        return found.rate_at(np.geomspace(1, max(found.working_set, 1), 20).round())

    curve_s = timed(curve)[0]
    scale = requests / 1_000_000
    return {
        "requests": requests,
        "blocks": int(trace.hashes.size),
        "read_s": read_s,
        "describe_s": describe_s,
        "curve_s": curve_s,
        "summary_budget_s": SUMMARY_BUDGET_S * scale,
        "curve_budget_s": CURVE_BUDGET_S * scale,
        "summary_within_budget": read_s + describe_s <= SUMMARY_BUDGET_S * scale,
        "curve_within_budget": curve_s <= CURVE_BUDGET_S * scale,
    }


def format_traces(result: dict[str, Any]) -> str:
    """The line ``sweeps bench`` prints for ``measure_traces``."""
    met = {True: "met", False: "MISSED"}
    return (
        f"traces: {result['requests']:,} generated requests read in {result['read_s']:.2f} s "
        f"and described in {result['describe_s']:.2f} s (budget "
        f"{result['summary_budget_s']:.2f} s {met[result['summary_within_budget']]}); "
        f"LRU curve of {result['blocks']:,} blocks at 20 capacities in "
        f"{result['curve_s']:.2f} s (budget {result['curve_budget_s']:.2f} s "
        f"{met[result['curve_within_budget']]})"
    )
