"""Measured results held against the expected pass (``axes.engine``): the error of ``expected``.

For each measurement with a bound (``sweeps.calibrate.bounds``) the expected value of the same
metric from measured kernels (``sweeps.studies.expected.step``), at the bound's batch and context:
an inter-token latency is one expected decode step; a TTFT the expected prefill of the batch's
prompts; a request latency the prefill and ``O`` steps at the mean context; a throughput a
static batch's ``B O`` tokens over its prefill and ``O`` steps, per device, replica or system
as the row gives it. ``error`` is expected over measured, minus 1; ``expected_basis`` the
least certain basis of the steps the value is priced from (``sweeps.measured.kernels.BASES``:
the decode step of an inter-token latency, the prefill of a TTFT, both otherwise).

The engine of a row is its ``engine`` column where it has one, else the one its source names
(TensorRT-LLM, vLLM, SGLang: ``DEFAULT``). An ``ep+dp`` row is one replica of its ``gpus``
ranks, each at tp 1 with its share of the batch (``sweeps.studies.expected.step``, ``Config.ep``);
a ``pp`` row one replica of ``gpus / tp`` stages of ``tp`` devices (``Config.pp``: a decode step
is a micro-batch of whole sequences through every stage and the hand-offs between them, as the
bound's grid prices it). A row of neither engine, a layout the expected steps do not compose (a
``pp`` that does not divide the layers, an ``ep`` that does not divide the experts), a device or
format the database does not hold, gets a null ``expected`` and the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from sweeps.calibrate.bounds import Bound
from sweeps.catalog import load_catalog
from sweeps.measured.database import ENGINES, parse
from sweeps.measured.kernels import BASES
from sweeps.studies.expected.step import Config, step

REGIMES = ("batch-1 latency", "large-batch throughput", "ttft", "serving")
"""How the error is summarized: a latency of one request alone, a throughput without
closed-loop clients, a time to first token, a closed-loop serving run."""

EXPECTED_COLUMNS = ("engine", "regime", "expected", "error", "expected_basis", "expected_reason")
"""The columns an engine adds to the calibration table (the calibrate command's engine option)."""

SOURCE_ENGINES = {"tensorrt-llm": "trtllm", "trtllm": "trtllm", "vllm": "vllm", "sglang": "sglang"}
"""Names a source gives an engine by, lower case, and the engine."""


def engine_of(extra: dict[str, str], source: str) -> str | None:
    """The row's engine: its ``engine`` column, else the one its source names (None: none)."""
    given = extra.get("engine", "").strip().lower()
    if given:
        return given
    text = source.lower()
    found = [engine for name, engine in SOURCE_ENGINES.items() if name in text]
    return found[0] if found else None


def regime(b: Bound) -> str:
    """The regime of a measurement (``REGIMES``)."""
    m = b.measurement
    if m.concurrency is not None and m.concurrency > 1:
        return "serving"
    if m.metric == "ttft_s":
        return "ttft"
    return "large-batch throughput" if m.metric == "output_tokens_per_s" else "batch-1 latency"


def _config(b: Bound, engine: str) -> Config | str:
    """The step's configuration of ``b``'s row, or why there is none."""
    m, catalog = b.measurement, load_catalog()
    ranks = m.gpus // m.tp
    ep = ranks if m.parallel == "ep+dp" else 1
    pp = ranks if m.parallel == "pp" else 1
    model, device = catalog.lookup_model(m.model), catalog.lookup_hardware(m.hardware)
    weight, kv = catalog.lookup_dtype(m.weight_dtype), catalog.lookup_dtype(m.kv_dtype)
    compute = m.compute_dtype if m.compute_dtype != "auto" else weight.compute
    peak = device.peak_flops.get(compute) or device.peak_flops["bf16"]
    attention = device.peak_flops.get(kv.compute) or device.peak_flops["bf16"]
    return Config(
        model, device, m.tp, model.kv_heads, kv.name, weight.name, kv.bytes_per_element,
        weight.bytes_per_element, peak, attention, parse(engine), ep, pp=pp,
    )  # fmt: skip


Expected = tuple[float | None, str | None, str]
"""A row's expected value, its basis (None: no value) and why there is none ("": there is)."""


def least_certain(*bases: str) -> str:
    """The least certain of ``bases`` (``BASES``' order: measured, interpolated, extrapolated)."""
    return BASES[max(BASES.index(basis) for basis in bases)]


def _expected(b: Bound, config: Config) -> Expected:
    """The expected value of ``b``'s metric, the least certain basis of the steps it is
    priced from, and the reason where there is none."""
    m = b.measurement
    batch = np.array([b.batch or 1])
    decode = step(config, batch, np.array([max(1, b.context)]))
    prefill = step(config, batch, np.array([max(1, m.prompt_tokens)]), prefill=True)
    one, ttft = float(decode.total()[0, 0]), float(prefill.total()[0, 0])
    if np.isnan(one) or np.isnan(ttft):
        return None, None, decode.reason or prefill.reason
    on_decode, on_prefill = str(decode.step_basis()[0, 0]), str(prefill.step_basis()[0, 0])
    request = ttft + m.output_tokens * one
    if m.metric == "itl_s":
        return one, on_decode, ""
    if m.metric == "ttft_s":
        return ttft, on_prefill, ""
    both = least_certain(on_decode, on_prefill)
    if m.metric == "request_latency_s":
        return request, both, ""
    devices = m.tp * config.ep * config.pp  # a replica's: every GPU of an ep+dp or pp row
    per_device = int(batch[0]) * m.output_tokens / request / devices
    scale = {"device": 1, "replica": devices, "system": m.gpus}[m.basis]
    return per_device * scale, both, ""


def expected_rows(found: list[Bound], default: str | None = None) -> pl.DataFrame:
    """One row per bounded measurement: its line, engine, regime, expected value, error
    (expected over measured, minus 1) and the reason where expected is null. ``default``
    is the engine of rows that name none (None: the source's, else no expectation)."""
    rows: list[dict[str, Any]] = []
    for b in found:
        m = b.measurement
        engine = engine_of(m.extra, m.source) or default
        expected: float | None = None
        basis: str | None = None
        reason = ""
        if b.bound is None:
            reason = "no bound"
        elif engine not in ENGINES:
            reason = f"engine {engine!r} unknown; allowed: {list(ENGINES)}"
        else:
            config = _config(b, engine)
            if isinstance(config, str):
                reason = config
            else:
                expected, basis, reason = _expected(b, config)
        error = None if expected is None else expected / m.value - 1
        rows.append(
            {
                "line": m.line,
                "model": m.model,
                "hardware": m.hardware,
                "metric": m.metric,
                "engine": engine,
                "regime": regime(b),
                "value": m.value,
                "bound": b.bound,
                "expected": expected,
                "error": error,
                "expected_basis": basis,
                "expected_reason": reason,
            }
        )
    return pl.DataFrame(
        rows, schema_overrides={"expected_basis": pl.String}, infer_schema_length=None
    )


def error_summary(frame: pl.DataFrame) -> pl.DataFrame:
    """Median and 90th percentile of ``|error|`` per engine, device and regime, with rows."""
    return (
        frame.drop_nulls("error")
        .with_columns(abs_error=pl.col("error").abs())
        .group_by("engine", "hardware", "regime")
        .agg(
            rows=pl.len(),
            median=pl.col("abs_error").median(),
            p90=pl.col("abs_error").quantile(0.9, "linear"),
        )
        .sort("engine", "hardware", "regime")
    )


def basis_summary(frame: pl.DataFrame) -> pl.DataFrame:
    """Median and 90th percentile of ``|error|`` per engine and ``expected_basis`` (the least
    certain basis of the steps each row is priced from), with rows; the bases in ``BASES``'
    order, then ``all`` of the engine's rows with an expectation."""
    rows = frame.drop_nulls("error").with_columns(abs_error=pl.col("error").abs())
    every = rows.with_columns(expected_basis=pl.lit("all"))
    order = {name: rank for rank, name in enumerate((*BASES, "all"))}
    return (
        pl.concat([rows, every])
        .group_by("engine", "expected_basis")
        .agg(
            rows=pl.len(),
            median=pl.col("abs_error").median(),
            p90=pl.col("abs_error").quantile(0.9, "linear"),
        )
        .sort("engine", pl.col("expected_basis").replace_strict(order, return_dtype=pl.Int8))
    )
