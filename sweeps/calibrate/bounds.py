"""The roofline bound of every measurement, and how close each measurement came to it.

A bound is the most permissive one the cost model gives: efficiencies 1, attention FLOPs on,
and ``batch = max`` at the memory wall with no reserve for a throughput, at one sequence for a
latency (a step of one is the fastest: a latency given at ``max`` is bounded at batch 1). For
each row (interface.md):

- ``output_tokens_per_s``: ``B / t_d(B, S)`` at the mean context ``S = I + O/2`` (rounded
  down: a shorter cache only loosens the bound), per replica; over ``tp`` per device
  (``basis = device``), times the ``gpus / tp`` replicas for a whole system;
- ``itl_s``: ``t_d(B, S)``;
- ``ttft_s``: ``t_p(B, I)``;
- ``request_latency_s``: the serving layer's static-batch latency (``mode = static``,
  docs/serving.md section 1) at ``B``, ``I`` and ``O``: ``t_p(B, I)`` plus the ``O - 1`` decode
  steps at their own contexts; its bottleneck is that of the phase with the larger share of it.

The ratio is oriented so that 1 is the roof: throughput measured over bound, latency bound over
measured. A row above 1 beats its bound: a defect of the bound, or a misread row.

A row with a closed-loop ``concurrency`` ``C`` has at most ``C`` requests in the system at
any time (Little's law with every client waiting on its own request), so no step carries more
than ``C`` of them and the serving layer's ``bound`` mode (docs/serving.md section 2: the bound
over every scheduler with ``B`` slots, no token budget: a step carries at most ``B I`` tokens)
holds it at ``B = min(C, batch)`` slots, ``batch`` the row's own or the memory wall at the mean
context where it says ``max``:

- ``output_tokens_per_s``: the ``bound`` mode's output tokens/s per device at ``B``, ``I`` and
  ``O`` (per replica times ``tp``, per system times ``gpus``; each replica bounded at ``B``,
  however the clients are split); its bottleneck is the decode step's at ``B``;
- a latency: the row's request alone (``B = 1``): every step that carries it does at least its
  own work, so ``t_p(1, I)``, ``t_d(1, S)`` and the static request latency at one sequence bound
  it under any load.

A row with ``parallel = "ep+dp"`` is one replica of all its ``gpus``: ``ep = gpus / tp`` ranks
with data-parallel attention (the grid's ``axes.ep`` and ``dp_attention``); ``pp`` is
``pp = gpus / tp`` stages. Its per-device figure is over the replica's ``gpus`` devices (read
``tp`` above as the replica's devices).

An ``ep+dp`` row whose ``ep`` does not divide the ``E`` routed experts (DeepSeek-V3's 256 on
72 H100s or 48 GB200s, as published, with redundant experts placed by a load balancer) is
bounded at its busiest rank's share: every rank holds ``ceil(E / ep)`` experts, a model of
``E' = ep ceil(E / ep)`` routed experts (``E' - E`` redundant copies, each the size of one
expert) that still routes each token to ``k`` of them (``redundant_experts``). Each rank then
holds the weights the busiest rank holds (so the memory wall is no looser than the real one's),
and a token's work is the same ``k`` experts; spread over more copies, a batch touches fewer
distinct experts a rank, and the bound stays above any placement of those experts.

A row gets no bound, and says why in ``reason``, where a bound would be wrong: a model that does
not fit on the row's devices, and a layout the grid refuses (``ep+dp`` for a dense model, a
``pp`` that does not divide the layers).

At scale the rows of one configuration share grids: the distinct batches, contexts and prompts
of its rows are cut into chunks whose grid stays under ``POINTS`` points, and each chunk's
bounds are read from its grid in one vectorized selection.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from sweeps.calibrate.measurements import Measurement, needs_serving
from sweeps.catalog import Model
from sweeps.config import Sweep, parse_config
from sweeps.errors import MeasurementsError, SweepsError
from sweeps.grid import BOTTLENECK_FLAGS, build_grid

THROUGHPUT = "output_tokens_per_s"
REQUEST = "request_latency_s"
BEATS_TOLERANCE = 1e-9
"""A ratio this far above 1 is arithmetic, not a measurement beating its bound."""

POINTS = 4096
"""Most (batch, context) or (batch, prompt, output) points one calibration grid holds [1]: the
memory of a calibration is bounded by it, whatever the number of rows."""

SKIPPED = ("pools",)
"""Analyses a calibration grid leaves out: it reads the serving table's static and bound
modes, never the pools' plans (whose queueing tables were 40 % of a calibration's time)."""

STATUS_OK, STATUS_BEATS, STATUS_NONE = "ok", "beats its bound", "no bound"


@dataclass(frozen=True)
class Bound:
    """The bound of one measurement and the ratio to it (1 at the roof); ``None`` for a row
    without a bound, whose ``reason`` says why."""

    measurement: Measurement
    batch: int | None
    context: int
    bound: float | None
    ratio: float | None
    bottleneck: str | None
    status: str
    reason: str = ""


def _context(m: Measurement) -> int:
    return m.prompt_tokens + m.output_tokens // 2


def layout(m: Measurement) -> str:
    """The parallel axes of ``m``'s grid, as ``[axes]`` lines ("" for tensor parallel)."""
    if m.parallel == "ep+dp":
        return f"ep = [{m.gpus // m.tp}]\ndp_attention = [true]\n"
    if m.parallel == "pp":
        return f"pp = [{m.gpus // m.tp}]\n"
    return ""


