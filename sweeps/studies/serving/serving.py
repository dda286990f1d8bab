"""Serving: requests of ``I`` prompt and ``O`` output tokens, by mode (docs/serving.md s. 0-3).

For every model, device, tp, batch, KV setting and dtype, and every workload (``I``, ``O``),
one row per mode of ``sweeps.studies.serving.closed_forms``:

- ``bound``: no scheduler with ``B`` slots and the token budget does better (section 2): the
  fluid throughput, TTFT ``t_p(1, I)`` alone, TPOT ``t_d(B, S_mean)``;
- ``static``: ``B`` requests start together (section 1);
- ``serial-prefill``, ``batched-prefill``, ``chunked-paced``, ``chunked-greedy``: what one
  named scheduler reaches, saturated, at roofline step costs (section 3): bounds for that
  scheduler, not for others. The chunked ones only with a token budget.

``[serving] schedulers`` picks the modes. Built from the per-step physics of ``steps``; the
modes are stacked along the ``mode`` dim by ``where``. The Pareto flag needs a sort over each
model and workload, so this analysis runs on the grid's xarray Variables, not on scalars.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.steps import cache_bytes
from sweeps.physics._array import where
from sweeps.studies.serving import served
from sweeps.studies.serving.bounds import corner
from sweeps.studies.serving.closed_forms import PRICED, QUANTILES, Terms, serial_prefill
from sweeps.studies.serving.distribution import capped, distribution_bound, requests

DIMS = (
    "model",
    "hardware",
    "tp",
    "batch",
    "kv_heads",
    "kv_dtype",
    "weight_dtype",
    "prompt_tokens",
    "output_tokens",
    "mode",
)


def _by_mode(mode: Any, values: dict[str, Any]) -> Any:
    """Each mode's value on the ``mode`` dim, from ``{mode: value}``."""
    names = list(values)
    chosen = values[names[-1]]
    for name in reversed(names[:-1]):
        chosen = where(mode == name, values[name], chosen)
    return chosen


def _full(value: Any, sizes: dict[str, int]) -> np.ndarray:
    """``value`` broadcast over every dim of ``sizes``, in that order."""
    import xarray as xr  # the declarations stay importable without it (sweeps validate)

    variable = value if isinstance(value, xr.Variable) else xr.Variable((), value)
    return variable.set_dims(sizes).transpose(*sizes).values


SCENARIO = ("model", "prompt_tokens", "output_tokens", "spec_acceptance", "prefix_hit_rate")
"""What a front is drawn within: a model, a workload, and the acceptance and hit rate it meets
(the draft, ``k`` and the tier are choices on the front, like the devices)."""


def _front(x: Inputs, per_device: Any, per_user: Any, meets: Any) -> Any:
    """On the Pareto front of its model and workload, among the points meeting the SLOs."""
    import xarray as xr

    from sweeps.studies import DIMS  # the registry: not at import

    dims = SERVING.dims_over(set(x.values), DIMS)
    sizes = {d: int(np.asarray(x[d]).size) for d in dims}
    scenario = [d for d in SCENARIO if d in sizes]
    group = np.arange(math.prod(sizes[d] for d in scenario)).reshape([sizes[d] for d in scenario])
    ok = _full(meets, sizes)
    on = physics.pareto_front(
        np.where(ok, _full(per_device, sizes), np.nan).reshape(-1),
        np.where(ok, _full(per_user, sizes), np.nan).reshape(-1),
        _full(xr.Variable(scenario, group), sizes).reshape(-1),
    )
    return xr.Variable(dims, on.reshape(tuple(sizes.values())))


