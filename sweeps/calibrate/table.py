"""The calibration as a table, a per-device summary, a chart and a folder of files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from sweeps.calibrate.bounds import STATUS_BEATS, Bound, bounds
from sweeps.calibrate.measurements import COLUMNS, METRICS, load_measurements

if TYPE_CHECKING:
    import altair as alt

UNITS: dict[str, tuple[str, str]] = {
    "line": ("1", "Line of the measurements file the row comes from"),
    "model": ("-", "Model id"),
    "hardware": ("-", "Device id"),
    "tp": ("device", "Tensor-parallel degree of one replica"),
    "weight_dtype": ("-", "Number format of the weights"),
    "kv_dtype": ("-", "Number format of the KV cache"),
    "compute_dtype": ("-", "Tensor-core format of the GEMMs (auto: the weights' own)"),
    "batch": (
        "sequence",
        "Batch of the bound (the memory wall where the row says max; a closed-loop throughput's "
        "at most its concurrency, a closed-loop latency's 1: its request alone)",
    ),
    "batch_given": ("-", "The batch as the row gives it: a number or max"),
    "prompt_tokens": ("token", "Prompt tokens per request, I"),
    "output_tokens": ("token", "Output tokens per request, O"),
    "context": ("token", "Cache length of the decode bound, I + O/2 rounded down"),
    "metric": ("-", "What was measured: " + ", ".join(METRICS)),
    "value": ("SI", "The measured value, in the metric's unit (token/s or s)"),
    "unit": ("-", "Unit of value and bound"),
    "basis": ("-", "What a throughput is per: device, replica (tp devices) or system (gpus)"),
    "gpus": ("device", "GPUs the measured run used"),
    "parallel": ("-", "How the GPUs were used: tp, ep+dp (attention data parallel) or pp"),
    "load": ("-", "For latencies: idle or under-load (empty: not stated)"),
    "concurrency": ("request", "Closed-loop clients of a serving run (null: none)"),
    "bound": ("SI", "Roofline bound in the metric's unit (efficiencies 1, no reserve; null: none)"),
    "ratio": ("1", "measured/bound for throughput, bound/measured for latency: 1 is the roof"),
    "bottleneck": ("-", "What limits the bound at that point: memory-bound or compute-bound"),
    "beats_bound": ("-", "The measurement beats its bound (a defect or a misread row)"),
    "status": ("-", "ok, beats its bound, or no bound"),
    "reason": ("-", "Why a row has no bound (empty where it has one)"),
    "in_medians": (
        "-",
        "The row counts in the efficiency medians (bounded, and not a latency under load or "
        "with other closed-loop clients)",
    ),
    "source": ("-", "Where the measurement is published"),
    "engine": ("-", "Engine of the expectation: the row's engine column, else its source's"),
    "regime": ("-", "batch-1 latency, large-batch throughput, ttft or serving"),
    "expected": ("SI", "Expected value from measured kernels, in the metric's unit (null: none)"),
    "error": ("1", "expected / value - 1 (null: no expectation)"),
    "expected_basis": (
        "-",
        "Least certain basis of the expected steps the value is priced from: measured, "
        "interpolated, extrapolated (null: no expectation)",
    ),
    "expected_reason": ("-", "Why a row has no expectation (empty where it has one)"),
}
"""Unit and meaning of every column of ``calibration.parquet`` but the file's own extras."""


def _under_load(b: Bound) -> bool:
    """A latency measured while other requests were served: ``under-load``, or a closed-loop
    one with other clients (bounded by its request alone, so its ratio is not an efficiency)."""
    m = b.measurement
    closed = m.metric != "output_tokens_per_s" and (m.concurrency or 1) > 1
    return m.load == "under-load" or closed


def _row(b: Bound) -> dict[str, Any]:
    m = b.measurement
    return {
        "line": m.line,
        **{c: getattr(m, c) for c in COLUMNS if c not in ("batch", "value", "source")},
        "gpus": m.gpus,
        "parallel": m.parallel,
        "load": m.load,
        "concurrency": m.concurrency,
        "batch": b.batch,
        "batch_given": "max" if m.batch is None else str(m.batch),
        "context": b.context,
        "value": m.value,
        "unit": METRICS[m.metric],
        "bound": b.bound,
        "ratio": b.ratio,
        "bottleneck": b.bottleneck,
        "beats_bound": None if b.bound is None else b.status == STATUS_BEATS,
        "status": b.status,
        "reason": b.reason,
        "in_medians": b.bound is not None and not _under_load(b),
        "source": m.source,
        **m.extra,
    }


SCHEMA = {
    "batch": pl.Int64,
    "concurrency": pl.Int64,
    "bound": pl.Float64,
    "ratio": pl.Float64,
    "bottleneck": pl.String,
    "beats_bound": pl.Boolean,
}
"""Columns that may be null on every row, typed all the same."""


