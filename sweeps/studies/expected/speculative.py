"""``speculative_expected``: speculative decoding on the engine's measured kernels, beside the
bound (``axes.engine`` with ``spec_tokens``, ``spec_acceptance``, ``spec_draft``).

The verify step is read as aiconfigurator prices its nextn (MTP) step: a decode step of
``B (k + 1)`` rows (``step.decode``), the GEMMs and the LM head at ``m = B (k + 1)`` and
attention over ``B (k + 1)`` single-query sequences at the context (the database measured no
decode kernel taking a sequence's ``k + 1`` queries together, so each reads the cache); beside
it, ``expected_verify_time_once_s`` reads each cache once (``_once``: the same operations but
attention, the measured decode attention of the ``B`` sequences floored at the roofline of the
``k + 1`` queries, ``physics.verify_attention_time``), with its speedup. The draft
proposes ``k`` tokens: ``ngram`` for nothing; ``mtp`` in ``k`` passes of one head, the
target's mean layer (its decode step's layer operations over its layers) and its LM head,
read at ``B`` and the context; a draft model in ``k`` of its own decode steps at ``B`` over
the contexts ``S .. S + k - 1``, on the target's device, tp, formats and engine. The expected
tokens a verification ``E`` is the bound's (``expected_tokens``, the same acceptance), so the
expected time per output token is ``(t_verify + t_draft) / E``, beside the speculative table's
bound of it; ``k = 0`` is expected.parquet's decode step bit for bit. ``roofline_share`` is the
bound over the expectation, ``below_bound`` flags an expectation below its bound (not
clamped).

On parallel layouts (``ep``, ``dp_attention``, ``pp``) the table takes their dims, as
expected.parquet does: the verify step is ``compose``'s decode step of ``B (k + 1)`` rows (a
rank's micro-batch of whole sequences, each with its ``k + 1`` rows; the dispatch and
hand-offs; the LM head over ``Config.shards``). The
drafts are placed as the bound places them (``sweeps.engine.drafts``): an MTP head on the last
stage runs its ``k`` passes for each of the ``pp`` micro-batches in turn (a pass: the mean
layer of the rank's micro-batch's step, its dispatch included, no hand-off); a draft model,
dense, runs whole on the last stage, a copy on each attention copy split over its
``Config.shards`` devices, drafting a rank's micro-batch, ``pp`` of them in turn.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from sweeps.engine.base import Analysis, Inputs, Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.measured.kernels import NAMES, NONE
from sweeps.studies.expected.expected import DIMS as EXPECTED_DIMS
from sweeps.studies.expected.expected import configs, extra_dims, known_flag
from sweeps.studies.expected.step import (
    Config,
    Decoded,
    _sum,
    decode,
    micro_batch,
    rank_share,
    verify_attention_floor,
)

DIMS = (*EXPECTED_DIMS, "spec_tokens", "spec_acceptance", "spec_draft")
"""The expected table's dims and the speculative ones (and ``PARALLEL_DIMS`` where the sweep
has them)."""

CONFIG = ("model", "hardware", "tp", "kv_heads", "kv_dtype", "weight_dtype", "engine")
"""The dims of one configuration (``expected.configs`` is over these, then the parallel
axes where the sweep has them)."""


def _layout(n: int) -> tuple[int, ...]:
    """The axes of a filled array (``n`` configuration dims, the parallel axes last among
    them, then k, acceptance, draft, batch, context) in the order of ``DIMS`` and the
    parallel axes."""
    return (0, 1, 2, n + 3, n + 4, 3, 4, 5, 6, n, n + 1, n + 2, *range(7, n))


LAYOUT = _layout(len(CONFIG))
"""``_layout`` of a grid without the parallel axes."""

OUTSIDE_THE_LAYER = ("embedding", "lm_head", "handoff")
"""The operations of a decode step that are not its layers' (an MTP head runs its own
LM head once a pass; it looks its input up in the target's embedding; it sits on the last
stage: no hand-off)."""


def _mtp_pass(config: Config, plain: Decoded) -> np.ndarray:
    """One MTP pass at the decode step's batch and context [s]: the target's mean layer (its
    layer operations, all-reduces included, over its layers) and its LM head."""
    layers = float(config.model.layers)
    ops = [v for op, v in plain.expected.items() if op not in OUTSIDE_THE_LAYER]
    layer = ops[0]
    for value in ops[1:]:
        layer = layer + value
    return layer / layers + plain.expected["lm_head"]


def _draft(
    config: Config,
    record: Any,
    plain: Decoded,
    ks: np.ndarray,
    batch: np.ndarray,
    context: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, str]:
    """The draft's expected time to propose each ``k`` of ``ks`` tokens (k, batch, context)
    [s], its basis codes (int8, the same shape) and why there is none (""): ``ngram`` 0, an
    MTP head ``k`` passes, a draft model ``k`` decode steps at ``S .. S + k - 1``; 0 at
    ``k = 0``. On a pipeline both run on the last stage for each of the ``pp`` micro-batches
    in turn; a draft model is dense, split over ``Config.shards`` devices and drafts a rank's
    micro-batch (``sweeps.engine.drafts``' placement; at ``ep = pp = 1`` the target's own)."""
    shape = (ks.size, batch.size, context.size)
    time, code = np.zeros(shape), np.zeros(shape, dtype=np.int8)
    if record.kind == "ngram":
        return time, code, ""
    turns = float(config.pp)  # the last stage drafts the pp micro-batches in turn
    if record.kind == "mtp":
        one = _mtp_pass(config, plain)
        for i, k in enumerate(ks):
            if k > 0:
                time[i], code[i] = k * one * turns, plain.step_basis
        return time, code, ""
    model = record.model
    drafting = dataclasses.replace(
        config, model=model, kv_heads=model.kv_heads, tp=config.shards, ep=1,
        dp_attention=True, pp=1,
    )  # fmt: skip
    lengths = np.unique(context[:, None] + np.arange(max(int(ks.max()), 1))[None, :])
    steps = decode(drafting, rank_share(config, micro_batch(config, batch)), lengths)
    if isinstance(steps, str):
        return np.full(shape, np.nan), np.full(shape, NONE, dtype=np.int8), f"draft: {steps}"
    at = np.searchsorted(lengths, context)  # S's place; S + j is j further (all are there)
    for i, k in enumerate(ks):
        for j in range(int(k)):
            time[i] = time[i] + steps.step[:, at + j]
            np.maximum(code[i], steps.step_basis[:, at + j], out=code[i])
    time *= turns
    reason = f"draft {model.id}: {steps.reason}" if steps.reason else ""
    return time, code, reason


def _once(
    config: Config,
    plain: Decoded,
    verify: Decoded,
    k: int,
    batch: np.ndarray,
    context: np.ndarray,
) -> np.ndarray:
    """The verify step of ``k`` drafts with each sequence's cache read once (batch, context)
    [s]: ``verify``'s operations (``B (k + 1)`` rows) but attention, which is ``plain``'s (the
    rank's ``B`` sequences at ``S``, as a kernel taking a sequence's ``k + 1`` queries
    together reads its cache) floored at the roofline of the ``k + 1`` queries' FLOPs and the
    cache's bytes (``step.verify_attention_floor``), and at most ``verify``'s own (a kernel
    reading each cache once does no more than one reading it ``k + 1`` times; the database's
    decode attention is not monotone in the batch where it is small: Qwen3-235B, H100,
    TensorRT-LLM, S 512, 5 sequences measured 12.5 us a layer, 1 sequence 15.5 us); summed in
    ``decode``'s order. NaN where ``verify`` is, and for an MLA model (its block, projections
    and attention, is read whole)."""
    floor = verify_attention_floor(config, batch, context, k)
    ops = dict(verify.expected)
    held = np.maximum(plain.expected["attention"], floor)
    ops["attention"] = np.minimum(held, verify.expected["attention"])
    total = _sum(list(ops.values()))
    return np.where(np.isnan(verify.step), np.nan, total)


def _compute(x: Inputs) -> dict[str, Any]:  # long: one loop fills every output array
    import xarray as xr

    batch, context = x["batch"].values, x["context"].values
    ks = np.asarray(x["spec_tokens"].values, dtype=np.int64)
    drafts = x["_draft_records"].values
    every = configs(x)
    extra = extra_dims(x)
    n = len(CONFIG) + len(extra)
    sizes = tuple(1 + max(i[d] for i, _ in every) for d in range(n))
    verify = np.full((*sizes, ks.size, batch.size, context.size), np.nan)
    verify_code = np.full(verify.shape, NONE, dtype=np.int8)
    once = np.full(verify.shape, np.nan)
    per_draft = (*sizes, ks.size, len(drafts), batch.size, context.size)
    draft, draft_code = np.full(per_draft, np.nan), np.full(per_draft, NONE, dtype=np.int8)
    reasons = np.full((*sizes, ks.size, len(drafts)), "", dtype=object)
    for index, config in every:
        plain = decode(config, batch, context)
        if isinstance(plain, str):
            reasons[index] = plain
            continue
        why = []
        for i, k in enumerate(ks):  # B (k + 1) rows: k = 0 is the decode step itself
            done = plain if k == 0 else decode(config, batch, context, int(k) + 1)
            assert not isinstance(done, str)  # the configuration opened for plain
            verify[index][i], verify_code[index][i] = done.step, done.step_basis
            once[index][i] = (
                done.step if k == 0 else _once(config, plain, done, int(k), batch, context)
            )
            why.append(done.reason)
        for d, record in enumerate(drafts):
            time, code, reason = _draft(config, record, plain, ks, batch, context)
            draft[index][:, d], draft_code[index][:, d] = time, code
            for i in range(ks.size):
                reasons[index][i, d] = "; ".join(r for r in (why[i], reason) if r)
    dims, config_dims = (*DIMS, *extra), (*CONFIG, *extra)
    kept = (*config_dims, "spec_tokens", "batch", "context")
    verify_v = xr.Variable(kept, verify)
    once_v = xr.Variable(kept, once)
    draft_v = xr.Variable((*config_dims, "spec_tokens", "spec_draft", "batch", "context"), draft)
    e = x["expected_tokens"]
    spent = verify_v + draft_v
    per_token = (spent / e).transpose(*dims)
    bound = x["spec_time_per_output_token_s"]
    codes = np.maximum(verify_code[..., :, None, :, :], draft_code)
    codes = np.where(np.isnan(verify[..., :, None, :, :] + draft), NONE, codes)
    full = (*sizes, ks.size, x["spec_acceptance"].size, len(drafts), batch.size, context.size)

    def labels(values: np.ndarray) -> xr.Variable:
        spread = np.broadcast_to(values[..., :, None, :, :, :], full).transpose(_layout(n))
        return xr.Variable(dims, spread, fastpath=True)

    with np.errstate(invalid="ignore", divide="ignore"):
        share = bound / per_token
    return {
        "expected_verify_time_s": verify_v.transpose(*(d for d in dims if d in kept)),
        "expected_verify_time_once_s": once_v.transpose(*(d for d in dims if d in kept)),
        "expected_spec_speedup_once": (
            x["expected_step_time_s"] * e / (once_v + draft_v)
        ).transpose(*dims),
        "expected_draft_time_s": draft_v.transpose(*(d for d in dims if d in draft_v.dims)),
        "expected_spec_time_per_output_token_s": per_token,
        "expected_spec_tokens_per_s": (x["batch"] / per_token).transpose(*dims),
        "expected_spec_speedup": (x["expected_step_time_s"] * e / spent).transpose(*dims),
        "spec_roofline_share": share.transpose(*dims),
        "spec_below_bound": known_flag(per_token < bound, per_token).transpose(*dims),
        "expected_spec_basis": labels(NAMES[codes]),
        "expected_spec_reason": labels(np.broadcast_to(reasons[..., None, None], per_draft)),
    }


def wanted(sweep: Any) -> bool:
    """An engine and speculation are set."""
    return "speculative" in getattr(sweep, "studies", {})


_V = Variable
_NOTE = "on the engine's measured kernels (an expectation, not a bound)"

SPECULATIVE_EXPECTED = Analysis(
    name="speculative_expected",
    dims=DIMS,
    variables=(
        _V(
            "expected_verify_time_s",
            "s",
            f"Expected verify step, a decode step of B(k+1) rows (aiconfigurator's nextn "
            f"step), {_NOTE}",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_verify_time_once_s",
            "s",
            "Expected verify step with each sequence's KV cache read once (a kernel taking its "
            "k+1 queries together: FlashAttention varlen, FlashInfer, TRT-LLM XQA spec-dec): "
            "the GEMMs and LM head at B(k+1) rows, attention the measured decode attention of "
            "the B sequences at S floored at the roofline of the k+1 queries' FLOPs and the "
            f"cache's bytes, {_NOTE}; no verify kernel measured; null for an MLA model",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_draft_time_s",
            "s",
            f"Expected time the draft takes to propose k tokens (ngram: 0; mtp: k passes of "
            f"the mean layer and the LM head; a draft model: k decode steps), {_NOTE}",
            "nullable",
            rank="full",
        ),
        _V(
            "expected_spec_time_per_output_token_s",
            "s",
            f"Expected time per output token of a sequence, (t_verify + t_draft)/E, {_NOTE} "
            "(null: no data, see reason)",
            "nullable",
            "expected_time_per_output_token_s",
            "full",
        ),
        _V(
            "expected_spec_tokens_per_s",
            "token/s",
            f"Expected output throughput of the batch with speculation, {_NOTE}",
            "nullable",
            "expected_tokens_per_s",
            "full",
        ),
        _V(
            "expected_spec_speedup",
            "1",
            "Expected speedup over the expected plain decode step, t_d E/(t_verify + t_draft)",
            "nullable",
            "expected_speedup",
            "full",
        ),
        _V(
            "expected_spec_speedup_once",
            "1",
            "Expected speedup over the expected plain decode step with the verify step's caches "
            "read once, t_d E/(t_verify_once + t_draft), an expectation, not a bound",
            "nullable",
            "expected_speedup_once",
            "full",
        ),
        _V(
            "spec_roofline_share",
            "1",
            "The bound's time per output token over the expected one (above 1: the device "
            "measured faster than the catalog's roof)",
            "nullable",
            "roofline_share",
            "full",
        ),
        _V(
            "spec_below_bound",
            "-",
            "The expected time per output token is below its bound (not clamped); null where "
            "there is no expectation",
            "nullbool",
            "below_bound",
            "full",
        ),
        _V(
            "expected_spec_basis",
            "-",
            "Least certain basis of the verify step's and the draft's kernels: measured, "
            "interpolated, extrapolated; empty: no data",
            "str",
            "basis",
            "full",
        ),
        _V(
            "expected_spec_reason",
            "-",
            "Why there is no expectation (device, engine, format or operation not in the "
            "database, for the target or the draft model); empty where there is one",
            "str",
            "reason",
            "full",
        ),
    ),
    compute=_compute,
    needs=("model", "decode", "speculative", "expected"),
    columns=(
        "expected_tokens",
        "verify_time_s",
        "expected_verify_time_s",
        "expected_verify_time_once_s",
        "draft_time_s",
        "expected_draft_time_s",
        "spec_time_per_output_token_s",
        "expected_spec_time_per_output_token_s",
        "spec_tokens_per_s",
        "expected_spec_tokens_per_s",
        "speedup",
        "expected_spec_speedup",
        "expected_spec_speedup_once",
        "spec_roofline_share",
        "spec_below_bound",
        "spec_feasible",
        "expected_spec_basis",
        "expected_spec_reason",
    ),
    study="expected",
    applies=wanted,
    extra_dims=PARALLEL_DIMS,
)
