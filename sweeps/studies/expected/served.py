"""``serving_expected``: the named schedulers on expected step costs, beside the serving table.

Where a sweep has ``[serving]`` and ``axes.engine``, every named scheduler of the serving table
that has a closed form on expected steps (``priced``) is priced again, per engine, with each
step it runs composed from the measured kernels (``steps.ExpectedSteps``): TTFT, TPOT, latency,
the steady step, output tokens/s per device and whether the objectives are expected to be met.
Its own table, ``serving_expected.parquet``: every value in it is an expectation, none a bound
(the ``bound`` mode has no row; ``chunked-greedy`` a null with its reason). Feasibility in
memory is the serving table's own (it does not depend on step times).

It runs in the serving study (its settings: the token budget and the objectives) when the sweep
sets an engine; speculation and prefix caching are not composed on expected steps, so a sweep
with their studies gets no such table (docs/expected.md). With the parallel axes it takes the
``ep``, ``dp_attention`` and ``pp`` dims, each configuration composed at each layout
(``expected.configs``), its per-device figures over the replica's ``tp x ep x pp`` devices
(``_devices``), as the serving table's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.studies.expected.expected import configs, extra_dims
from sweeps.studies.expected.priced import NOT_PRICED, priced, prompt_counts
from sweeps.studies.expected.steps import ExpectedSteps, expected_steps

DIMS = (
    "model",
    "hardware",
    "tp",
    "batch",
    "kv_heads",
    "kv_dtype",
    "weight_dtype",
    "engine",
    "prompt_tokens",
    "output_tokens",
    "mode",
)
CONFIG = ("model", "hardware", "tp", "kv_heads", "kv_dtype", "weight_dtype", "engine")
"""The dims of one composition of the step (``steps.expected_steps`` is per these and batch),
then the parallel axes where the sweep has them (``expected.configs``)."""
NOT_COMPOSED = ("speculative", "prefix")
"""Studies whose techniques are not composed on expected steps: no table with them."""
FIGURES = ("ttft", "tpot", "latency", "steady", "per_device", "alone", "prefills", "decode")
"""The figures filled per mode. The pools' steps, the same at every mode: ``alone``, one
prompt's prefill alone, the prefill server's service time (``_expected_prefill_alone``);
``prefills``, a step of ``B`` whole prompts, ``t_p(B, I)`` (``_expected_prefills``, the
batched prefill pool's); ``decode``, the decode step ``t_d(B, I + O/2)``
(``_expected_decode_steady``, the decode pool's)."""


def _figures(
    steps: ExpectedSteps, modes: list[str], prompt: np.ndarray, output: np.ndarray, budget: float
) -> dict[str, np.ndarray]:
    """Each figure over (prompt, output, mode) of one configuration at one batch."""
    out = {name: np.full((prompt.size, output.size, len(modes)), np.nan) for name in FIGURES}
    grid_i, grid_o = np.meshgrid(prompt.astype(float), output.astype(float), indexing="ij")
    for j, mode in enumerate(modes):
        got = priced(mode, steps, grid_i, grid_o, budget)
        for name in FIGURES[:4]:
            out[name][..., j] = got[name]
        out["per_device"][..., j] = got["rate"] * grid_o
    out["alone"][...] = steps.prefills(1, grid_i)[..., None]
    out["prefills"][...] = steps.prefills(steps.batch, grid_i)[..., None]
    out["decode"][...] = steps.decode(steps.batch, physics.mean_context(grid_i, grid_o))[..., None]
    return out


def _compute(x: Inputs) -> dict[str, Any]:  # long: one loop fills every output array
    import xarray as xr

    serving = x.settings
    budget = float(serving.chunk_tokens) if serving.chunk_tokens > 0 else math.inf
    batch, prompt, output = (np.asarray(x[d].values) for d in DIMS[3:4] + DIMS[8:10])
    modes = [str(m) for m in np.asarray(x["mode"].values).reshape(-1)]
    every = configs(x)
    extra = extra_dims(x)  # the parallel axes, after the engine's
    dims = (*DIMS[:8], *extra, *DIMS[8:])
    sizes = [1 + max(i[n] for i, _ in every) for n in range(len(CONFIG) + len(extra))]
    shape = (*sizes[:3], batch.size, *sizes[3:], prompt.size, output.size, len(modes))
    out = {name: np.full(shape, np.nan) for name in FIGURES}
    basis, reason = np.full(shape, "", dtype=object), np.full(shape, "", dtype=object)
    longest = int(np.max(prompt) + np.max(output))
    for (m, h, t, k, kd, w, e, *layout), config in every:
        for b, slots in enumerate(batch):  # the largest step: B whole prompts, or B + B I
            counts = prompt_counts(int(slots), output)
            tokens = int(slots * (np.max(prompt) + 1))
            steps = expected_steps(config, int(slots), longest, tokens, counts)
            at: tuple[Any, ...] = (m, h, t, b, k, kd, w, e, *layout)
            if steps.reason:
                reason[at] = steps.reason
                continue
            for name, values in _figures(steps, modes, prompt, output, budget).items():
                out[name][at] = values
            basis[at] = steps.basis
            for j, mode in enumerate(modes):
                reason[(*at, Ellipsis, j)] = NOT_PRICED.get(mode, "")
                if mode in NOT_PRICED:
                    basis[(*at, Ellipsis, j)] = ""

    def var(values: np.ndarray) -> xr.Variable:
        return xr.Variable(dims, values)

    # per device of the replica's tp x ep x pp devices (the serving table's ``_devices``)
    per_device = (var(out["per_device"]) / x["_devices"]).transpose(*dims)

    feasible = x["serving_feasible"].set_dims(dict(zip(dims, shape, strict=True)))
    feasible = feasible.transpose(*dims)
    tpot = var(out["tpot"])
    ttft = var(out["ttft"])
    met = (
        feasible
        & (ttft <= serving.ttft_slo_s)
        & ((x["output_tokens"] == 1) | (tpot <= serving.tpot_slo_s))
    )
    meets = xr.where(np.isnan(ttft), np.nan, met.astype(np.float64)).transpose(*dims)
    return {
        "expected_serving_ttft_s": ttft,
        "expected_tpot_s": tpot,
        "expected_request_latency_s": var(out["latency"]),
        "expected_step_time_steady_s": var(out["steady"]),
        "expected_output_tokens_per_s_per_device": per_device,
        "expected_tokens_per_s_per_user": physics.tokens_per_s_per_user(tpot),
        "expected_meets_slo": meets,
        "expected_serving_basis": var(basis),
        "expected_serving_reason": var(reason),
        "serving_expected_row": x["mode"] != "bound",
        "_expected_prefill_alone": var(out["alone"]),
        "_expected_prefills": var(out["prefills"]),
        "_expected_decode_steady": var(out["decode"]),
    }


def wanted(sweep: Any) -> bool:
    """An engine is set, and no study whose technique is not composed on expected steps."""
    studies = getattr(sweep, "studies", {})
    return bool(getattr(sweep, "engine", ())) and not any(s in studies for s in NOT_COMPOSED)


def _rows(sweep: Any, dims: tuple[str, ...]) -> int:
    """Every point but the ``bound`` mode's [row]."""
    from sweeps.studies.serving.table import MODE

    named = len([m for m in MODE.labels(sweep) if str(m) != "bound"])
    return int(sweep.points([d for d in dims if d != "mode"])) * named


_V = Variable
_NOTE = "expected on the engine's measured kernels (no bound: see serving.parquet)"

SERVING_EXPECTED = Analysis(
    name="serving_expected",
    dims=DIMS,
    variables=(
        _V(
            "expected_serving_ttft_s",
            "s",
            f"Time to first token from admission, the mode's closed form, {_NOTE}",
            "nullable",
            "expected_ttft_s",
            "full",
        ),
        _V(
            "expected_tpot_s",
            "s",
            f"Mean time per output token, other requests' prefill stalls included, {_NOTE}; "
            "null at O = 1",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_request_latency_s",
            "s",
            f"Request latency, TTFT + (O - 1) TPOT, {_NOTE}",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_step_time_steady_s",
            "s",
            f"The mode's steady step (t_d(B, I + O/2); chunked: the mean mixed step), {_NOTE}",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_output_tokens_per_s_per_device",
            "token/s",
            f"Output throughput per device, saturated, {_NOTE}",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_tokens_per_s_per_user",
            "token/s",
            f"Speed one user sees, 1 / TPOT, {_NOTE}",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_meets_slo",
            "-",
            "Feasible in memory (the serving table's), and the expected TTFT and TPOT meet "
            "ttft_slo_s and tpot_slo_s (null where there is no expectation: see reason)",
            "nullbool",
            rank="full",
        ),
        _V(
            "expected_serving_basis",
            "-",
            "Least certain basis of the steps' kernels: measured, interpolated, extrapolated; "
            "empty: no expectation",
            "str",
            "basis",
            "full",
        ),
        _V(
            "expected_serving_reason",
            "-",
            "Why there is no expectation (no data for the device, engine or format; a mode not "
            "priced on expected steps); empty where there is one",
            "str",
            "reason",
            "full",
        ),
        _V("serving_expected_row", "-", "A named scheduler's row (not the bound)", "bool"),
    ),
    compute=_compute,
    needs=("model", "decode", "serving"),
    columns=(
        "expected_serving_ttft_s",
        "expected_tpot_s",
        "expected_request_latency_s",
        "expected_step_time_steady_s",
        "expected_output_tokens_per_s_per_device",
        "expected_tokens_per_s_per_user",
        "expected_meets_slo",
        "expected_serving_basis",
        "expected_serving_reason",
    ),
    study="serving",
    applies=wanted,
    rows="serving_expected_row",
    count=_rows,
    whole=True,
    extra_dims=PARALLEL_DIMS,
)
