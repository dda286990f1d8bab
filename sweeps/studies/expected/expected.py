"""Expected: the step, TTFT and rates from measured kernels, beside the bounds (``axes.engine``).

For each engine of ``axes.engine`` (the ``measured`` extra), every decode point's step is
composed from the measured latencies of the operations the cost model counts
(``sweeps.studies.expected.step``): the expected step and tokens/s, the time per token and tokens/s
per device at batch 1 and at the memory wall, the TTFT of the batch's prompts of ``context``
tokens, and ``roofline_share``, the bound (``step_time_s``) over the expected step. An
expected step below its bound is not clamped: ``below_bound`` flags it (the catalog's peak
or bandwidth is below what the device measured). ``kernels`` writes each operation's
expected and bound time. A device, engine or format the database does not hold gives nulls,
and ``expected_reason`` says why.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.decode import DIMS as DECODE_DIMS
from sweeps.engine.parallel_terms import PARALLEL_DIMS, parallel
from sweeps.measured.database import OPERATIONS
from sweeps.measured.kernels import NAMES, NONE
from sweeps.studies.expected.step import Config, compose

DIMS = (*DECODE_DIMS, "engine")
"""The decode table's dims and the engine (and ``PARALLEL_DIMS`` where the sweep has them)."""

CONFIGURATION = tuple(d for d in DIMS if d not in ("batch", "context"))
"""The dims of one configuration (what one composition of the step is per), without the
parallel axes (``_configuration`` adds them where the sweep has them)."""


def _configuration(x: Inputs) -> tuple[str, ...]:
    """The dims of one configuration in this grid: ``CONFIGURATION``, then the parallel axes
    where the sweep has them."""
    return (*CONFIGURATION, *PARALLEL_DIMS) if parallel(x) else CONFIGURATION


def _layouts(x: Inputs) -> list[tuple[int, bool, int]]:
    """The parallel axes' values, ``ep``, data-parallel attention and ``pp`` (one layout,
    ``(1, True, 1)``, without them)."""
    if not parallel(x):
        return [(1, True, 1)]
    eps = [int(v) for v in x["_ep"].values]
    dps = [bool(v == 1.0) for v in x["_dp"].values]  # the axis's labels are strings
    pps = [int(v) for v in x["_pp"].values]
    return list(itertools.product(eps, dps, pps))


def extra_dims(x: Inputs) -> tuple[str, ...]:
    """The parallel axes' dims where the sweep has them, else none: the dims the expected
    tables add after their own (``Analysis.extra_dims``)."""
    return PARALLEL_DIMS if parallel(x) else ()


def configs(x: Inputs) -> list[tuple[tuple[int, ...], Config]]:
    """Every configuration of the grid, with its index over ``_configuration``: over
    ``served.CONFIG``, then the parallel axes where the sweep has them (each configuration at
    each of ``_layouts``; the tables on expected steps compose each, ``prefix_expected`` and
    ``speculative_expected`` too)."""
    models, devices = x["_model_records"].values, x["_device_records"].values
    choices, tps = x["_engine_choices"].values, x["tp"].values
    kv_names, w_names = x["kv_dtype"].values, x["weight_dtype"].values
    kv_counts, kv_bytes = x["kv_heads_count"].values, x["kv_bytes"].values
    w_bytes, peaks = x["weight_bytes_per_param"].values, x["peak_flops"].values
    ratio = x["_attention_ratio"].values
    sizes = (
        len(models),
        len(devices),
        len(tps),
        kv_counts.shape[1],
        len(kv_names),
        len(w_names),
        len(choices),
    )
    layouts = _layouts(x)
    shape = (len(x["ep"]), len(x["dp_attention"]), len(x["pp"])) if parallel(x) else ()
    out = []
    for index in itertools.product(*(range(n) for n in sizes)):
        m, h, t, k, kd, w, e = index
        peak = float(peaks[h, w])
        for place, (ep, dp, pp) in enumerate(layouts):
            config = Config(
                models[m], devices[h], int(tps[t]), int(kv_counts[m, k]), str(kv_names[kd]),
                str(w_names[w]), float(kv_bytes[kd]), float(w_bytes[w]), peak,
                peak / float(ratio[h, kd, w]), choices[e], ep, dp, pp,
            )  # fmt: skip
            at = tuple(int(i) for i in np.unravel_index(place, shape))
            out.append(((*index, *at), config))
    return out


def _config_major(n: int) -> tuple[int, ...]:
    """The axes of a configuration-major array (``n`` configuration dims, then batch,
    context) in ``DIMS``' order: each configuration's grid is one contiguous block, written
    at once."""
    return (0, 1, 2, n, n + 1, *range(3, n))


CONFIG_MAJOR = _config_major(len(CONFIGURATION))
"""``_config_major`` of a grid without the parallel axes."""