def _compute(x: Inputs) -> dict[str, Any]:
    # long: every column of the table from the modes' terms, the memory walls and the SLOs
    serving, opt, mode = x.settings, x.options, x["mode"]
    batch, prompt, output = x["batch"], x["prompt_tokens"], x["output_tokens"]
    budget = float(serving.chunk_tokens) if serving.chunk_tokens > 0 else math.inf
    terms = Terms(x, budget)
    labels = [str(m) for m in np.asarray(mode).reshape(-1)]
    modes = {name: served.modelled(x, name, PRICED[name](terms)) for name in labels}
    lengths = requests(x)
    if "bound" in modes and lengths is not None:  # a trace's: the bound of its distribution
        modes["bound"] = distribution_bound(terms, modes["bound"], lengths)
    if "bound" in modes:  # its TPOT under every named scheduler's of the table
        modes["bound"] = corner(terms, modes["bound"], [modes[m] for m in labels if m != "bound"])

    def pick(key: str, default: Any = np.nan) -> Any:
        return _by_mode(mode, {name: got.get(key, default) for name, got in modes.items()})

    out = {
        "serving_ttft_s": pick("ttft"),
        "tpot_s": pick("tpot"),
        "request_latency_s": pick("latency"),
        "step_time_steady_s": pick("steady"),
        "output_tokens_per_s_per_device": pick("per_device"),
        "prefill_time_share": pick("share"),
        "chunk_tokens": pick("chunk"),
        "budget_limited": pick("limited", False),
    }
    if "bound" in modes and lengths is not None:  # a named rate at the means held under it
        top = modes["bound"]["per_device"]
        out["output_tokens_per_s_per_device"] = capped(out["output_tokens_per_s_per_device"], top)
    out["tokens_per_s_per_user"] = physics.tokens_per_s_per_user(out["tpot_s"])
    # paged caches hold the current lengths: a continuous batch fits at its mean occupancy;
    # a static batch, and fits_at_peak, need every slot at its full length I + O
    # a draft's weights and cache beside the target's, with speculation
    draft_weights, draft_cache = served.held(x, prompt + output)
    weights = x["weight_bytes"] + draft_weights
    wall = physics.max_batch(
        x["memory"], opt.memory_reserve, weights, cache_bytes(x, prompt + output) + draft_cache
    )
    mean_wall = physics.max_batch(
        x["memory"], opt.memory_reserve, weights, cache_bytes(x, prompt + output / 2) + draft_cache
    )
    out["fits_at_peak"] = batch <= wall
    out["serving_feasible"] = where(mode == "static", batch <= wall, batch <= mean_wall)
    tpot_ok = (output == 1) | (out["tpot_s"] <= serving.tpot_slo_s)
    ttft_ok = out["serving_ttft_s"] <= serving.ttft_slo_s
    out["meets_slo"] = out["serving_feasible"] & ttft_ok & tpot_ok
    out["cost_per_million_output_tokens_usd"] = physics.cost_per_million_tokens(
        x["price_per_hour"], out["output_tokens_per_s_per_device"]
    )
    out["price_as_of"] = x["hardware_price_as_of"]
    # each device at board power for the time it makes one output token: an estimate
    energy = physics.energy_per_token(
        x["_board_power"], 1, 1.0, out["output_tokens_per_s_per_device"]
    )
    out["serving_energy_per_output_token_j"] = energy
    out["serving_output_tokens_per_joule"] = physics.tokens_per_joule(energy)
    out["on_pareto_front"] = _front(
        x, out["output_tokens_per_s_per_device"], out["tokens_per_s_per_user"], out["meets_slo"]
    )
    # the requests' TPOT at the pools' percentiles: a spread where the slots free in groups
    # (serial- and batched-prefill), else every token at the mode's one TPOT
    for name in QUANTILES:
        key = f"tpot_{name}"
        spread = {m: got.get(key, got["tpot"]) for m, got in modes.items()}
        out[f"_{key}"] = where(output > 1, _by_mode(mode, spread), np.nan)
    serial = modes.get("serial-prefill") or serial_prefill(terms)
    out["_prefill_alone"] = terms.alone
    out["_colocated_steady"] = terms.steady
    out["_colocated_rate"] = serial["rate"]
    out["_colocated_tpot"] = serial["tpot"]
    out["_in_flight"] = where(terms.decodes, terms.steady, 0.0)
    out["_wall"] = wall
    out["_mean_wall"] = mean_wall
    # a prefill replica holds the weights and the prompt's cache; that cache crosses the link
    prompt_cache = cache_bytes(x, prompt)
    out["_prompt_cache"] = prompt_cache
    out["_prefill_fits"] = (
        physics.max_batch(x["memory"], opt.memory_reserve, x["weight_bytes"], prompt_cache) >= 1
    )
    return out


