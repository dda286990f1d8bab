"""Every workload in one serving figure: a weight dtype, a prompt and an output length per
request, chosen in the HTML page by a selector (the PNG, SVG and PDF draw the default one).

A serving grid has several workloads; a figure of the first alone never drew the cells where
disaggregation wins. Here the chart's frame holds every workload, each row labelled
(``label``), and a Vega-Lite parameter bound to a drop-down keeps the chosen one (``choose``).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import xarray as xr

from .theme import DECODE, DOES_NOT_FIT

MEETS, MISSES = "meets both objectives", "misses an objective"
"""The request-time bars' status where the batch fits (else ``theme.DOES_NOT_FIT``)."""
WORKLOAD_DIMS = ("weight_dtype", "prompt_tokens", "output_tokens")
"""What a workload of a serving figure is."""
PARAM = "workload"
"""The name of the selector's parameter in the spec."""


def label(weight_dtype: object, prompt: object, output: object) -> str:
    """``fp8 weights, 512 in, 128 out`` [-]."""
    return f"{weight_dtype} weights, {int(prompt):,} in, {int(output):,} out"  # type: ignore[call-overload]


def every_workload(
    ds: xr.Dataset, names: list[str], at: dict[str, Any], weight_dtype: str | None
) -> pd.DataFrame:
    """``names`` at ``at`` (one model, KV setting and scenario) over every workload of
    ``ds`` (one weight dtype where ``weight_dtype`` is fixed), with a ``workload`` column."""
    fixed = {k: v for k, v in at.items() if k not in WORKLOAD_DIMS}
    if weight_dtype is not None:
        fixed["weight_dtype"] = weight_dtype
    frame = ds[names].sel(fixed).to_dataframe().reset_index()
    if "weight_dtype" not in frame.columns:
        frame["weight_dtype"] = fixed["weight_dtype"]
    frame["workload"] = [
        label(w, p, o)
        for w, p, o in zip(
            frame["weight_dtype"], frame["prompt_tokens"], frame["output_tokens"], strict=True
        )
    ]
    return frame


def labels(ds: xr.Dataset, weight_dtype: str | None) -> list[str]:
    """Every workload's label, in the grid's order [-]."""
    dtypes = [weight_dtype] if weight_dtype is not None else list(ds["weight_dtype"].values)
    return [
        label(w, p, o)
        for w in dtypes
        for p in ds["prompt_tokens"].values
        for o in ds["output_tokens"].values
    ]


def selector(options: list[str], default: str) -> Any:
    """The drop-down parameter over ``options``, ``None`` where there is one workload."""
    if len(options) < 2:
        return None
    return alt.param(
        name=PARAM, value=default, bind=alt.binding_select(options=options, name="workload ")
    )


def chosen(chart: Any, param: Any, default: str) -> Any:
    """``chart`` keeping the rows of the chosen workload (``default`` without a selector)."""
    if param is None:
        return chart.transform_filter(alt.datum.workload == default)
    return chart.transform_filter(alt.datum.workload == param)


def sentence(options: list[str], default: str) -> str:
    """The caption's line on the selector [-]."""
    if len(options) < 2:
        return ""
    return (
        f"In the HTML page a selector picks one of {len(options)} workloads; the images draw "
        f"{default}."
    )


def status_sentence(data: pd.DataFrame, ttft: float, tpot: float) -> str:
    """What the grey and faded bars are, counted from the chart's own rows [-]."""
    bars = data[data["phase"] == DECODE]
    total = len(bars)
    grey = int((bars["status"] == DOES_NOT_FIT).sum())
    faded = int((bars["status"] == MISSES).sum())
    return (
        f"Grey: the batch's weights and caches do not fit ({grey} of {total} bars); faded: it "
        f"fits but misses TTFT ≤ {ttft:g} s or TPOT ≤ {tpot * 1000:g} ms ({faded} of {total}); "
        "solid: it meets both."
    )