def _devices(m: Measurement) -> int:
    """Devices of one replica of ``m`` [device]: tp, or every GPU of an ep+dp or pp row."""
    return m.tp if m.parallel == "tp" else m.gpus


def _group_key(m: Measurement, attention: str) -> tuple[str, ...]:
    return (
        m.model,
        m.hardware,
        str(m.tp),
        m.weight_dtype,
        m.kv_dtype,
        m.compute_dtype,
        attention,
        layout(m),
    )


def _serving_table(rows: list[Measurement]) -> str:
    """The ``[serving]`` table of the workloads of the rows the serving layer bounds (request
    latencies, closed-loop throughputs); empty without any."""
    requests = [m for m in rows if needs_serving(m)]
    if not requests:
        return ""
    prompts = sorted({m.prompt_tokens for m in requests})
    outputs = sorted({m.output_tokens for m in requests})
    # only the static and bound modes are read; no token budget: the bound's largest step is
    # then B I, the most any step of B slots carries
    return (
        f"[serving]\nprompt_tokens = {prompts}\noutput_tokens = {outputs}\n"
        "arrival_rate = [1.0]\nchunk_tokens = 0\n"
    )


def redundant_experts(model: Model, ranks: int) -> Model:
    """``model`` with its routed experts made a multiple of ``ranks``: ``E' = ranks ceil(E /
    ranks)``, each of the ``E' - E`` added a copy of one expert (``P - P_act`` is ``E - k``
    experts, ``sweeps.physics.routed_params``), ``k`` per token as before; ``model`` itself
    where ``ranks`` divides ``E``."""
    experts = model.experts
    padded = ranks * -(-experts // ranks)
    if padded == experts:
        return model
    per_expert = (model.params - model.active_params) / (experts - model.experts_per_token)
    params = model.params + (padded - experts) * per_expert
    return replace(model, experts=padded, params=params)


def _uneven_ep(model_id: str, parallel: str) -> int:
    """The ``ep`` of an ``ep+dp`` layout (``layout``) that does not divide the routed experts
    of ``model_id``; 0 for any other layout."""
    from sweeps.catalog import load_catalog

    match = re.match(r"ep = \[(\d+)\]", parallel)
    model = load_catalog().lookup_model(model_id)
    if match is None or not model.is_moe:
        return 0
    ranks = int(match.group(1))
    return ranks if model.experts % ranks else 0


def _sweep(
    key: tuple[str, ...],
    batches: Iterable[int],
    contexts: Iterable[int],
    prompts: Iterable[int],
    serving: str = "",
) -> Sweep:
    model, hardware, tp, weight, kv, compute, attention, parallel = key
    uneven = _uneven_ep(model, parallel)
    if uneven:  # parsed at one rank, then given its ranks and the padded experts
        parallel = parallel.replace(f"ep = [{uneven}]", "ep = [1]")
    options = f'compute_dtype = "{compute}"\n' if compute != "auto" else ""
    options += f'attention_dtype = "{attention}"\n'
    text = (
        '[sweep]\nname = "calibrate"\n[axes]\n'
        f'model = ["{model}"]\nhardware = ["{hardware}"]\ntp = [{tp}]\n'
        f"batch = {sorted(set(batches))}\ncontext = {sorted(set(contexts))}\n"
        f"prompt = {sorted(set(prompts))}\n{parallel}"
        f'kv_dtype = ["{kv}"]\nweight_dtype = ["{weight}"]\n'
        "[options]\nattention_flops = true\nmemory_reserve = 0.0\n"
        f"bandwidth_efficiency = 1.0\ncompute_efficiency = 1.0\n{options}{serving}"
    )
    sweep = parse_config(text, "<calibrate>")
    if not uneven:
        return sweep
    padded = tuple(redundant_experts(m, uneven) for m in sweep.models)
    return replace(sweep, models=padded, study_axes={**sweep.study_axes, "ep": (uneven,)})


def _grid(
    rows: list[Measurement],
    key: tuple[str, ...],
    axes: tuple[Iterable[int], Iterable[int], Iterable[int]],
    serving: str = "",
) -> xr.Dataset:
    """The grid of ``rows``' configuration at ``axes`` (batches, contexts, prompts); one the
    cost model refuses is an error naming the measurements file and the rows' lines."""
    try:
        return build_grid(_sweep(key, *axes, serving), skip=SKIPPED)
    except SweepsError as error:
        lines = ", ".join(str(m.line) for m in rows[:8]) + (", ..." if len(rows) > 8 else "")
        detail = str(error).replace("<calibrate>: ", "")
        msg = f"{rows[0].path}: line(s) {lines}: cannot bound these rows: {detail}"
        raise MeasurementsError(msg) from None


def _points(ds: xr.Dataset, name: str, rows: int, **where: np.ndarray) -> np.ndarray:
    """``name`` at each row's labels (one vectorized selection), the other dims at their one
    label: an array of ``rows`` values."""
    da = ds[name]
    index = {dim: xr.DataArray(labels, dims="row") for dim, labels in where.items()}
    da = da.sel({dim: labels for dim, labels in index.items() if dim in da.dims})
    da = da.isel({dim: 0 for dim in da.dims if dim != "row"})
    return np.broadcast_to(np.asarray(da.values), (rows,))


def _no_bound(m: Measurement, reason: str) -> Bound:
    return Bound(m, m.batch, _context(m), None, None, None, STATUS_NONE, reason)


def _unbounded_reason(m: Measurement) -> str:
    """Why a row cannot be bounded by the grid ("" where it can)."""
    from sweeps.catalog import load_catalog

    model = load_catalog().lookup_model(m.model)
    ranks = m.gpus // m.tp
    if m.parallel == "ep+dp" and not model.is_moe:
        return (
            f"ep+dp over {m.gpus} GPUs at tp {m.tp} is ep {ranks}, and {m.model} has no "
            "routed experts to split that way"
        )
    if m.parallel == "pp" and model.layers % ranks:
        return f"pp over {m.gpus} GPUs at tp {m.tp} is {ranks} stages of {model.layers} layers"
    return ""


def _walls(key: tuple[str, ...], rows: list[Measurement]) -> tuple[dict[int, int], float]:
    """The memory wall (no reserve) at each row's mean context, and the weights per device."""
    contexts = sorted({_context(m) for m in rows})
    ds = _grid(rows, key, ([1], contexts, [rows[0].prompt_tokens]))
    at = np.asarray(contexts)
    walls = _points(ds, "max_batch", len(at), context=at)
    weights = float(_points(ds, "weight_bytes", 1)[0])
    return dict(zip(contexts, (int(w) for w in walls), strict=True)), weights


def _too_big(m: Measurement, weights: float, memory: float) -> str:
    over = "" if m.parallel == "tp" else f" ({m.parallel} over {m.gpus} GPUs)"
    return (
        f"the model does not fit: {weights / 1e9:.1f} GB of weights per device at tp "
        f"{m.tp}{over} and one sequence's cache at context {_context(m)} exceed the "
        f"{memory / 1e9:.1f} GB of {m.hardware}"
    )


def _chunks(rows: list[Measurement], batch_of: dict[int, int]) -> list[list[Measurement]]:
    """``rows`` in chunks whose grid (distinct batches x contexts x prompts, and x outputs for
    request rows) stays within ``POINTS``."""
    ordered = sorted(rows, key=lambda m: (batch_of[id(m)], _context(m), m.prompt_tokens))
    chunks: list[list[Measurement]] = []
    axes: list[set[int]] = []
    for m in ordered:
        values = (batch_of[id(m)], _context(m), m.prompt_tokens, m.output_tokens)
        if chunks:
            grown = [axis | {value} for axis, value in zip(axes, values, strict=True)]
            decode, serving = len(grown[0]) * len(grown[1]), len(grown[0]) * len(grown[2])
            if max(decode, serving * len(grown[3])) <= POINTS:
                chunks[-1].append(m)
                axes = grown
                continue
        chunks.append([m])
        axes = [{value} for value in values]
    return chunks


def _chunk_bounds(
    key: tuple[str, ...], rows: list[Measurement], batch_of: dict[int, int]
) -> list[Bound]:
    """Every row of one chunk bounded from one grid, each metric in one vectorized read."""
    batches = np.asarray([batch_of[id(m)] for m in rows])
    contexts = np.asarray([_context(m) for m in rows])
    prompts = np.asarray([m.prompt_tokens for m in rows])
    outputs = np.asarray([m.output_tokens for m in rows])
    axes = (batches.tolist(), contexts.tolist(), prompts.tolist())
    ds = _grid(rows, key, axes, _serving_table(rows))
    n = len(rows)
    step = _points(ds, "step_time_s", n, batch=batches, context=contexts)
    decode_flag = _points(ds, "bottleneck", n, batch=batches, context=contexts)
    ttft = _points(ds, "ttft_s", n, batch=batches, prompt=prompts)
    prefill_flag = _points(ds, "prefill_bottleneck", n, batch=batches, prompt=prompts)
    request, first, served = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    # read at the serving rows' workloads only: the table holds theirs, not the others'
    serving = np.flatnonzero([needs_serving(m) for m in rows])
    if serving.size:
        k = serving.size
        at = {"batch": batches[serving], "prompt_tokens": prompts[serving]}
        at["output_tokens"] = outputs[serving]
        static, fluid = ds.sel(mode="static"), ds.sel(mode="bound")
        request[serving] = _points(static, REQUEST, k, **at)
        first[serving] = _points(static, "serving_ttft_s", k, **at)
        served[serving] = _points(fluid, "output_tokens_per_s_per_device", k, **at)
    found = []
    for i, m in enumerate(rows):
        decode, prefill = (step[i], decode_flag[i]), (ttft[i], prefill_flag[i])
        table = (request[i], first[i], served[i])
        bound, flag = _measured_bound(m, int(batches[i]), decode, prefill, table)
        latency = m.metric != THROUGHPUT
        ratio = bound / m.value if latency else m.value / bound
        status = STATUS_BEATS if ratio > 1 + BEATS_TOLERANCE else STATUS_OK
        flagged = BOTTLENECK_FLAGS[int(flag)]
        found.append(Bound(m, int(batches[i]), int(contexts[i]), bound, ratio, flagged, status))
    return found


def _measured_bound(
    m: Measurement,
    batch: int,
    decode: tuple[float, float],
    prefill: tuple[float, float],
    request: tuple[float, float, float],
) -> tuple[float, float]:
    """The bound of ``m`` in its metric's unit and the bottleneck flag it is limited by, from
    the decode step (time, flag), the prefill (TTFT, flag) and the serving table (the static
    request's latency and TTFT, the ``bound`` mode's output tokens/s per device)."""
    latency, first, served = request
    devices = _devices(m)
    replicas = {"device": 1 / devices, "replica": 1.0, "system": m.gpus / devices}[m.basis]
    if m.metric == THROUGHPUT and m.concurrency is not None:
        return served * devices * replicas, decode[1]
    if m.metric == REQUEST:
        return latency, prefill[1] if first >= latency - first else decode[1]
    if m.metric == "ttft_s":
        return prefill
    if m.metric == "itl_s":
        return decode
    return batch / decode[0] * replicas, decode[1]


def _slots(m: Measurement, wall: int) -> int:
    """The batch a row is bounded at: its own, or for ``max`` the memory wall (a throughput)
    or one sequence (a latency: the most permissive bound, a step of one is the fastest);
    with a closed-loop concurrency ``C`` at most ``C`` (a throughput) or its request alone (a
    latency)."""
    latency = m.metric != THROUGHPUT
    if latency and (m.batch is None or m.concurrency is not None):
        return 1
    batch = m.batch if m.batch is not None else wall
    return batch if m.concurrency is None else min(m.concurrency, batch)


def _group_bounds(key: tuple[str, ...], rows: list[Measurement]) -> list[Bound]:
    """The bounds of one configuration's rows: its memory walls, then its chunks."""
    from sweeps.catalog import load_catalog

    walls, weights = _walls(key, rows)
    memory = load_catalog().lookup_hardware(rows[0].hardware).memory
    found, fitting, batch_of = [], [], {}
    for m in rows:
        wall = walls[_context(m)]
        if wall < 1:
            found.append(_no_bound(m, _too_big(m, weights, memory)))
            continue
        batch_of[id(m)] = _slots(m, wall)
        fitting.append(m)
    for chunk in _chunks(fitting, batch_of):
        found += _chunk_bounds(key, chunk, batch_of)
    return found


def bounds(measurements: list[Measurement], attention_dtype: str = "auto") -> list[Bound]:
    """The bound of every measurement, in the order given; grids shared per configuration.

    ``attention_dtype`` is the grid's ``options.attention_dtype``: ``auto`` (attention at the KV
    format's peak, bf16 where a device lacks it: the FP4 split), ``gemm`` (attention at the
    GEMMs' peak, the looser reading before the split) or a compute dtype.
    """
    groups: dict[tuple[str, ...], list[Measurement]] = defaultdict(list)
    found: dict[int, Bound] = {}
    for m in measurements:
        reason = _unbounded_reason(m)
        if reason:
            found[id(m)] = _no_bound(m, reason)
        else:
            groups[_group_key(m, attention_dtype)].append(m)
    for key, rows in groups.items():
        for bound in _group_bounds(key, rows):
            found[id(bound.measurement)] = bound
    return [found[id(m)] for m in measurements]