_V = Variable

SERVING = Analysis(
    name="serving",
    dims=DIMS,
    variables=(
        _V(
            "serving_ttft_s",
            "s",
            "Time to first token from admission: bound t_p(1, I); static t_p(B, I); "
            "serial-prefill t_p(1, I); batched-prefill its group's t_p(m, I); chunked: the "
            "1 + (I - 1)/c mixed steps a prompt spans (greedy paced by its slots: its own)",
            column="ttft_s",
            rank="full",
        ),
        _V(
            "tpot_s",
            "s",
            "Mean time per output token, the other requests' prefill stalls included "
            "(bound: t_d(B, I + O/2)); null at O = 1",
            rank="full",
        ),
        _V("request_latency_s", "s", "Request latency, TTFT + (O - 1) TPOT", rank="full"),
        _V(
            "step_time_steady_s",
            "s",
            "Step in steady state (static: the mean decode step; bound, serial- and "
            "batched-prefill: t_d(B, I + O/2); chunked: the mean mixed step)",
            rank="full",
        ),
        _V(
            "output_tokens_per_s_per_device",
            "token/s",
            "Output throughput per device, saturated (bound: no scheduler does better)",
            rank="full",
        ),
        _V("tokens_per_s_per_user", "token/s", "Speed one user sees, 1 / TPOT", rank="full"),
        _V(
            "prefill_time_share",
            "1",
            "Share of device time in prefill (chunked: of a step's tokens; null: bound); "
            "1 - it is the decode share",
            rank="full",
        ),
        _V(
            "chunk_tokens",
            "token",
            "Prompt tokens a chunked step carries on average, c (null: other modes)",
            rank="full",
        ),
        _V(
            "budget_limited",
            "-",
            "The token budget binds: a chunked scheduler balances at fewer decoders than B",
            "bool",
            rank="full",
        ),
        _V(
            "serving_feasible",
            "-",
            "Weights and B caches fit per device: at the mean occupancy I + O/2 (paged "
            "caches, continuous modes and bound), at the full length I + O (static)",
            "bool",
            column="feasible",
            rank="full",
        ),
        _V(
            "fits_at_peak",
            "-",
            "Weights and B caches at the full length I + O fit per device",
            "bool",
            rank="full",
        ),
        _V(
            "meets_slo",
            "-",
            "Feasible, TTFT <= ttft_slo_s and TPOT <= tpot_slo_s",
            "bool",
            rank="full",
        ),
        _V(
            "cost_per_million_output_tokens_usd",
            "USD",
            "Cost of a million output tokens at saturation, from price_per_hour (null: no price)",
            rank="full",
        ),
        _V(
            "price_as_of",
            "-",
            "Date of the device-hour price the cost uses (null: no price)",
            "date",
        ),
        _V(
            "serving_energy_per_output_token_j",
            "J/token",
            "Estimate: a device at board power per output token it makes (null: power unknown)",
            "nullable",
            column="energy_per_output_token_j",
            rank="full",
        ),
        _V(
            "serving_output_tokens_per_joule",
            "token/J",
            "Estimate: output tokens per joule at board power (null: power unknown)",
            "nullable",
            column="output_tokens_per_joule",
            rank="full",
        ),
        _V(
            "on_pareto_front",
            "-",
            "Not dominated in (tokens/s per device, tokens/s per user) "
            "among the points of its model and workload that meet the SLOs",
            "bool",
            rank="full",
        ),
    ),
    compute=_compute,
    needs=("model", "decode"),
    columns=(
        "serving_ttft_s",
        "tpot_s",
        "request_latency_s",
        "step_time_steady_s",
        "output_tokens_per_s_per_device",
        "tokens_per_s_per_user",
        "prefill_time_share",
        "chunk_tokens",
        "budget_limited",
        "serving_feasible",
        "fits_at_peak",
        "meets_slo",
        "cost_per_million_output_tokens_usd",
        "serving_energy_per_output_token_j",
        "serving_output_tokens_per_joule",
        "price_as_of",
        "on_pareto_front",
    ),
    study="serving",
    whole=True,
    extra_dims=served.EXTRA_DIMS,
)