def _compute(x: Inputs) -> dict[str, Any]:  # long: one loop fills every output array
    batch, context = x["batch"].values, x["context"].values
    every = configs(x)
    n = len(_configuration(x))
    sizes = tuple(1 + max(int(i[d]) for i, _ in every) for d in range(n))
    grid = (*sizes, len(batch), len(context))
    outs = {name: np.full(grid, np.nan) for name in ("step", "ttft")}
    per_context = {name: np.full((*sizes, len(context)), np.nan) for name in ("b1", "wall")}
    codes = np.full(grid, NONE, dtype=np.int8)
    reasons = np.full(sizes, "", dtype=object)
    per_op = (*sizes, len(OPERATIONS), *grid[-2:])
    kernel = {name: np.empty(per_op) for name in ("expected", "bound", "share")}  # each block set
    kernel_basis = np.empty(per_op, dtype=np.int8)
    max_batch = _max_batch(x)
    for index, config in every:
        mi, hi, ti, ki, kdi, wi, _, *layout = index
        where: tuple[Any, ...] = (mi, hi, ti, slice(None), ki, kdi, wi, *layout)
        walls = max_batch[where]
        fits = walls >= 1
        done = compose(config, batch, context, walls[fits].astype(np.int64), context[fits])
        if isinstance(done, str):
            reasons[index] = done
            for values in kernel.values():
                values[index] = np.nan
            kernel_basis[index] = NONE
            continue
        outs["step"][index], outs["ttft"][index] = done.step, done.ttft
        per_context["b1"][index] = done.b1
        per_context["wall"][index][fits] = done.wall
        codes[index] = done.step_basis
        reasons[index] = done.reason
        for o, op in enumerate(OPERATIONS):  # an operation the model lacks: 0 s, "measured"
            expected, bound = done.expected.get(op, 0.0), done.bound.get(op, 0.0)
            kernel["expected"][index][o], kernel["bound"][index][o] = expected, bound
            with np.errstate(invalid="ignore", divide="ignore"):
                kernel["share"][index][o] = np.divide(bound, expected)  # at its own dims
            kernel_basis[index][o] = done.basis.get(op, 0)
    major = _config_major(n)
    kernel_order = (0, 1, 2, n + 1, n + 2, *range(3, 7), n, *range(7, n))
    return _outputs(
        x,
        {name: values.transpose(major) for name, values in outs.items()}
        | {name: np.moveaxis(values, -1, 3) for name, values in per_context.items()},
        NAMES[codes.transpose(major)],
        np.broadcast_to(reasons[..., None, None], grid).transpose(major),
        {name: values.transpose(kernel_order) for name, values in kernel.items()},
        NAMES[kernel_basis.transpose(kernel_order)],
    )


def known_flag(flag: Any, value: Any) -> Any:
    """``flag`` as 1 or 0, NaN where ``value`` (the expectation it is said of) is NaN: a yes or
    no about an expectation is null where there is none, never false."""
    import xarray as xr

    return xr.where(np.isnan(value), np.nan, flag.astype(np.float64))


WALL_DIMS = tuple(d for d in DECODE_DIMS if d != "batch")


def _wall_dims(x: Inputs) -> tuple[str, ...]:
    """The memory wall's dims in this grid: ``WALL_DIMS``, then the parallel axes where the
    sweep has them."""
    return (*WALL_DIMS, *PARALLEL_DIMS) if parallel(x) else WALL_DIMS


def _max_batch(x: Inputs) -> np.ndarray:
    """The memory wall (decode's ``max_batch``) over ``_wall_dims`` [sequence]."""
    wall = x["max_batch"]
    dims = _wall_dims(x)
    sizes = {
        d: int(x[d].size) if d != "kv_heads" else int(x["kv_heads_count"].shape[1]) for d in dims
    }
    expanded = wall.set_dims({**{d: 1 for d in dims}, **dict(wall.sizes)})
    return np.broadcast_to(expanded.transpose(*dims).values, tuple(sizes.values()))


def _outputs(
    x: Inputs,
    outs: dict[str, np.ndarray],
    basis: np.ndarray,
    reason: np.ndarray,
    kernel: dict[str, np.ndarray],
    kernel_basis: np.ndarray,
) -> dict[str, Any]:
    """The declared variables from the filled arrays."""
    import xarray as xr  # the grid's; not at import (``sweeps validate`` stays light)

    extra = extra_dims(x)
    dims = (*DIMS, *extra)

    def var(values: np.ndarray) -> xr.Variable:
        # fastpath: xarray would send a label array through pandas (Arrow strings and back,
        # 8 s of a 1e6-point grid's labels) for the same Python strings
        return xr.Variable(dims, values, fastpath=True)

    devices = x["_devices"] if extra else x["tp"]  # a replica: tp (x ep x pp) devices
    batch = x["batch"]
    step_v = var(outs["step"])
    wall_dims = _wall_dims(x)
    per_config = (*WALL_DIMS, "engine", *extra)  # batch 1 and the wall: no batch dim
    # not one sequence fits: no figure at batch 1 (the engine's axis after the decode dims)
    fits = np.expand_dims(_max_batch(x) >= 1, len(WALL_DIMS))
    b1 = xr.Variable(per_config, np.where(fits, outs["b1"], np.nan))
    wall = xr.Variable(per_config, outs["wall"])
    bound = x["step_time_s"]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = bound / step_v
    kdims = (*DIMS, "operation", *extra)
    return {
        "expected_step_time_s": step_v,
        "expected_tokens_per_s": batch / step_v,
        "expected_ttft_s": var(outs["ttft"]),
        "expected_token_time_b1_s": b1,
        "expected_device_tokens_per_s_b1": 1.0 / b1 / devices,
        "expected_token_time_wall_s": wall,
        "expected_device_tokens_per_s_wall": xr.Variable(wall_dims, _max_batch(x).astype(float))
        / wall
        / devices,
        "roofline_share": share,
        "below_bound": known_flag(step_v < bound, step_v),
        "expected_basis": var(basis),
        "expected_reason": var(reason),
        "_kernels": {
            "kernel_expected_s": xr.Variable(kdims, kernel["expected"]),
            "kernel_bound_s": xr.Variable(kdims, kernel["bound"]),
            "kernel_roofline_share": xr.Variable(kdims, kernel["share"]),
            "kernel_basis": xr.Variable(kdims, kernel_basis, fastpath=True),
        },
    }


