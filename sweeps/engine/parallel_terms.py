"""The link terms of a replica of ``tp x ep x pp`` devices, shared by the step analyses.

A step's bound is ``max(compute, memory, link)`` with the expert all-to-all on the link
(beyond-the-step.md section 3), and a token's latency adds ``pp - 1`` pipeline hand-offs to
it. Both exist only in a sweep with the parallel axes: without them no term is computed,
and every table is what it was.
"""

from __future__ import annotations

from typing import Any

from sweeps import physics
from sweeps.engine.base import Inputs

PARALLEL_DIMS = ("ep", "dp_attention", "pp")
"""The dims of the parallel axes, taken on by the step analyses when the sweep has them."""


def parallel(x: Inputs) -> bool:
    """True where the sweep has the parallel axes (their dims are in the grid)."""
    return "ep" in x.values


def all_to_all_bytes(x: Inputs, tokens: Any) -> Any:
    """Bytes one device sends for the expert all-to-all in a step of ``tokens`` [byte]."""
    return physics.all_to_all_bytes(
        tokens,
        x["experts_per_token"],
        x["hidden_size"],
        x.options.activation_bytes,
        x["_moe_layers"] / x["_pp"],
        x["tp"],
        x["_ep"],
    )


def handoff_time(x: Inputs, tokens: Any) -> Any:
    """One pipeline hand-off of a step of ``tokens`` (a micro-batch of ``tokens / pp``) over
    the scale-up link [s]; NaN where the catalog has no link figure."""
    nbytes = physics.handoff_bytes(
        tokens, x["hidden_size"], x.options.activation_bytes, x["tp"], x["_ep"], x["_pp"]
    )
    return physics.link_time(nbytes, x["_scale_up"])


def link_time(x: Inputs, tokens: Any) -> Any:
    """The all-to-all's time over the scale-up link [s]; NaN where it is unknown."""
    return physics.link_time(all_to_all_bytes(x, tokens), x["_scale_up"])


def step_times(x: Inputs, tokens: Any, roof_time: Any) -> tuple[Any, Any]:
    """A step's bound with the link, ``max(roof, link)``, and a token's latency, that plus
    ``pp - 1`` hand-offs [s, s]; ``roof_time`` itself for both without the parallel axes.
    A link the catalog does not know bounds nothing (the bound stands without it)."""
    if not parallel(x):
        return roof_time, roof_time
    bound = physics.step_bound(roof_time, physics.known(link_time(x, tokens)))
    latency = physics.pipeline_latency(bound, physics.known(handoff_time(x, tokens)), x["_pp"])
    return bound, latency
