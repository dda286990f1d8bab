"""``explore.html``: one offline page where a reader picks the model, device, tp, context and
KV format (and an engine, where the summary has one) from drop-downs, and the ceiling heatmap
and the intensity-against-batch lines are drawn again for that choice. Vega, Vega-Lite and
vega-embed come from the folder's one bundle (``vega/<bundle>.js``, by relative path, as the
report loads them; inlined where the folder has none): no network, and the seed study's folder
stays under 2 MB (inlined, the page alone was 0.9 MB).

Altair parameters bound to HTML inputs (``alt.binding_select``) filter the summary table
(``sweeps.views.summary_table``) and the decode table. The decode rows are cut to
``EXPLORE_ROWS`` by keeping log-spaced batches, and the page says so.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import xarray as xr

from .data import spaced

EXPLORE = "explore.html"
"""The page's file name in a result folder."""

EXPLORE_ROWS = 100_000
"""Decode rows the page carries at most (log-spaced batches beyond) [row]."""

CHOICES = (
    ("model", "model"),
    ("hardware", "device"),
    ("tp", "tp"),
    ("context", "context"),
    ("kv_dtype", "KV format"),
    ("engine", "engine"),
)
"""The inputs, in order: a column of the summary and its label (``engine`` where present)."""

_DECODE = ("model", "hardware", "tp", "batch", "context", "kv_dtype", "arithmetic_intensity")


def _param(column: str, label: str, values: list[Any]) -> alt.Parameter:
    return alt.param(
        name=f"pick_{column}",
        value=values[0],
        bind=alt.binding_select(options=values, name=f"{label} "),
    )


def _matches(params: dict[str, alt.Parameter], columns: Sequence[str]) -> Any:
    test = None
    for column in columns:
        clause = alt.datum[column] == params[column]
        test = clause if test is None else test & clause
    return test


def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """Plain JSON rows (Enums as strings, null for missing)."""
    plain = frame.with_columns(
        pl.col(c).cast(pl.String) for c, t in frame.schema.items() if isinstance(t, pl.Enum)
    )
    return plain.to_dicts()


def _thin(decode: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    if decode.height <= EXPLORE_ROWS:
        return decode, ""
    batches = np.sort(decode["batch"].unique().to_numpy())
    keep = max(2, int(batches.size * EXPLORE_ROWS / decode.height))
    kept = batches[spaced(batches, keep)]
    note = f"Lines drawn at {kept.size} of {batches.size} batches (log-spaced)."
    return decode.filter(pl.col("batch").is_in(kept.tolist())), note


def explore_spec(summary: pl.DataFrame, decode: pl.DataFrame) -> tuple[dict[str, Any], str]:
    """The page's Vega-Lite spec over ``summary`` and ``decode`` and the note on thinning."""
    present = [(c, label) for c, label in CHOICES if c in summary.columns]
    params = {
        c: _param(
            c,
            label,
            sorted(
                summary[c].unique().cast(pl.String).to_list()
                if summary.schema[c] != pl.Int64
                else summary[c].unique().sort().to_list()
            ),
        )
        for c, label in present
    }
    lines_data, note = _thin(decode.select([c for c in _DECODE if c in decode.columns]))
    heat_keys = [c for c in ("model", "hardware", "tp") if c in params]
    heat = (
        alt.Chart(alt.InlineData(values=_rows(summary)))
        .transform_filter(_matches(params, heat_keys))
        .mark_rect()
        .encode(
            x=alt.X("context:O", title="context [token]"),
            y=alt.Y("kv_dtype:N", title="KV format"),
            color=alt.Color("ceiling:Q", title="ceiling [FLOP/byte]"),
            tooltip=[
                "model:N",
                "hardware:N",
                "tp:Q",
                "context:Q",
                "kv_dtype:N",
                alt.Tooltip("ceiling:Q", format=",.1f"),
                alt.Tooltip(
                    "device_tokens_per_s_wall:Q",
                    format=",.0f",
                    title="tokens/s per device at the wall",
                ),
            ],
        )
        .properties(title="Ceiling", width=360, height=160)
    )
    line_keys = [c for c in ("model", "hardware", "tp", "context", "kv_dtype") if c in params]
    lines = (
        alt.Chart(alt.InlineData(values=_rows(lines_data)))
        .transform_filter(_matches(params, line_keys))
        .mark_line(point=True)
        .encode(
            x=alt.X("batch:Q", scale=alt.Scale(type="log"), title="batch [sequence]"),
            y=alt.Y(
                "arithmetic_intensity:Q", scale=alt.Scale(type="log"), title="intensity [FLOP/byte]"
            ),
            tooltip=["batch:Q", alt.Tooltip("arithmetic_intensity:Q", format=",.1f")],
        )
        .properties(title="Intensity against batch", width=360, height=220)
    )
    chart = alt.vconcat(heat, lines).add_params(*params.values())
    return chart.to_dict(validate=False), note


def write_explore(ds: xr.Dataset, summary: pl.DataFrame, folder: Path, title: str) -> str:
    """Write ``folder/explore.html`` from the grid ``ds`` and its summary; returns its name."""
    from sweeps.export.frame import decode_frame

    from .rendering import bundle_file, page

    spec, note = explore_spec(summary, decode_frame(ds))
    body = (
        f"<h1>{html.escape(title)}: explore</h1><p>Pick a model, device, tp, context and KV "
        f"format; the figures are drawn again. {html.escape(note)}</p>"
        '<p><a href="report.html">The report</a></p>'
        '<figure id="fig-0"></figure>'
    )
    shared = (folder / bundle_file()).is_file()  # the report's copy: the folder stays small
    text = page(f"{title}: explore", body, [spec], script=bundle_file() if shared else None)
    (folder / EXPLORE).write_text(text, "utf-8")
    return EXPLORE