_V = Variable

EXPECTED = Analysis(
    name="expected",
    dims=DIMS,
    variables=(
        _V(
            "expected_step_time_s",
            "s",
            "Expected decode step from the measured kernels of the cost model's operations "
            "(null: no data, see expected_reason)",
            "nullable",
            "",
            "full",
        ),
        _V(
            "expected_tokens_per_s",
            "token/s",
            "Expected decode throughput, batch / expected step",
            "nullable",
            "",
            "full",
        ),
        _V(
            "expected_ttft_s",
            "s",
            "Expected prefill of the batch's prompts of `context` tokens (time to first token)",
            "nullable",
            "",
            "full",
        ),
        _V(
            "expected_token_time_b1_s",
            "s",
            "Expected time per output token of one request alone (batch 1; null: does not "
            "fit, or no data)",
            "nullable",
            "",
        ),
        _V(
            "expected_device_tokens_per_s_b1",
            "token/s",
            "Expected decode tokens/s per device of one request alone (batch 1; null: does "
            "not fit, or no data)",
            "nullable",
            "",
        ),
        _V(
            "expected_token_time_wall_s",
            "s",
            "Expected time per output token at the memory wall (batch max_batch; null: does "
            "not fit)",
            "nullable",
            "",
        ),
        _V(
            "expected_device_tokens_per_s_wall",
            "token/s",
            "Expected decode tokens/s per device at the memory wall (null: does not fit)",
            "nullable",
            "",
        ),
        _V(
            "roofline_share",
            "1",
            "The bound over the expected step, step_time_s / expected step (above 1: the "
            "device measured faster than the catalog's roof)",
            "nullable",
            rank="full",
        ),
        _V(
            "below_bound",
            "-",
            "The expected step is below its bound (not clamped: the catalog's peak or "
            "bandwidth is below what the device measured); null where there is no expectation",
            "nullbool",
            rank="full",
        ),
        _V(
            "expected_basis",
            "-",
            "Least certain basis of the step's kernels: measured, interpolated, extrapolated "
            "(outside the rows measured together; beyond a measured range, the nearest "
            "measured point's share of the roofline); empty: no data",
            "str",
            "basis",
            "full",
        ),
        _V(
            "expected_reason",
            "-",
            "Why there is no expectation (device, engine, format or operation not in the "
            "database); empty where there is one",
            "str",
            "reason",
            "full",
        ),
    ),
    compute=_compute,
    needs=("model", "decode"),
    study="expected",
    extra_dims=PARALLEL_DIMS,
    columns=(
        "step_time_s",
        "expected_step_time_s",
        "expected_tokens_per_s",
        "roofline_share",
        "below_bound",
        "expected_ttft_s",
        "expected_token_time_b1_s",
        "expected_device_tokens_per_s_b1",
        "expected_token_time_wall_s",
        "expected_device_tokens_per_s_wall",
        "expected_basis",
        "expected_reason",
    ),
)


def _kernels(x: Inputs) -> dict[str, Any]:
    kernels: dict[str, Any] = x["_kernels"]
    return kernels


KERNELS = Analysis(
    name="kernels",
    dims=(*DIMS, "operation"),
    variables=(
        _V(
            "kernel_expected_s",
            "s",
            "Expected time of the operation in one decode step (all its layers), measured",
            "nullable",
            "expected_s",
            "full",
        ),
        _V(
            "kernel_bound_s",
            "s",
            "Roofline bound of the operation in one decode step (all its layers)",
            "nullable",
            "bound_s",
            "full",
        ),
        _V(
            "kernel_roofline_share",
            "1",
            "The operation's bound over its expected time: how far the kernel is from its roof",
            "nullable",
            "roofline_share",
            "full",
        ),
        _V(
            "kernel_basis",
            "-",
            "measured (a row of the table), interpolated (inside the cell of rows around "
            "it) or extrapolated (outside the rows measured together); empty: no data",
            "str",
            "basis",
            "full",
        ),
    ),
    compute=_kernels,
    needs=("expected",),
    study="expected",
    extra_dims=PARALLEL_DIMS,
    columns=("kernel_expected_s", "kernel_bound_s", "kernel_roofline_share", "kernel_basis"),
)
