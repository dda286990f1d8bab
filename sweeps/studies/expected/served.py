"""``serving_expected``: the named schedulers on expected step costs, beside the serving table.

Where a sweep has ``[serving]`` and ``axes.engine``, every named scheduler of the serving table
that has a closed form on expected steps (``priced``) is priced again, per engine, with each
step it runs composed from the measured kernels (``steps.ExpectedSteps``): TTFT, TPOT, latency,
the steady step, output tokens/s per device and whether the objectives are expected to be met.
Its own table, ``serving_expected.parquet``: every value in it is an expectation, none a bound
(the ``bound`` mode has no row; ``chunked-greedy`` a null with its reason). Feasibility in
memory is the serving table's own (it does not depend on step times).

It runs in the serving study (its settings: the token budget and the objectives) when the sweep
sets an engine. With the speculative or prefix axes it takes them as dims (``TECHNIQUES``): the
points at ``k = 0`` and ``h = 0`` are the plain ones bit for bit, the others priced with the
techniques composed on expected steps (``composed``); ``below_bound`` flags an expected TTFT or
TPOT below the serving table's bound mode. With the parallel axes it takes the ``ep``,
``dp_attention`` and ``pp`` dims, each configuration composed at each layout
(``expected.configs``), its per-device figures over the replica's ``tp x ep x pp`` devices
(``_devices``), as the serving table's. With both, the techniques are composed on each layout's
steps: the verify step ``step.decode``'s at ``rows_each = k + 1`` and the draft placed as
speculative_expected places it (``steps.expected_verify``), the hit prefill ``step.hit_prefill``
on the layout (its prompts whole on their ranks, as the layout's prefill with its crossing),
the reload over the tier from the layout's busiest device (docs/expected.md).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.engine.steps import cache_bytes, prefix_hit
from sweeps.studies.expected.composed import (
    GREEDY_NULL,
    ONE_TOKEN,
    UNPRICED,
    Composed,
    Hits,
    composed,
)
from sweeps.studies.expected.expected import configs, extra_dims, known_flag
from sweeps.studies.expected.priced import NOT_PRICED, prompt_counts
from sweeps.studies.expected.step import Config, hit_prefill
from sweeps.studies.expected.steps import (
    ExpectedSteps,
    expected_steps,
    expected_verify,
    heads,
    laid_out,
)
from sweeps.studies.serving.pools import mode_value

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
CONFIG_DIMS = DIMS[:8]
"""The configuration's dims and the batch, in the table's order."""
TECHNIQUES = ("spec_tokens", "spec_acceptance", "spec_draft", "prefix_hit_rate", "kv_tier")
"""The technique dims the table takes on where the sweep has them (``Analysis.extra_dims``;
the bound serving table's ``served.EXTRA_DIMS`` less the parallel ones): each point off its
plain value composed on expected steps (``composed``)."""
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
    plain = Composed(steps, grid_i, grid_o, budget)
    for j, mode in enumerate(modes):
        got = composed(mode, plain)
        for name in FIGURES[:4]:
            out[name][..., j] = got[name]
        out["per_device"][..., j] = got["rate"] * grid_o
    out["alone"][...] = steps.prefills(1, grid_i)[..., None]
    out["prefills"][...] = steps.prefills(steps.batch, grid_i)[..., None]
    out["decode"][...] = steps.decode(steps.batch, physics.mean_context(grid_i, grid_o))[..., None]
    return out


def _techniques(x: Inputs) -> tuple[str, ...]:
    """The technique dims of the grid (``TECHNIQUES`` it has), in their order."""
    return tuple(d for d in TECHNIQUES if d in x.values)


def _full(value: Any, dims: tuple[str, ...], sizes: dict[str, int]) -> np.ndarray:
    """``value`` (a Variable) over ``dims`` of ``sizes``, broadcast, as an array."""
    return np.asarray(value.set_dims({d: sizes[d] for d in dims}).transpose(*dims).values)


def _prefix_terms(
    x: Inputs, sizes: dict[str, int], extra: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Every point's hit rate and one prompt's prefix reload from its tier, over the
    configuration dims, the parallel axes ``extra`` (the busiest device's KV), then
    ``prefix_hit_rate``, ``kv_tier`` and ``prompt_tokens`` [1, s]."""
    hit = prefix_hit(x)
    cached = physics.whole_cached_tokens(x["prompt_tokens"], hit)
    reload = physics.reload_time(cache_bytes(x, cached), x["_tier_bandwidth"])
    dims = (*CONFIG_DIMS, *extra, "prefix_hit_rate", "kv_tier", "prompt_tokens")
    return _full(hit, dims, sizes), _full(reload + 0.0 * hit, dims, sizes)


def _spec_counts(batch: int, output: np.ndarray, ks: Any, alphas: Any) -> set[int]:
    """The prompt counts ``batched-prefill`` with random verify steps reads: the floor and
    ceiling of ``1 + (B - 1) / n`` (``composed._prefill_between``) [prompt]."""
    k, alpha, o = np.meshgrid(ks, alphas, output, indexing="ij")
    steps = np.maximum(physics.verify_steps(np.maximum(o - 1, 0), k, alpha), 1)
    low = np.floor(1 + (batch - 1) / steps)
    return {int(c) for c in np.unique(np.concatenate([low, low + 1]).reshape(-1)) if c <= batch}


def _hits(
    config: Config, steps: ExpectedSteps, counts: np.ndarray, prompt: np.ndarray, h: float,
    reload: np.ndarray,
) -> Hits:  # fmt: skip
    """The expected hit prefills of ``counts`` prompts of each ``prompt`` at hit rate ``h``,
    the LM head at the plain expected prefill's rows (``min(m (1 - h) I, B)``; on a parallel
    layout ``hit_prefill``'s own, the layout's prefill's: ``ExpectedSteps.crossing``)."""
    cached = physics.whole_cached_tokens(prompt, h).astype(np.int64)
    done = hit_prefill(config, counts, prompt, cached[None, :, None])
    if isinstance(done, str):
        nan = np.full((counts.size, prompt.size), np.nan)
        return Hits(counts, nan, cached, reload, np.full(prompt.size, done, dtype=object))
    new = counts[:, None] * (prompt - cached)[None, :]
    head = 0.0
    if not laid_out(config):
        head = heads(config, np.minimum(new, steps.batch)) - heads(config, counts)[:, None]
    reason = np.array(
        ["; ".join(sorted(set(r) - {""})) for r in done.reason[..., 0].T], dtype=object
    )
    return Hits(counts, done.ttft[..., 0] + head, cached, reload, reason)


def _technique_figures(  # long: one point's figures, reasons and basis
    t: Composed, modes: list[str], output: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each figure over (prompt, output, mode) of one technique point, and the reason of each
    null (object, the same shape)."""
    out = {name: np.full((*t.prompt.shape, len(modes)), np.nan) for name in FIGURES}
    reason = np.full(out["ttft"].shape, "", dtype=object)
    own = t.verify.reason if t.verify is not None else ""
    for j, mode in enumerate(modes):
        got = composed(mode, t)
        for name in FIGURES[:4]:
            out[name][..., j] = got[name]
        out["per_device"][..., j] = got["rate"] * output
        reason[..., j] = NOT_PRICED.get(mode, "")
        if mode in NOT_PRICED:
            continue
        empty = np.isnan(np.asarray(got["ttft"]))
        why = np.where(output == 1, ONE_TOKEN, GREEDY_NULL if mode == "chunked-greedy" else "")
        reason[..., j] = np.where(empty, np.where(why == "", UNPRICED, why), "")
    out["alone"][...] = t.alone[..., None]
    out["prefills"][...] = t.prefills(t.batch)[..., None]
    out["decode"][...] = t.steady[..., None]
    empty = np.isnan(out["ttft"])  # no TTFT, no figure of the row
    for name in (*FIGURES[:4], "per_device"):
        out[name][empty] = np.nan
    if t.hits is not None:  # a hit prefill not composed (MLA): the prefill modes' null
        said = np.broadcast_to(t.hits.reason[t.row][..., None], empty.shape)
        reason = np.where(empty & (said != ""), said, reason)
    if own:
        reason[...] = own
    return out, reason


def _compute(x: Inputs) -> dict[str, Any]:  # long: one loop fills every output array
    import xarray as xr

    serving = x.settings
    budget = float(serving.chunk_tokens) if serving.chunk_tokens > 0 else math.inf
    batch, prompt, output = (np.asarray(x[d].values) for d in DIMS[3:4] + DIMS[8:10])
    modes = [str(m) for m in np.asarray(x["mode"].values).reshape(-1)]
    every = configs(x)
    extra = extra_dims(x)  # the parallel axes, after the engine's
    tech = _techniques(x)
    tech_sizes = [int(x[d].size) for d in tech]
    dims = (*DIMS[:8], *tech, *extra, *DIMS[8:])
    sizes = [1 + max(i[n] for i, _ in every) for n in range(len(CONFIG) + len(extra))]
    config_sizes = (*sizes[:3], batch.size, *sizes[3 : len(CONFIG)])
    shape = (
        *config_sizes,
        *tech_sizes,
        *sizes[len(CONFIG) :],
        prompt.size,
        output.size,
        len(modes),
    )
    named = dict(zip(dims, shape, strict=True))
    out = {name: np.full(shape, np.nan) for name in FIGURES}
    basis, reason = np.full(shape, "", dtype=object), np.full(shape, "", dtype=object)
    longest = int(np.max(prompt) + np.max(output))
    spec = "spec_tokens" in tech
    ks = np.asarray(x["spec_tokens"].values, dtype=np.int64) if spec else np.zeros(1, np.int64)
    alphas = np.asarray(x["spec_acceptance"].values, dtype=np.float64) if spec else np.zeros(1)
    drafts = list(x["_draft_records"].values) if spec else [None]
    prefix = "prefix_hit_rate" in tech
    rates, reloads = _prefix_terms(x, named, extra) if prefix else (np.zeros(1),) * 2
    every_point = (slice(None),) * len(tech)  # the technique dims, before the layout's
    grid_i, grid_o = np.meshgrid(prompt.astype(float), output.astype(float), indexing="ij")
    for (m, h, t, k, kd, w, e, *layout), config in every:
        for b, slots in enumerate(batch):  # the largest step: B whole prompts, or B + B I
            counts = set(prompt_counts(int(slots), output))
            if spec:
                counts |= _spec_counts(int(slots), output, ks[ks > 0], alphas)
            tokens = int(slots * (np.max(prompt) + 1))
            reach = _reach(int(slots), prompt, budget)
            steps = expected_steps(
                config, int(slots), longest, tokens, tuple(sorted(counts)), reach
            )
            head: tuple[Any, ...] = (m, h, t, b, k, kd, w, e)
            at: tuple[Any, ...] = (*head, *layout)
            if steps.reason:
                reason[(*head, *every_point, *layout)] = steps.reason
                continue
            plain = _figures(steps, modes, prompt, output, budget)
            plain_reason = _plain_reasons(plain["ttft"], modes, output)
            priced_here = np.array([mode not in NOT_PRICED for mode in modes])
            here = rates[at] if prefix else np.zeros((1, 1, 1))  # (hit rate, tier, prompt)
            verify = {
                (i, d): expected_verify(
                    config,
                    int(slots),
                    int(kv),
                    drafts[d],
                    longest + int(kv),
                    tokens + int(slots) * (int(kv) + 1),
                    reach,
                )
                for i, kv in enumerate(ks)
                if kv > 0
                for d in range(len(drafts))
            }
            hits: dict[tuple[int, int], Hits] = {}
            order = np.array(sorted(c for c in counts if c >= 1), dtype=np.int64)  # 0: none
            for point in itertools.product(*(range(n) for n in tech_sizes)):
                chosen = dict(zip(tech, point, strict=True))
                i, a, d = (chosen.get(n, 0) for n in TECHNIQUES[:3])
                r, tier = chosen.get("prefix_hit_rate", 0), chosen.get("kv_tier", 0)
                rate = float(here[r, tier, 0])
                cell = (*head, *point, *layout)
                if ks[i] == 0 and rate == 0:  # the plain point: the plain figures
                    for name, values in plain.items():
                        out[name][cell] = values
                    basis[cell] = np.where(priced_here & (plain_reason == ""), steps.basis, "")
                    reason[cell] = plain_reason
                    continue
                hit = None
                if rate > 0:
                    if (r, tier) not in hits:
                        hits[(r, tier)] = _hits(
                            config, steps, order, prompt, rate, reloads[(*at, r, tier)]
                        )
                    hit = hits[(r, tier)]
                kv = (int(ks[i]), float(alphas[a]), verify[(i, d)]) if ks[i] > 0 else None
                composed_here = Composed(steps, grid_i, grid_o, budget, kv, hit)
                figures, why = _technique_figures(composed_here, modes, grid_o)
                for name, values in figures.items():
                    out[name][cell] = values
                reason[cell] = why
                worst = steps.basis if kv is None else _worst_of(steps.basis, kv[2].basis)
                basis[cell] = np.where(priced_here & (why == ""), worst, "")

    def var(values: np.ndarray) -> xr.Variable:
        return xr.Variable(dims, values)

    # per device of the replica's tp x ep x pp devices (the serving table's ``_devices``)
    per_device = (var(out["per_device"]) / x["_devices"]).transpose(*dims)

    feasible = x["serving_feasible"].set_dims(named).transpose(*dims)
    tpot = var(out["tpot"])
    ttft = var(out["ttft"])
    met = (
        feasible
        & (ttft <= serving.ttft_slo_s)
        & ((x["output_tokens"] == 1) | (tpot <= serving.tpot_slo_s))
    )
    meets = xr.where(np.isnan(ttft), np.nan, met.astype(np.float64)).transpose(*dims)
    faster = (ttft < mode_value(x, "serving_ttft_s", "bound")) | (
        (x["output_tokens"] > 1) & (tpot < mode_value(x, "tpot_s", "bound"))
    )
    return {
        "expected_serving_ttft_s": ttft,
        "expected_tpot_s": tpot,
        "expected_request_latency_s": var(out["latency"]),
        "expected_step_time_steady_s": var(out["steady"]),
        "expected_output_tokens_per_s_per_device": per_device,
        "expected_tokens_per_s_per_user": physics.tokens_per_s_per_user(tpot),
        "expected_meets_slo": meets,
        "serving_below_bound": known_flag(faster, ttft).transpose(*dims),
        "expected_serving_basis": var(basis),
        "expected_serving_reason": var(reason),
        "serving_expected_row": x["mode"] != "bound",
        "_expected_prefill_alone": var(out["alone"]),
        "_expected_prefills": var(out["prefills"]),
        "_expected_decode_steady": var(out["decode"]),
    }


def _reach(batch: int, prompt: np.ndarray, budget: float) -> int:
    """The largest step the modes take beyond ``B (I + 1)`` tokens: batched-prefill's
    ``B + 1`` whole prompts at ``O = 1`` (one slot group of ``B``, its larger ``B + 1`` read
    at no weight) and a chunked step's budget [token]."""
    beyond = (batch + 1) * int(np.max(prompt))
    return int(max(beyond, budget if math.isfinite(budget) else 0))


def _plain_reasons(ttft: np.ndarray, modes: list[str], output: np.ndarray) -> np.ndarray:
    """Why each (prompt, output, mode) of a plain point has no expected figure: the mode's
    (``NOT_PRICED``), else where its TTFT is null ``ONE_TOKEN`` at ``O = 1`` or
    ``UNPRICED``; "" where it has one."""
    out = np.full(ttft.shape, "", dtype=object)
    for j, mode in enumerate(modes):
        why = np.where(output == 1, ONE_TOKEN, UNPRICED)[None, :]
        out[..., j] = NOT_PRICED.get(mode) or np.where(np.isnan(ttft[..., j]), why, "")
    return out


def _worst_of(*names: str) -> str:
    """The least certain of the bases named."""
    rank = {"measured": 0, "interpolated": 1, "extrapolated": 2, "": 3}
    return max(names, key=rank.__getitem__)


def wanted(sweep: Any) -> bool:
    """An engine is set."""
    return bool(getattr(sweep, "engine", ()))


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
            f"The mode's steady step (t_d(B, I + O/2); chunked: the mean mixed step; with "
            f"speculation a slot's token, (t_verify + t_draft) n/(O - 1)), {_NOTE}",
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
            "serving_below_bound",
            "-",
            "The expected TTFT or TPOT is below the bound's (the serving table's bound mode at "
            "the same point; not clamped); null where there is no expectation",
            "nullbool",
            "below_bound",
            "full",
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
        "serving_below_bound",
        "expected_serving_basis",
        "expected_serving_reason",
    ),
    study="serving",
    applies=wanted,
    rows="serving_expected_row",
    count=_rows,
    whole=True,
    extra_dims=(*TECHNIQUES, *PARALLEL_DIMS),
)
