"""Serving: requests of ``I`` prompt and ``O`` output tokens, batched three ways (docs/serving.md).

For every model, device, tp, batch, KV setting and dtype, and every workload (``I``, ``O``):

- ``static``: ``B`` requests start together; TTFT ``t_p(B, I)``, then the ``O - 1`` decode steps
  summed in closed form (``sweeps.physics.static_decode_time``);
- ``colocated``: continuous batching, ``B`` slots always full, each new prompt prefilled alone
  and stalling the decodes (section 2);
- ``chunked``: each step carries the ``B`` decodes and a chunk of a prompt within the token
  budget ``chunk_tokens`` (section 3), only when the budget is set.

Every time is a lower bound and every throughput an upper bound, per device as in the other
tables. Built from the per-step physics of ``steps``; the modes are stacked along the ``mode``
dim by ``where``. The Pareto flag needs a sort over each model and workload, so this analysis
runs on the grid's xarray Variables (and numpy), not on the benchmark's scalars.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.grid.analyses import served
from sweeps.grid.analyses.base import Analysis, Inputs, Variable
from sweeps.grid.analyses.steps import cache_bytes, prefill_work, step_coefficients, weights_read
from sweeps.physics._array import where

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


def _prefill_time(x: Inputs, batch: Any, prompt: Any) -> Any:
    """``t_p(B, I)``: the roofline time of ``batch`` prompts of ``prompt`` tokens [s] (with a
    prefix hit rate, the better of the hit prefill and recomputing: ``served``)."""
    return served.prefill_time(x, batch, prompt)


def _static(x: Inputs, flops: Any, nbytes: Any) -> dict[str, Any]:
    batch, prompt, output = x["batch"], x["prompt_tokens"], x["output_tokens"]
    ttft = _prefill_time(x, batch, prompt)
    decode = served.static_decode(x, prompt, output, flops, nbytes)
    latency = physics.request_latency(ttft, decode)
    tpot = physics.time_per_output_token(decode, output)
    return {
        "ttft": ttft,
        "tpot": tpot,
        "latency": latency,
        "steady": tpot,  # a static batch has no steady step: its mean step
        "per_device": batch * output / latency / x["tp"],
        "share": ttft / latency,
    }


def _colocated(x: Inputs, flops: Any, nbytes: Any) -> dict[str, Any]:
    batch, prompt, output = x["batch"], x["prompt_tokens"], x["output_tokens"]
    # per token of a slot: the step, or (t_verify + t_draft) / E with speculation
    steady = served.token_time(
        x,
        batch,
        physics.mean_context(prompt, output),
        physics.mean_local_context(prompt, output, x["_window"]),
        flops,
        nbytes,
    )
    alone = _prefill_time(x, 1, prompt)
    rate = physics.colocated_request_rate(batch, output, steady, alone)
    tpot = physics.colocated_tpot(batch, output, steady, alone)
    decodes = output > 1  # at O = 1 nothing decodes: no step in flight, no TPOT
    in_flight = where(decodes, steady, 0.0)
    ttft = alone + in_flight  # a new prompt waits for the step in flight, then runs alone
    return {
        "ttft": ttft,
        "tpot": tpot,
        "latency": ttft + where(decodes, (output - 1) * tpot, 0.0),
        "steady": steady,
        "_in_flight": in_flight,
        "per_device": physics.output_tokens_per_s_per_device(rate, output, x["tp"]),
        "share": physics.prefill_time_share(rate, alone),
        "_alone": alone,
    }


def _chunked(x: Inputs, flops: Any, nbytes: Any, budget: float) -> dict[str, Any]:
    batch, prompt, output = x["batch"], x["prompt_tokens"], x["output_tokens"]
    chunk = physics.chunk_tokens(batch, prompt, output, budget)
    context = physics.mean_context(prompt, output)
    local = physics.mean_local_context(prompt, output, x["_window"])
    decodes = output > 1  # at O = 1 no slot decodes: a step is a chunk of a prompt alone
    decode_flops = where(decodes, flops[0] + flops[1] * context + flops[2] * local, 0.0)
    prompt_flops, _, _ = prefill_work(x, 1, prompt)
    mixed_flops = physics.chunked_step_flops(decode_flops, prompt_flops, prompt, chunk)
    # the B slots' caches at their mean length, exact for local layers too (the decode step's
    # byte coefficients past its weights)
    caches = where(decodes, nbytes[1] * context + nbytes[2] * local, 0.0)
    mixed_bytes = physics.chunked_step_bytes(
        weights_read(x, batch + chunk), caches, cache_bytes(x, prompt / 2)
    )
    step = physics.roofline_time(mixed_flops, mixed_bytes, x["_peak"], x["_bandwidth"])
    ttft = physics.chunked_ttft(prompt, chunk, step)
    rate = physics.chunked_request_rate(prompt, chunk, step)
    return {
        "ttft": ttft,
        "tpot": where(decodes, step, np.nan),
        "latency": ttft + (output - 1) * step,
        "steady": step,
        "per_device": physics.output_tokens_per_s_per_device(rate, output, x["tp"]),
        "share": chunk / (batch + chunk),  # the step's tokens that are prompt tokens
        "chunk": chunk,
        "limited": physics.budget_limited(batch, prompt, output, budget),
    }


def _by_mode(mode: Any, **values: Any) -> Any:
    """Each mode's value on the ``mode`` dim: ``static=..., colocated=..., chunked=...``."""
    chosen = values["chunked"]
    for name in ("colocated", "static"):
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

    dims = SERVING.dims_over(set(x.values))
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


