"""The disaggregated plan's batched prefill pool (docs/serving.md section 5).

A prefill replica that prefills the waiting prompts together serves ``m / t_p(m, I)`` prompts
a second at ``m`` waiting. Over the grid's batches ``m`` (those whose prompts fit beside the
weights, and whose batch leaves room for the TTFT objective: a prompt waits for the batch in
flight, then for its own, ``(1 + q) t_p(m, I)`` at the quantile ``q``), the best service rate
sizes the pool, at most ``SLOT_LIMIT`` of it busy (Poisson bursts lengthen a batch). The
cycle at the rate each replica then sees is ``sweeps.physics.gated_cycle``: TTFT is ``1.5 T``
on average and ``(1 + q) T`` at the quantile ``q`` (a prompt arrives uniformly in a cycle),
plus the hand-off. A fluid reading: it ignores the spread of the batch sizes, which the
headroom covers. Open-loop load only (a closed loop keeps the single-prompt M/D/1 pool).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Inputs
from sweeps.physics._array import where
from sweeps.studies.serving.pools_colocated import QUANTILES, SLOT_LIMIT

Side = Callable[[Any, str], Any]
"""A device's value on one pool's dims (``prefill`` or ``decode``)."""


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
