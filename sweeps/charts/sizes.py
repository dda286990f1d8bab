"""The model-size heatmap: parameters down, context across, coloured by the share of the
decode ceiling reached at the memory wall, one figure per device (docs/model-size.md).

Drawn from every model of a sweep, so from small per-slice rows (``size_rows``) kept while the
slices stream past; ``size_figures`` draws them once every slice was seen. No physics here:
the share is the grid's ``wall_fraction_of_ceiling`` (the MoE form for a mixture of experts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from sweeps.outputs import Kind, register

from .data import percent_labels, reached, select, shown_percent
from .report import Figure
from .spec import spec_of
from .theme import DOES_NOT_FIT, INK, SEQUENTIAL, category_scale, heading, size_of, themed

SHARE = "wall_share"
"""Column of the share of the ceiling reached at the memory wall [1]."""


_READS = ("wall_fraction_of_ceiling", "max_batch", "parallel", "replica_devices")
"""The variables ``size_rows`` reads of a slice (the parallel ones where it has them)."""


def size_rows(one: xr.Dataset, **options: Any) -> pl.DataFrame:
    """One row per context of a model-and-device slice, at the tp and weight dtype its other
    charts show (``options`` as ``data.select``), the first KV-head setting and KV dtype.

    Its share (``SHARE``) is that of the decode ceiling reached at the memory wall [1], NaN
    where not one sequence fits: the grid's ``wall_fraction_of_ceiling``, ``max_batch /
    (knee_batch + max_batch)`` for a dense model, and for a mixture of experts the share at the
    weights the wall's batch reads (``sweeps.physics.moe_fraction_of_ceiling``)."""
    model, device = str(one["model"].values[0]), str(one["hardware"].values[0])
    # the variables read (and those the layout is picked by), not the slice's hundred: a run
    # of many model-device pairs takes a row of each
    sel = select(one[[n for n in _READS if n in one.data_vars]], model, device, **options)
    ds = sel.ds.isel(kv_heads=0, kv_dtype=0)
    # as Variables: a DataArray carries the slice's hundred coordinates through every step
    wall, most = ds["wall_fraction_of_ceiling"].variable, ds["max_batch"].variable
    share = np.atleast_1d(wall.where(most >= 1).transpose("context").values).astype(float)
    contexts = np.atleast_1d(ds["context"].values).astype(np.int64)
    kv = np.atleast_1d(ds["kv_heads_count"].values)[0]
    rows = len(contexts)
    return pl.DataFrame(
        {
            "model": [model] * rows,
            "hardware": [device] * rows,
            "device": [sel.device_name] * rows,
            "params": [float(np.atleast_1d(ds["params"].values)[0])] * rows,
            "tp": sel.tp,  # a scalar, broadcast: Int32 as before
            "weight_dtype": [sel.weight_dtype] * rows,
            "kv": [f"{int(kv)} KV heads, {ds['kv_dtype'].item()} cache"] * rows,
            "context": contexts,
            "max_batch": np.atleast_1d(most.transpose("context").values),
            SHARE: share,
            "threshold": [sel.threshold] * rows,
        }
    ).with_columns(pl.col(SHARE).fill_nan(None))


def size_label(params: float) -> str:
    """A parameter count as a row label: ``8.03 B``, ``1.01 T`` [-]."""
    scale, suffix = (1e12, "T") if params >= 1e12 else (1e9, "B")
    return f"{params / scale:.3g} {suffix}"


def _caption(rows: pl.DataFrame, threshold: float) -> list[str]:
    """What the figure shows, computed from its rows: per context, the largest model whose
    decode reaches the threshold at the wall, and the range of shares."""
    lines = []
    contexts = sorted(rows["context"].unique().to_list())
    largest = []
    for context in contexts:
        hit = rows.filter((pl.col("context") == context) & pl.col("reached"))
        largest.append(
            f"up to {size_label(float(hit['params'].to_numpy().max()))}" if hit.height else "none"
        )
    goal = percent_labels(np.asarray([threshold]), threshold)[0]
    if len(set(largest)) == 1:
        span = f"{contexts[0]:,} to {contexts[-1]:,}" if len(contexts) > 1 else f"{contexts[0]:,}"
        found = f"{largest[0]} at every context ({span} tokens)"
    else:
        found = "; ".join(f"{c:,} tokens: {t}" for c, t in zip(contexts, largest, strict=True))
    lines.append(f"Reaching {goal} of the ceiling at the memory wall: {found}.")
    shares = rows[SHARE].drop_nulls()
    if shares.len():
        lo, hi = (
            percent_labels(np.asarray([v]), threshold)[0] for v in (shares.min(), shares.max())
        )
        lines.append(f"At the wall decode reaches {lo} to {hi} of its ceiling; grey: does not fit.")
    tps = sorted(rows["tp"].unique().to_list())
    if len(tps) > 1:
        lines.append(
            f"Each model at the smallest tp where it fits ({', '.join(map(str, tps))}; the row "
            "label says which)."
        )
    lines.append(f"At {rows['kv'][0]}, {rows['weight_dtype'][0]} weights.")
    return lines


