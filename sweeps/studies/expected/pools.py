"""``pools_expected``: how many devices a load needs by expectation, one plan per scheduler
and a disaggregated one.

The pools table's colocated plans (``sweeps.studies.serving.pools.colocated``: for every
usable batch the fewest replicas that meet the TTFT objective at ``[serving] slo_quantile``
and keep the slots at most 0.9 busy, then the batch with the fewest devices, then the lowest
cost) sized again, per engine, on the named schedulers' expected figures
(``serving_expected``): the same sizing, its step times the expected ones. The plan's
``devices`` in ``pools.parquet`` are sized on roofline steps, so no implementation of that
scheduler needs fewer; ``expected_devices`` here is what the measured kernels are expected to
need. Every column is an expectation; the TPOT percentiles are the mean (the slot groups'
spread is not priced on expected steps).

``pool_mode = "disaggregated"``: the pools table's disaggregated plan (``pools.disaggregated``,
the same code) on expected steps, a prefill pool and a decode pool both on the row's device
and tp (the pools table pairs every two devices; pairs of different devices are not sized on
expected steps): one prompt's expected prefill alone (the M/D/1 server), ``t_p(m, I)`` of
the batched prefill pool, the expected decode step ``t_d(B, I + O/2)``, the KV hand-off as
the bound's (a link, no kernel), feasibility in memory the serving table's. Null where a step
has no expectation or no batch meets the objectives, ``reason`` saying which (every row).
With the parallel axes the plans are per layout (``ep``, ``dp_attention``, ``pp`` dims, as the
pools table's), in whole replicas of ``tp x ep x pp`` devices.

With the speculative or prefix axes the table takes them as dims, as ``serving_expected``
does: every plan sized on that point's expected figures (the decode pool's step a slot's token,
``(t_verify + t_draft) n / (O - 1)``; the prefill the better of the hit prefill and
recomputing); with the parallel axes too, at each layout (``served``: the techniques on the
layout's steps).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.physics._array import where
from sweeps.schedulers import SCHEDULERS
from sweeps.studies.expected.composed import COMPOSED
from sweeps.studies.expected.served import TECHNIQUES, wanted
from sweeps.studies.serving.pools import (
    LOADS,
    QUANTILES,
    Load,
    Steps,
    colocated,
    disaggregated,
    mode_value,
)

PERCENTILES = tuple(QUANTILES)
"""The TTFT percentiles the plans report (the pools table's)."""
PLANNED = tuple(name for name in SCHEDULERS if name in COMPOSED)
"""The pools' one-pool schedulers that are priced on expected steps: one plan each."""
DISAGGREGATED = "disaggregated"
PLANS = [*PLANNED, DISAGGREGATED]
"""The plans of the table (``pool_mode``): each priced scheduler on one pool, and
disaggregated (a prefill and a decode pool on the row's device and tp)."""

DIMS = (
    "model",
    "hardware",
    "tp",
    "kv_heads",
    "kv_dtype",
    "weight_dtype",
    "engine",
    "prompt_tokens",
    "output_tokens",
    "pool_mode",
)

AS_SERVING = {
    "output_tokens_per_s_per_device": "expected_output_tokens_per_s_per_device",
    "tpot_s": "expected_tpot_s",
    "step_time_steady_s": "expected_step_time_steady_s",
    "serving_ttft_s": "expected_serving_ttft_s",
    **{f"_tpot_{name}": "expected_tpot_s" for name in QUANTILES},
}
"""What the colocated sizing reads of the serving table, read from the expected one."""


def _one_device(value: Any, side: str) -> Any:
    """Both pools on the one device and tp of the row: a device's value as it is."""
    return value


def _steps(x: Inputs) -> Steps:
    """The disaggregated plan's expected steps: one prompt alone at the grid's smallest batch
    (its LM head at ``min(I, B)`` rows: one row at ``B = 1``), ``t_p(m, I)`` and
    ``t_d(B, I + O/2)`` at each batch, feasibility in memory the serving table's."""
    batch = np.asarray(x["batch"].values)
    alone = x["_expected_prefill_alone"].isel(mode=0)
    return Steps(
        alone.isel(batch=int(np.argmin(batch))),
        x["_expected_prefills"].isel(mode=0),
        x["_expected_decode_steady"].isel(mode=0),
        mode_value(x, "serving_feasible", "bound"),
        _one_device,
    )


def _plans(x: Inputs, labels: list[str]) -> dict[str, dict[str, Any]]:
    """The plans of ``labels`` on expected steps: the colocated ones per scheduler
    (``PLANNED``) and the disaggregated one on the row's device and tp."""
    load = Load.of(x)
    wanted = {"slo": x.settings.slo_quantile, **QUANTILES}
    tables = {key: physics.md1_quantile_table(q) for key, q in wanted.items()}
    results = {**x.results, **{name: x[own] for name, own in AS_SERVING.items()}}
    results["_prefill_alone"] = x["_expected_prefill_alone"].isel(mode=0)
    results["prefill_time_share"] = 0.0 * x["expected_tpot_s"]  # not reported here
    view = Inputs(x.values, x.options, x.engine, results, x.settings)
    plans = {name: colocated(view, name, load, tables) for name in labels if name in PLANNED}
    if DISAGGREGATED in labels:
        plans[DISAGGREGATED] = disaggregated(x, load, tables, _steps(x))
    return plans


NO_PLAN = "no batch is expected to fit and meet ttft_slo_s and tpot_slo_s"
"""Why a plan with expected steps has none."""


def _reasons(x: Inputs, devices: Any, mode: Any) -> Any:
    """Why a row has no plan: the steps' own reason (``serving_expected``'s, e.g. a device not
    in the database) where no batch has expected steps, or a disaggregated row's smallest
    batch has none (its prefill alone is read there); else ``NO_PLAN``; empty with a plan."""
    import xarray as xr

    reason = mode_value(x, "expected_serving_reason", "static")  # a step's: any priced mode
    axis = reason.dims.index("batch")
    values = np.asarray(reason.values, dtype=object)
    smallest = np.take(values, int(np.argmin(np.asarray(x["batch"].values))), axis=axis)
    every = (values != "").all(axis=axis)
    rest = tuple(d for d in reason.dims if d != "batch")
    first, none = xr.Variable(rest, smallest), xr.Variable(rest, every)
    apart = mode == DISAGGREGATED
    probe = 0 * devices + 0 * none + 0 * apart  # the dims of every argument
    dims, sizes = probe.dims, dict(zip(probe.dims, probe.shape, strict=True))

    def full(value: Any) -> np.ndarray:
        return np.asarray(value.set_dims(sizes).transpose(*dims).values)

    said = full(first).astype(object)
    own = full(none).astype(bool) | (full(apart).astype(bool) & (said != ""))
    out = np.where(own, said, NO_PLAN).astype(object)
    out[np.isfinite(full(devices).astype(np.float64))] = ""
    return xr.Variable(dims, out)


def _compute(x: Inputs) -> dict[str, Any]:
    import xarray as xr  # the grid's; not at import (``sweeps validate`` stays light)

    mode = x["pool_mode"]
    labels = [str(m) for m in np.asarray(mode.values).reshape(-1)]
    plans = _plans(x, labels)

    def pick(key: str) -> Any:
        chosen: Any = np.nan
        for name, plan in plans.items():
            chosen = where(mode == name, plan[key], chosen)
        return chosen

    def time(key: str) -> Any:
        """A plan's time [s], null where it has none (an M/D/1 queue with no replica)."""
        value = pick(key)
        return where(np.isfinite(value), value, np.nan)

    devices, output = pick("devices"), x["output_tokens"]
    rate = where(np.isfinite(devices), pick("rate"), np.nan)  # no plan: no rate
    return {
        "expected_prefill_replicas": where(np.isfinite(devices), pick("prefill"), np.nan),
        "expected_replicas": pick("decode"),
        "expected_devices": devices,
        "expected_decode_batch": pick("batch"),
        "expected_pools_request_rate": rate,
        "expected_pools_ttft_s": time("ttft"),
        **{f"expected_pools_ttft_{n}_s": time(f"ttft_{n}") for n in QUANTILES},
        "expected_pools_tpot_s": time("tpot"),
        "expected_goodput_tokens_per_s_per_device": physics.goodput_per_device(
            rate, output, devices
        ),
        "expected_pools_cost_per_million_output_tokens_usd": physics.cost_per_million_tokens(
            pick("fleet"), rate * output
        ),
        "expected_slot_bound": where(np.isfinite(devices), pick("slot_bound") == 1, np.nan),
        "expected_pools_reason": _reasons(x, devices, mode),
        "pools_expected_row": xr.Variable(mode.dims, np.isin(mode.values, PLANS)),
    }


def _rows(sweep: Any, dims: tuple[str, ...]) -> int:
    """Every point of the planned modes (``PLANNED``, and disaggregated) [row]."""
    from sweeps.studies.serving.table import POOL_MODE

    planned = len([m for m in POOL_MODE.labels(sweep) if str(m) in PLANS])
    return int(sweep.points([d for d in dims if d != "pool_mode"])) * planned


_V = Variable
_E = "expected on the engine's measured kernels"


def _ttft(name: str) -> Variable:
    return _V(
        f"expected_pools_ttft_{name}_s",
        "s",
        f"Time to first token under the load, its {name} (M/D/1 waits), {_E}",
        "nullable",
        "",
        "full",
    )


POOLS_EXPECTED = Analysis(
    name="pools_expected",
    dims=DIMS,
    variables=(
        _V(
            "expected_prefill_replicas",
            "replica",
            f"Prefill replicas of the plan (colocated: the replicas), {_E}",
            "count",
            "",
            "full",
        ),
        _V(
            "expected_replicas",
            "replica",
            f"Decode replicas of the plan (colocated: the replicas), {_E}",
            "count",
            "",
            "full",
        ),
        _V(
            "expected_devices",
            "device",
            f"Devices of the plan, replicas times tp (disaggregated: both pools'), {_E} (the "
            "pools table's devices: sized on roofline steps)",
            "count",
            "",
            "full",
        ),
        _V(
            "expected_decode_batch",
            "sequence",
            "Batch of the plan: colocated, the one with the fewest devices, then the lowest "
            f"cost; disaggregated, the largest that fits and meets the TPOT objective, {_E}",
            "count",
            "",
            "full",
        ),
        _V(
            "expected_pools_request_rate",
            "request/s",
            f"Requests per second the plan serves, {_E}",
            "nullable",
            "",
            "full",
        ),
        _V(
            "expected_pools_ttft_s",
            "s",
            f"Mean time to first token at this load, {_E}",
            "nullable",
            "",
            "full",
        ),
        *(_ttft(name) for name in PERCENTILES),
        _V(
            "expected_pools_tpot_s",
            "s",
            f"Mean time per output token of the plan's batch, {_E}",
            "nullable",
            "",
            "full",
        ),
        _V(
            "expected_goodput_tokens_per_s_per_device",
            "token/s",
            f"Output tokens per second over every device of the plan at this load, {_E}",
            "nullable",
            "",
            "full",
        ),
        _V(
            "expected_pools_cost_per_million_output_tokens_usd",
            "USD",
            f"Fleet cost of a million output tokens at this load, {_E} (null: no price)",
            "nullable",
            "",
            "full",
        ),
        _V(
            "expected_slot_bound",
            "-",
            "The replicas were set by the slots (at most 0.9 busy), not by the prefill queue "
            "(disaggregated: false; null: no plan)",
            "nullbool",
            "",
            "full",
        ),
        _V(
            "expected_pools_reason",
            "-",
            "Why the row has no plan: no expected steps (the steps' reason, as in "
            "serving_expected), or none is expected to fit and meet the objectives; empty "
            "where there is one",
            "str",
            "reason",
            "full",
        ),
        _V(
            "pools_expected_row",
            "-",
            "A one-pool scheduler priced on expected steps, or disaggregated",
            "bool",
        ),
    ),
    compute=_compute,
    needs=("serving", "serving_expected"),
    columns=(
        "expected_prefill_replicas",
        "expected_replicas",
        "expected_devices",
        "expected_decode_batch",
        "expected_pools_request_rate",
        "expected_pools_ttft_s",
        *(f"expected_pools_ttft_{n}_s" for n in PERCENTILES),
        "expected_pools_tpot_s",
        "expected_goodput_tokens_per_s_per_device",
        "expected_pools_cost_per_million_output_tokens_usd",
        "expected_slot_bound",
        "expected_pools_reason",
    ),
    study="serving",
    applies=wanted,
    rows="pools_expected_row",
    count=_rows,
    whole=True,
    extra_dims=(*TECHNIQUES, *PARALLEL_DIMS, *LOADS),
)
