"""``prefix_expected``: the hit prefill from measured kernels, beside its bound (issue 43).

Where a sweep has an engine (``axes.engine``) and a prefix hit rate (``axes.prefix_hit_rate``),
every prefill point of the prefix table is composed again from the engine's measured kernels
with its cached tokens skipped (``step.hit_prefill``): the prompts' first ``h I`` tokens
(whole tokens, at most ``I - 1``: ``physics.whole_cached_tokens``) are cached, the others
computed, their attention against the whole prompt read at the estimator's prefix and floored
at the measured decode attention of the same sequences at the whole prompt. Beside it the
bound of the same hit prefill, ``hit_compute_time_s`` of prefix.parquet (the prefix already in
HBM: no tier's reload is priced here), ``roofline_share`` the bound over the expectation and
``below_bound`` the flag of an expectation below it (counted in the manifest, never clamped).
At ``h = 0`` the expected prefill is expected.parquet's ``expected_ttft_s`` bit for bit.

On parallel layouts (``ep``, ``dp_attention``, ``pp``) the table takes their dims, as
expected.parquet does: the hit prefill is composed as ``compose`` composes its TTFT (the
prompts cross the stages at once, a rank's share of them; the dispatch and hand-offs of the
new tokens; the LM head over ``Config.shards``), beside the prefix table's bound at the same
layout.

Not composed, null with the reason: an MLA model's prefill after a cached prefix (the MLA
tables are read without one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.engine.prefill import DIMS as PREFILL_DIMS
from sweeps.measured.kernels import NAMES, NONE
from sweeps.studies.expected.expected import configs, extra_dims, known_flag
from sweeps.studies.expected.step import hit_prefill

DIMS = (*PREFILL_DIMS, "engine", "prefix_hit_rate")
"""The prefill table's dims, the engine and the hit rate (no tier: the prefix in HBM), and
``PARALLEL_DIMS`` where the sweep has them."""

POINT = ("batch", "prompt", "prefix_hit_rate")
"""The dims of one configuration's points (``step.hit_prefill``'s grid)."""


def _config_major(n: int) -> tuple[int, ...]:
    """The axes of a configuration-major array (``n`` configuration dims, the parallel axes
    last among them, then ``POINT``) in the order of ``DIMS`` and the parallel axes."""
    return (0, 1, 2, n, n + 1, 3, 4, 5, 6, n + 2, *range(7, n))


CONFIG_MAJOR = _config_major(7)
"""``_config_major`` of a grid without the parallel axes."""

NO_RATE = "no prefix hit rate at this point"
"""Why a point whose hit rate is null (none to compose at) has no expectation."""


def wanted(sweep: Any) -> bool:
    """An engine is set."""
    return bool(getattr(sweep, "engine", ()))


def _hit_rates(x: Inputs) -> np.ndarray:
    """The hit rate ``h`` of every point over ``DIMS`` less the engine, then the parallel
    axes where the sweep has them (the prefix table's ``hit_rate``: the axis's, or a trace's
    at the point's own cache) [1]."""
    dims = (*(d for d in DIMS if d != "engine"), *extra_dims(x))
    sizes = {
        d: int(x["kv_heads_count"].shape[1]) if d == "kv_heads" else int(x[d].size) for d in dims
    }
    rate = x["hit_rate"]  # a Variable: the axis's, or over the dims of a trace's cache
    expanded = rate.set_dims({**{d: 1 for d in dims}, **dict(rate.sizes)})
    values = np.asarray(expanded.transpose(*dims).values, dtype=np.float64)
    return np.broadcast_to(values, tuple(sizes.values()))


def _compute(x: Inputs) -> dict[str, Any]:
    import xarray as xr

    batch = np.asarray(x["batch"].values, dtype=np.int64)
    prompt = np.asarray(x["prompt"].values, dtype=np.int64)
    rates = _hit_rates(x)
    made = configs(x)
    n = len(made[0][0])
    sizes = tuple(1 + max(i[d] for i, _ in made) for d in range(n))
    grid = (*sizes, batch.size, prompt.size, int(x["prefix_hit_rate"].size))
    ttft = np.full(grid, np.nan)
    cached_out = np.full(grid, np.nan)
    codes = np.full(grid, NONE, dtype=np.int8)
    reasons = np.full(grid, "", dtype=object)
    for index, config in made:
        m, h, t, k, kd, w, _, *layout = index
        every: Any = slice(None)
        rate = rates[(m, h, t, every, every, k, kd, w, every, *layout)]  # (batch, prompt, hit)
        unknown = np.isnan(rate)  # no hit rate: nothing to compose (none is read as 0)
        cached = physics.whole_cached_tokens(prompt[None, :, None], np.where(unknown, 0.0, rate))
        cached_out[index] = np.where(unknown, np.nan, cached)
        done = hit_prefill(config, batch, prompt, cached)
        if isinstance(done, str):
            reasons[index] = done
            continue
        ttft[index] = np.where(unknown, np.nan, done.ttft)
        codes[index] = np.where(unknown, NONE, done.basis)
        reasons[index] = np.where(unknown, NO_RATE, done.reason)
    order, dims = _config_major(n), (*DIMS, *extra_dims(x))

    def var(values: np.ndarray) -> xr.Variable:
        return xr.Variable(dims, values.transpose(order), fastpath=True)

    expected = var(ttft)
    bound = x["hit_compute_time_s"]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = bound / expected
    return {
        "expected_cached_tokens": var(cached_out),
        "expected_hit_prefill_s": expected,
        "prefix_roofline_share": share,
        "prefix_below_bound": known_flag(expected < bound, expected),
        "prefix_expected_basis": var(NAMES[codes]),
        "prefix_expected_reason": var(reasons),
    }


_V = Variable

PREFIX_EXPECTED = Analysis(
    name="prefix_expected",
    dims=DIMS,
    variables=(
        _V(
            "expected_cached_tokens",
            "token",
            "Prompt tokens the expected hit prefill skips: h I to the nearest whole token, at "
            "most I - 1 (a full hit computes the last token); null: no hit rate",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_hit_prefill_s",
            "s",
            "Expected prefill of the batch's prompts with their cached tokens skipped (time to "
            "first token, the prefix in HBM), from measured kernels (null: see reason)",
            "nullable",
            rank="full",
        ),
        _V(
            "prefix_roofline_share",
            "1",
            "The bound over the expectation, hit_compute_time_s / expected_hit_prefill_s "
            "(above 1: the device measured faster than the catalog's roof)",
            "nullable",
            "roofline_share",
            "full",
        ),
        _V(
            "prefix_below_bound",
            "-",
            "The expected hit prefill is below its bound (not clamped: the catalog's peak or "
            "bandwidth is below what the device measured); null where there is no expectation",
            "nullbool",
            "below_bound",
            "full",
        ),
        _V(
            "prefix_expected_basis",
            "-",
            "Least certain basis of the hit prefill's kernels: measured, interpolated (a "
            "cached prefix is never measured), extrapolated; empty: no expectation",
            "str",
            "basis",
            "full",
        ),
        _V(
            "prefix_expected_reason",
            "-",
            "Why there is no expectation (device, engine, format or operation not in the "
            "database; an MLA prefill after a cached prefix); empty where there is one",
            "str",
            "reason",
            "full",
        ),
    ),
    compute=_compute,
    needs=("model", "prefill", "prefix"),
    study="prefix",
    applies=wanted,
    extra_dims=PARALLEL_DIMS,
    columns=(
        "hit_rate",
        "expected_cached_tokens",
        "hit_compute_time_s",
        "expected_hit_prefill_s",
        "prefix_roofline_share",
        "prefix_below_bound",
        "prefix_expected_basis",
        "prefix_expected_reason",
    ),
)
"""The expected hit prefill beside its bound (``prefix_expected.parquet``)."""