def cells(rows: pl.DataFrame, hardware: str) -> pl.DataFrame:
    """The cells of ``hardware``'s figure, largest model first: ``rows`` with the row label
    (the size, and the tp where the rows differ in it), the cell's written percentage, whether
    it fits and whether it is ``data.reached``."""
    mine = rows.filter(pl.col("hardware") == hardware).sort("params", descending=True)
    threshold = float(mine["threshold"][0])
    share = mine[SHARE].fill_null(np.nan).to_numpy()
    shown_size = pl.col("params").map_elements(size_label, pl.String)
    several = mine["tp"].n_unique() > 1  # then each row says its tp
    mine = mine.with_columns(
        row=pl.format("{}, tp {}", shown_size, pl.col("tp")) if several else shown_size,
        label=pl.Series(percent_labels(share, threshold), dtype=pl.String),
        shown=pl.Series(shown_percent(share, threshold)),
        fits=pl.col("max_batch") >= 1,
    )  # fmt: skip
    return mine.with_columns(
        reached=pl.Series(reached(np.nan_to_num(share), mine["fits"].to_numpy(), threshold)),
        status=pl.when(pl.col("fits")).then(pl.lit("fits")).otherwise(pl.lit(DOES_NOT_FIT)),
    )


@themed
def model_size_chart(rows: pl.DataFrame, hardware: str, **options: Any) -> Any:
    """Heatmap of the share of the decode ceiling reached at the memory wall [1]: one row per
    model (by parameters, largest on top), one column per context, for ``hardware``.
    ``rows``: ``size_rows`` of each model on it. ``options``: ``width`` (``theme.SIZES``)."""
    size = size_of(options.get("width"))
    mine = cells(rows, hardware)
    threshold = float(mine["threshold"][0])
    order = list(dict.fromkeys(mine["row"].to_list()))
    base = alt.Chart(mine).encode(
        x=alt.X("context:O", title="context [token]", axis=alt.Axis(format=",", labelAngle=0)),
        y=alt.Y("row:N", title="model size [parameters]", sort=order),
        tooltip=[
            alt.Tooltip("model:N"),
            alt.Tooltip("params:Q", title="parameters", format=".4~s"),
            alt.Tooltip("context:O", title="context [token]"),
            alt.Tooltip("tp:O"),
            alt.Tooltip("max_batch:Q", title="max batch [sequence]", format=","),
            alt.Tooltip(f"{SHARE}:Q", title="share of ceiling at the wall [%]", format=".1%"),
        ],
    )
    heat = (
        base.mark_rect(stroke="white", strokeWidth=0.5)
        .encode(
            color=alt.Color(
                f"{SHARE}:Q",
                title="share of ceiling at the wall [%]",
                scale=alt.Scale(scheme=SEQUENTIAL, domain=[0, 1]),
                legend=alt.Legend(format=".0%", gradientLength=12 * size.font),
            )
        )
        .transform_filter(alt.datum.fits)
    )
    grey = (
        base.mark_rect()
        .encode(fill=alt.Fill("status:N", scale=category_scale(DOES_NOT_FIT), title=None))
        .transform_filter(~alt.datum.fits)
    )
    text = (
        base.mark_text()
        .encode(
            text="label:N",
            color=alt.condition(alt.datum.shown > 55, alt.value(INK), alt.value("white")),
        )
        .transform_filter(alt.datum.fits)
    )
    device = str(mine["device"][0])
    cell = int(np.clip((size.width - size.left - 150) / max(1, mine["context"].n_unique()), 28, 80))
    chart = alt.layer(heat, grey, text).properties(
        width=alt.Step(cell), height=alt.Step(max(18, size.font + 8))
    )
    what = f"share of the decode ceiling at the memory wall, by model size, on {device}"
    return chart.properties(title=heading(what[0].upper() + what[1:], _caption(mine, threshold),
                                          size))  # fmt: skip


def size_figures(parts: Sequence[pl.DataFrame], width: str) -> list[Figure]:
    """The model-size figure of each device of ``parts`` (``size_rows`` of every slice), for
    devices that ran two models or more."""
    if not parts:
        return []
    rows = pl.concat(parts)
    figures = []
    for device in dict.fromkeys(rows["hardware"].to_list()):
        if rows.filter(pl.col("hardware") == device)["model"].n_unique() < 2:
            continue
        chart = model_size_chart(rows, device, width=width)
        figures.append(Figure(f"{MODEL_SIZE.name}-{device}", MODEL_SIZE.name, "", device,
                              spec_of(chart, width)))  # fmt: skip
    return figures


MODEL_SIZE = register(Kind(
    name="model-size",
    title="Model size: the share of the ceiling at the memory wall",
    order=60,
    family=True,
    doc="per device that ran two models or more: the share of the ceiling at the memory wall, "
    "model by context",
))  # fmt: skip
