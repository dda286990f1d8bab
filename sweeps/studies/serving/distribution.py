"""The ``bound`` row for a trace's length distribution (``[workload]``; docs/workloads.md).

At fixed lengths the bound over every scheduler is the roofline of one request's work,
``t_req = max(F / peak, (weights + Q) / bandwidth)`` (``bounds``). A trace's requests differ:
its replicas' busy time over ``n`` of them is at least the roofline of their summed work, so
the bound of the distribution is the roofline of its mean work (each part of
``bounds.request_parts`` averaged over the requests, not taken at the mean lengths: the
FLOPs ``F`` and bytes ``Q`` hold ``I^2 / 2``, ``O^2 / 2`` and ``I O`` terms, and
``E[I O] = E[I] E[O] + cov(I, O)`` is below the product of the means where the lengths
covary negatively). The weights each step reads are charged per token by chords of the
concave ``W(T)`` up to the largest step, ``B`` of the trace's longest prompts (``most``), and
the step count's maximum is taken of the summed steps, never per request: both are linear in
the mean lengths. The output tokens per second are the rate times the mean output ``E[O]``,
and TTFT the prefill of the mean prompt, rounded down (``t_p`` is increasing and convex in
``I``: the mean TTFT is at least it, Jensen).

The parts are evaluated over the trace's distinct ``(I, O)`` pairs on a ``request`` dim of
their own, in blocks of about ``BLOCK`` values an array, and summed weighted by their counts.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Inputs
from sweeps.studies.serving import bounds
from sweeps.studies.serving.closed_forms import Terms, prefill_time

REQUEST = "request"
"""The dim of a trace's distinct ``(I, O)`` pairs, reduced before anything is stored."""

BLOCK = 1 << 21
"""Values an array of a block holds at most (16 MiB of float64), beyond one pair a block: the
pairs evaluated at once are ``BLOCK`` over the points of the table's arrays."""


def requests(x: Inputs) -> Any:
    """The trace's length distribution (``trace.Requests``), or None without ``[workload]``."""
    if "_trace_requests" not in x.values:
        return None
    return np.asarray(x["_trace_requests"], dtype=object).item()


def _at(x: Inputs, prompt: np.ndarray, output: np.ndarray) -> Inputs:
    """``x`` with the lengths of some requests, on the ``request`` dim, for the workload's."""
    import xarray as xr

    values = {
        **x.values,
        "prompt_tokens": xr.Variable((REQUEST,), prompt),
        "output_tokens": xr.Variable((REQUEST,), output),
    }
    return dataclasses.replace(x, values=values)


def _reduce(parts: dict[str, Any], count: Any, total: dict[str, Any]) -> dict[str, Any]:
    """``total`` plus the block's ``parts`` weighted by ``count`` and summed over the requests
    (``most``: the largest), branch by branch."""
    out: dict[str, Any] = {}
    for key, value in parts.items():
        if isinstance(value, dict):
            out[key] = _reduce(value, count, total.get(key, {}))
            continue
        has = REQUEST in getattr(value, "dims", ())
        if key == "most":
            block = value.max(REQUEST) if has else value
            out[key] = np.maximum(total[key], block) if key in total else block
        else:
            block = (value * count).sum(REQUEST) if has else value * count.sum()
            out[key] = total[key] + block if key in total else block
    return out


def _mean(summed: dict[str, Any], n: float) -> dict[str, Any]:
    """Each sum of ``summed`` over ``n`` requests (``most`` as it is)."""
    return {
        key: _mean(value, n) if isinstance(value, dict) else value if key == "most" else value / n
        for key, value in summed.items()
    }


def _points(*values: Any) -> int:
    """Points the union of the dims of ``values`` spans [1]."""
    sizes: dict[str, int] = {}
    for value in values:
        sizes.update(getattr(value, "sizes", {}))
    return math.prod(sizes.values())


def mean_parts(x: Inputs, budget: float, lengths: Any, points: int) -> dict[str, Any]:
    """The parts of the bound (``bounds.request_parts``) averaged over the requests of
    ``lengths`` (``trace.Requests``), the largest prompt kept as ``most``; ``points``: the
    points a pair's arrays span, by which the pairs are cut into blocks."""
    import xarray as xr

    summed: dict[str, Any] = {}
    step = max(1, BLOCK // points)
    for start in range(0, lengths.prompt.size, step):
        cut = slice(start, start + step)
        terms = Terms(_at(x, lengths.prompt[cut], lengths.output[cut]), budget)
        count = xr.Variable((REQUEST,), lengths.count[cut])
        summed = _reduce(bounds.request_parts(terms), count, summed)
    return _mean(summed, float(lengths.count.sum()))


def distribution_bound(t: Terms, bound: dict[str, Any], lengths: Any) -> dict[str, Any]:
    """``bound``'s terms (``closed_forms.bound`` at the mean lengths, ``t``) with its rate,
    output tokens per device and TTFT those of the distribution ``lengths`` (module
    docstring); its TPOT stays the one at the mean context."""
    x = t.x
    points = _points(t.steady, t.alone, t.prompt_flops, t.seq_kv, t.prompt_cache)
    rate = 1 / bounds.request_time(t, mean_parts(x, t.budget, lengths, points))
    n = lengths.count.sum()
    mean_output = float((lengths.output * lengths.count).sum() / n)
    prompt = float(np.floor((lengths.prompt * lengths.count).sum() / n))
    ttft = prefill_time(x, 1, np.maximum(prompt, 1.0))
    per_device = physics.output_tokens_per_s_per_device(rate, mean_output, x["_devices"])
    return {**bound, "rate": rate, "per_device": per_device, "ttft": ttft}


def capped(named: Any, bound: Any) -> Any:
    """A named scheduler's output tokens per device at the mean lengths, ``named``, held at or
    under the distribution's ``bound`` (``distribution_bound``): its closed form prices the
    mean lengths, and no schedule of the trace's requests passes the bound, so what lies above
    it is the part of the estimate that cannot happen. A null stays null, and a null bound
    holds nothing (``fmax`` passes over it); arrays or xarray Variables, broadcast by their
    own rules [token/s]."""
    return named - np.fmax(named - bound, 0.0)
