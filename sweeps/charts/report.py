"""``report.html``: a contents list by model and device, the figures in the order a reader asks
(each kind's section collapsible, each figure enlarged by a click), then a condensed summary
(one row per model and device, the full table collapsed); the page loads its folder's one
Vega bundle, or inlines it.

The sections follow the registered chart kinds (``sweeps.outputs``): each kind's ``order``
places it and its ``title`` heads it; a figure of a kind not registered is placed after them,
under its kind as heading.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import xarray as xr

from sweeps.grid.variables import REGISTRY
from sweeps.outputs import declared

from .data import Choice, first_reached_batch
from .rendering import figure_tag, page
from .theme import number, percent

REPORT = "report.html"
FULL_ROWS = 1000
"""Rows of the full summary table written into the page; the Parquet files have all."""


@dataclass(frozen=True)
class Figure:
    """One chart of the result: its file stem, kind, model and device (``None``: all), and
    its spec, or the one-line reason it was not drawn (``failed``: because building or
    drawing it raised, ``sweeps.charts.failures``)."""

    stem: str
    kind: str
    model: str
    hardware: str | None
    spec: dict[str, Any] | None
    reason: str = ""
    failed: bool = False


def _span(values: np.ndarray, fmt: Any = number, none: str = "never") -> str:
    found = values[np.isfinite(values)]
    if found.size == 0:
        return none
    lo, hi = fmt(float(found.min())), fmt(float(found.max()))
    return lo if lo == hi else f"{lo} to {hi}"


CONDENSED = (
    "model",
    "device",
    "drawn at",
    "ceiling [FLOP/byte]",
    "share of ceiling at the memory wall",
    "first batch reaching the threshold",
    "max batch [sequence]",
    "ridge batch [sequence]",
)


_CONDENSED_READS = (
    "max_batch",
    "wall_fraction_of_ceiling",
    "ceiling",
    "ridge_batch",
    "fraction_of_ceiling",  # and feasible: first_reached_batch's
    "feasible",
)
"""The variables ``condensed_row`` reads."""


def condensed_row(one: xr.Dataset, model: str, device: str, choice: Choice) -> dict[str, str]:
    """The summary of one model and device at the tp and weight dtype its charts show; the
    threshold wording follows ``data.reached``, as the charts do."""
    if not choice.fits:
        return dict(zip(CONDENSED, [model, device, "does not fit", *["-"] * 5], strict=True))
    # its variables only, not all ~100 of the slice: a report has hundreds of slices
    sel = one[list(_CONDENSED_READS)].sel(tp=choice.tp, weight_dtype=choice.weight_dtype)
    threshold = float(one.attrs.get("ceiling_fraction", 0.9))
    max_batch = sel["max_batch"].variable  # variables: no alignment, a report has hundreds
    wall = sel["wall_fraction_of_ceiling"].variable  # the MoE form for a mixture of experts
    first = first_reached_batch(sel, threshold).values.reshape(-1)
    return dict(
        zip(
            CONDENSED,
            [
                model,
                device,
                f"tp {choice.tp}, {choice.weight_dtype} weights",
                _span(sel["ceiling"].values.reshape(-1)),
                _span(wall.values.reshape(-1), percent),
                _span(first, none=f"none ≥ {percent(threshold)} in the grid"),
                _span(max_batch.values.reshape(-1).astype(float)),
                _span(sel["ridge_batch"].values.reshape(-1)),
            ],
            strict=True,
        )
    )


def full_rows(one: xr.Dataset) -> pl.DataFrame:
    """``sweeps.views.summary.summarize`` of one slice, ``ceiling_reachable`` replaced by
    the first grid batch that reaches the threshold (``data.reached``, the charts' rule);
    ``reason`` empty where the row has its figures."""
    from sweeps.views.summary import summarize

    threshold = float(one.attrs.get("ceiling_fraction", 0.9))
    first = first_reached_batch(one, threshold)
    frame = summarize(one.assign(ceiling_reachable=first)).rename(
        {"ceiling_reachable": "first_reached"}
    )
    return frame.with_columns(
        pl.col("first_reached").fill_nan(None),
        pl.col("reason").fill_null(""),  # a row with its figures has no reason (not "never")
    )


NEVER = ("first_reached", "ridge_batch")
"""Columns whose null means the batch is never reached (the terminal's rule too); any other
null cell has no value at that row and shows as a dash."""


def _cell(value: object, column: str = "") -> str:
    if value is None:
        return "never" if column in NEVER else "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value)
    return html.escape(f"{value:,}" if isinstance(value, int) else str(value))


def _head(column: str) -> str:
    if column == "first_reached":
        return "first batch reaching the threshold [sequence]"
    return REGISTRY[column].label if column in REGISTRY else column.replace("_", " ")


def table(frame: pl.DataFrame, limit: int | None = None, registry: bool = True) -> str:
    """``frame`` as an HTML table (in a box that scrolls sideways on a narrow screen), its
    headers the registry's labels with units (``registry``) or the column names."""
    heads = "".join(f"<th>{html.escape(_head(c) if registry else c)}</th>" for c in frame.columns)
    shown = frame if limit is None else frame.head(limit)
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{_cell(v, c)}</td>" for c, v in zip(frame.columns, row, strict=True))
        + "</tr>"
        for row in shown.iter_rows()
    )
    body = f"<table><thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table>"
    return f'<div class="table">{body}</div>'


def ordered(figures: Sequence[Figure]) -> list[Figure]:
    """Drawn figures in the registered kinds' order; kinds not registered follow, in their own
    order."""
    kinds = list(dict.fromkeys([*declared(), *(f.kind for f in figures)]))
    return sorted((f for f in figures if f.spec is not None), key=lambda f: kinds.index(f.kind))


def _label(figure: Figure) -> str:
    """A figure's link text in the contents: its stem less its model and device [-]."""
    for tail in (f"-{figure.model}-{figure.hardware}", f"-{figure.model}", f"-{figure.hardware}"):
        if tail.strip("-") and figure.stem.endswith(tail) and tail != f"-{None}":
            return figure.stem[: -len(tail)]
    return figure.stem


CONTENTS_OPEN = 100
"""Figures up to which the contents list shows every model's links; past it each model's
are folded under its name (a run asked for every figure of 1,000 pairs has 4,000)."""


def contents(drawn: Sequence[Figure]) -> str:
    """The contents list: per model, per device (then the figures of every device), links to
    its figures (``fig-N``, the index in ``drawn``), and to the summary; each model's links
    folded under its name past ``CONTENTS_OPEN`` figures."""
    by: dict[str, dict[str, list[str]]] = {}
    for index, figure in enumerate(drawn):
        place = by.setdefault(figure.model, {}).setdefault(figure.hardware or "", [])
        place.append(f'<a href="#fig-{index}">{html.escape(_label(figure))}</a>')
    items = []
    for model, devices in by.items():
        rows = "".join(
            f"<li>{html.escape(device or 'across devices')}: {', '.join(links)}</li>"
            for device, links in sorted(devices.items(), key=lambda kv: kv[0] == "")
        )
        name, inner = html.escape(model or "every model"), f"<ul>{rows}</ul>"
        if len(drawn) > CONTENTS_OPEN:
            count = sum(len(links) for links in devices.values())
            inner = f"<details><summary>{name}: {count:,} figures</summary>{inner}</details>"
            name = ""
        items.append(f"<li>{name}{inner}</li>")
    items.append('<li><a href="#summary">Summary</a></li>')
    return f'<nav class="contents" aria-label="contents"><ul>{"".join(items)}</ul></nav>'


REPORT_STYLE = """
nav.contents { font-size: 0.95rem; border-left: 3px solid #ddd; padding-left: 0.75rem; }
nav.contents ul { margin: 0.25rem 0; padding-left: 1.1rem; }
details.section > summary { cursor: pointer; }
details.section > summary h2 { display: inline; }
figure.chart { cursor: zoom-in; }
figure.chart.enlarged { position: fixed; inset: 0; z-index: 10; margin: 0; padding: 1rem;
  background: #fff; overflow: auto; cursor: zoom-out; max-width: none; }
figure.chart.enlarged svg { max-width: none; }
@media (max-width: 700px) {
  body { padding: 0 0.6rem; margin-top: 0.8rem; }
  figure.chart { overflow-x: auto; }
  figure.chart svg { max-width: none; }
}
@media print { nav.contents { display: none; } figure.chart { cursor: auto; } }
"""
"""The report's own rules: on a narrow screen a chart keeps its size (its text stays legible)
and scrolls sideways in its own box; an enlarged chart fills the window."""

ENLARGE = """
const enlarge = figure => {
  const open = !figure.classList.contains("enlarged");
  document.querySelectorAll("figure.enlarged").forEach(f => {
    f.classList.remove("enlarged");
    const svg = f.querySelector("svg");
    if (svg) svg.style.width = "";
  });
  if (!open) return;
  figure.classList.add("enlarged");
  const svg = figure.querySelector("svg");
  if (svg) svg.style.width = Math.max(window.innerWidth - 32, svg.width.baseVal.value) + "px";
};
document.querySelectorAll("figure.chart").forEach(figure =>
  figure.addEventListener("click", () => enlarge(figure)));
document.addEventListener("keydown", event => {
  if (event.key === "Escape") document.querySelectorAll("figure.enlarged").forEach(enlarge);
});
"""
"""A click on a figure enlarges it to the window, a second click or Escape puts it back."""


def report_html(
    title: str,
    note: str,
    figures: Sequence[Figure],
    condensed: Sequence[dict[str, str]],
    full: pl.DataFrame | None,
    total: int | None = None,
    plans: str = "",
    script: str | None = None,
) -> str:
    """One offline page: title and note, the contents, the figures by section (each a
    ``<details>``, open), the lines saying which were not drawn and why, the condensed
    summary, the cheapest serving plans' section (``plans``: ``plans.plans_section``), and
    the full summary collapsed: the first ``FULL_ROWS`` rows of ``full``, of ``total``
    (default: its height). ``script``: the bundle's relative path (default: inlined)."""
    drawn = ordered(figures)
    parts = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(note)}</p>" if note else ""]
    parts.append(contents(drawn) if drawn else "")
    kind = None
    for index, figure in enumerate(drawn):
        if figure.kind != kind:
            parts.append("</details>" if kind is not None else "")
            kind = figure.kind
            known = declared().get(kind)
            heading = html.escape(known.title if known else kind)
            parts.append(
                f'<details class="section" id="section-{html.escape(kind)}" open>'
                f"<summary><h2>{heading}</h2></summary>"
            )
        note = str((figure.spec or {}).get("description", ""))
        parts.append(figure_tag(index, figure.stem, note))
    parts.append("</details>" if kind is not None else "")
    reasons = list(dict.fromkeys(f.reason for f in figures if f.spec is None))
    if reasons:
        items = "".join(f"<li>Not drawn: {html.escape(r)}.</li>" for r in reasons)
        parts.append(f'<h2>Not drawn</h2><ul class="skipped">{items}</ul>')
    parts.append('<h2 id="summary">Summary</h2>')
    parts.append(table(pl.DataFrame(list(condensed), schema=list(CONDENSED)), registry=False))
    parts.append(plans)
    if full is not None and full.height:
        total = full.height if total is None else total
        more = (
            f" (the first {FULL_ROWS:,}; the Parquet files have all)" if total > FULL_ROWS else ""
        )
        parts.append(
            f"<details><summary>Every configuration: {total:,} rows{more}</summary>"
            f"{table(full, FULL_ROWS)}</details>"
        )
    return page(
        title,
        "\n".join(p for p in parts if p),
        [f.spec for f in drawn if f.spec is not None],
        script,
        REPORT_STYLE,
        ENLARGE,
    )


def labels_as_text(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its Enum columns as text: each slice's Enum knows only its own labels,
    and the page's table joins the slices."""
    return frame.with_columns(
        pl.col(name).cast(pl.String)
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.Enum | pl.Categorical)
    )