def calibrate(
    path: str | Path, attention_dtype: str = "auto", engine: str | None = None
) -> pl.DataFrame:
    """Every measurement of a calibration CSV with its bound, ratio and status.

    Parameters
    ----------
    path
        The CSV of measurements (``sweeps calibrate``'s format; the shipped one is
        ``sweeps.calibrate.shipped_measurements()``).
    attention_dtype
        The attention's compute dtype, as ``sweeps.calibrate.bounds.bounds`` takes it
        (``auto``: the KV format's peak, bf16 where a device lacks it; ``gemm``; a dtype).
    engine
        Also each row's expected figure on this engine (or ``source``: each row's own);
        ``None``: the bounds alone.

    Returns
    -------
    pl.DataFrame
        One row per measurement: its bound, ratio and status; with ``engine``, also each
        row's ``engine``, ``regime``, ``expected`` value and ``error``
        (``sweeps.calibrate.expected``; the measured extra).
    """
    found = bounds(load_measurements(path), attention_dtype)
    frame = pl.DataFrame(
        [_row(b) for b in found], schema_overrides=SCHEMA, infer_schema_length=None
    )
    if engine is None:
        return frame
    from sweeps.calibrate.expected import EXPECTED_COLUMNS, expected_rows

    default = None if engine == "source" else engine
    extra = expected_rows(found, default).select(EXPECTED_COLUMNS)
    return pl.concat([frame, extra], how="horizontal")


def summarize_efficiency(frame: pl.DataFrame, by: tuple[str, ...] = ("hardware",)) -> pl.DataFrame:
    """Per device (or per ``by``: ``("source", "hardware")``) and bottleneck: how much of its
    bound the measurements reached.

    ``median``, ``min`` and ``max`` of the ratio over the rows limited by bandwidth
    (``memory-bound``: the achieved share of the bandwidth bound) or by compute; ``rows``.
    Only rows ``in_medians``: a row without a bound, or a latency measured under load, is left
    out.
    """
    return (
        frame.filter(pl.col("in_medians"))
        .group_by(*by, "bottleneck")
        .agg(
            rows=pl.len(),
            median=pl.col("ratio").median(),
            min=pl.col("ratio").min(),
            max=pl.col("ratio").max(),
        )
        .sort(*by, "bottleneck")
    )


def calibration_chart(frame: pl.DataFrame) -> alt.Chart:
    """Measured against bound on log axes, the y = x roof, coloured by metric."""
    import altair as alt

    data = frame.filter(pl.col("bound").is_not_null()).select(
        "model", "hardware", "tp", "batch_given", "metric", "value", "bound", "ratio", "source"
    )
    values = data.select(pl.concat_list("value", "bound").explode()).to_series().to_numpy()
    values = values[np.isfinite(values) & (values > 0)]
    # no bounded row (each one's reason is in the table): the roof alone, over six decades
    low, high = (float(values.min()) / 2, float(values.max()) * 2) if values.size else (1e-3, 1e3)
    subtitle = "y = x is the roof: throughputs sit below it, latencies above"
    if not data.height:
        subtitle += "; no row has a bound (see calibration.parquet's reason column)"
    scale = alt.Scale(type="log", domain=[low, high])
    points = (
        alt.Chart(alt.Data(values=data.to_dicts()))
        .mark_point(filled=True, size=60, opacity=0.8)
        .encode(
            x=alt.X("bound:Q", scale=scale, title="roofline bound [token/s or s]"),
            y=alt.Y("value:Q", scale=scale, title="measured [token/s or s]"),
            color=alt.Color("metric:N", title="metric"),
            shape=alt.Shape("hardware:N", title="hardware"),
            tooltip=[
                "model:N",
                "hardware:N",
                "tp:Q",
                "batch_given:N",
                "metric:N",
                alt.Tooltip("value:Q", format=".4g"),
                alt.Tooltip("bound:Q", format=".4g"),
                alt.Tooltip("ratio:Q", format=".3f"),
                "source:N",
            ],
        )
    )
    roof = (
        alt.Chart(alt.Data(values=[{"x": low, "y": low}, {"x": high, "y": high}]))
        .mark_line(color="#222222", strokeDash=[4, 3])
        .encode(x=alt.X("x:Q", scale=scale), y=alt.Y("y:Q", scale=scale))
    )
    return (roof + points).properties(
        width=420,
        height=360,
        title={
            "text": "Measured results against their roofline bounds",
            "subtitle": subtitle,
        },
    )


def write_calibration(frame: pl.DataFrame, folder: str | Path) -> list[str]:
    """Write ``calibration.parquet`` (units in its metadata) and the chart into ``folder``.

    Returns the files written, relative to ``folder``.
    """
    from sweeps.export import write_with_units

    folder = Path(folder)
    info = {
        c: {"unit": UNITS[c][0], "description": UNITS[c][1]}
        if c in UNITS
        else {"unit": "-", "description": "Column of the measurements file, kept as given"}
        for c in frame.columns
    }
    write_with_units(frame, folder / "calibration.parquet", info)
    chart = calibration_chart(frame)
    chart.save(str(folder / "calibration.html"))
    files = ["calibration.parquet", "calibration.html"]
    try:
        chart.save(str(folder / "calibration.png"), ppi=150)
        files.append("calibration.png")
    except (ImportError, ValueError):  # no vl-convert: the HTML still has the chart
        pass
    return files