PER_DEVICE = "output_tokens_per_s_per_device"
TIMED = ("ttft", "tpot", "latency", "steady", "per_device", "share")
"""A mode's terms that are times, or follow from them."""


def _compute(x: Inputs) -> dict[str, Any]:
    serving, opt, mode = x.settings, x.options, x["mode"]
    batch, prompt, output = x["batch"], x["prompt_tokens"], x["output_tokens"]
    flops, nbytes = step_coefficients(x, batch)
    budget = float(serving.chunk_tokens) if serving.chunk_tokens > 0 else math.inf
    modes = {
        "static": _static(x, flops, nbytes),
        "colocated": _colocated(x, flops, nbytes),
        "chunked": _chunked(x, flops, nbytes, budget),
    }
    if served.speculates(x):  # a chunked step with speculation is not modelled: null
        plain = x["spec_tokens"] == 0
        modes["chunked"] = {
            key: where(plain, value, np.nan) if key in TIMED else value
            for key, value in modes["chunked"].items()
        }

    def pick(key: str) -> Any:
        return _by_mode(mode, **{name: terms[key] for name, terms in modes.items()})

    out = {
        "serving_ttft_s": pick("ttft"),
        "tpot_s": pick("tpot"),
        "request_latency_s": pick("latency"),
        "step_time_steady_s": pick("steady"),
        "output_tokens_per_s_per_device": pick("per_device"),
        "prefill_time_share": pick("share"),
    }
    out["tokens_per_s_per_user"] = physics.tokens_per_s_per_user(out["tpot_s"])
    chunk = modes["chunked"]
    out["chunk_tokens"] = where(mode == "chunked", chunk["chunk"], np.nan)
    out["budget_limited"] = (mode == "chunked") & chunk["limited"]
    # every slot can reach its full length I + O
    extra_weights, extra_cache = served.held(x, prompt + output)  # a draft's, if any
    wall = physics.max_batch(
        x["memory"],
        opt.memory_reserve,
        x["weight_bytes"] + extra_weights,
        cache_bytes(x, prompt + output) + extra_cache,
    )
    out["serving_feasible"] = batch <= wall
    tpot_ok = (output == 1) | (out["tpot_s"] <= serving.tpot_slo_s)
    ttft_ok = out["serving_ttft_s"] <= serving.ttft_slo_s
    out["meets_slo"] = out["serving_feasible"] & ttft_ok & tpot_ok
    out["cost_per_million_output_tokens_usd"] = physics.cost_per_million_tokens(
        x["price_per_hour"], out[PER_DEVICE]
    )
    out["price_as_of"] = x["hardware_price_as_of"]
    # each device at board power for the time it makes one output token: an estimate
    energy = physics.energy_per_token(x["_board_power"], 1, 1.0, out[PER_DEVICE])
    out["serving_energy_per_output_token_j"] = energy
    out["serving_output_tokens_per_joule"] = physics.tokens_per_joule(energy)
    out["on_pareto_front"] = _front(
        x, out["output_tokens_per_s_per_device"], out["tokens_per_s_per_user"], out["meets_slo"]
    )
    out["_prefill_alone"] = modes["colocated"]["_alone"]
    out["_colocated_steady"] = modes["colocated"]["steady"]
    out["_colocated_rate"] = physics.colocated_request_rate(
        batch, output, modes["colocated"]["steady"], modes["colocated"]["_alone"]
    )
    out["_colocated_tpot"] = modes["colocated"]["tpot"]
    out["_in_flight"] = modes["colocated"]["_in_flight"]
    out["_wall"] = wall
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
            "Time to first token bound: static t_p(B, I); colocated t_p(1, I) + "
            "the step in flight (none at O = 1); chunked ceil(I/c) mixed steps",
            column="ttft_s",
            rank="full",
        ),
        _V("tpot_s", "s", "Time per output token bound (null at O = 1)", rank="full"),
        _V("request_latency_s", "s", "Request latency bound, TTFT + (O - 1) TPOT", rank="full"),
        _V(
            "step_time_steady_s",
            "s",
            "Decode step bound in steady state (static: the mean "
            "step; colocated: t_d(B, I + O/2); chunked: the mixed step)",
            rank="full",
        ),
        _V(
            "output_tokens_per_s_per_device",
            "token/s",
            "Output throughput bound per device, saturated",
            rank="full",
        ),
        _V("tokens_per_s_per_user", "token/s", "Speed one user sees, 1 / TPOT", rank="full"),
        _V(
            "prefill_time_share",
            "1",
            "Share of device time in prefill (chunked: of a step's "
            "tokens); 1 - it is the decode share",
            rank="full",
        ),
        _V(
            "chunk_tokens",
            "token",
            "Prompt tokens a chunked step carries, c (null: other modes)",
            rank="full",
        ),
        _V(
            "budget_limited",
            "-",
            "The token budget cuts the chunk below B I / (O - 1)",
            "bool",
            rank="full",
        ),
        _V(
            "serving_feasible",
            "-",
            "Weights and B caches at full length I + O fit per device",
            "bool",
            column="feasible",
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
        _V("price_as_of", "-", "Date of the device-hour price the cost uses", "str"),
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
