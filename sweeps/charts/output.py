"""Rendering: charts to offline HTML, PNG and SVG with vl-convert (no browser, nothing fetched),
the one-page ``report.html``, and the pipeline hook that writes them into a result folder."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import altair as alt
import vl_convert as vlc
import xarray as xr

from sweeps.config import Sweep
from sweeps.grid.variables import REGISTRY

from .heatmaps import bottleneck_chart, ceiling_chart
from .lines import ai_vs_batch_chart, roofline_chart
from .theme import FONT, INK, number

Builder = Callable[..., Any]
BUILDERS: dict[str, Builder] = {
    "ceiling": ceiling_chart,
    "bottleneck": bottleneck_chart,
    "ai-vs-batch": ai_vs_batch_chart,
    "roofline": roofline_chart,
}
"""Chart kind (as in ``[outputs] charts``) to its builder."""
PNG_SCALE = 2.0
REPORT = "report.html"


def vegalite_version() -> str | None:
    """The Vega-Lite version Altair writes, if vl-convert has it (else its latest) [-]."""
    wanted = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return wanted if wanted in vlc.get_vegalite_versions() else None


@lru_cache(maxsize=1)
def javascript() -> str:
    """Vega, Vega-Lite and vega-embed as one script, safe to inline in ``<script>`` [-]."""
    bundle: str = vlc.javascript_bundle(None, vl_version=vegalite_version())  # type: ignore[arg-type]
    return bundle.replace("</script", "<\\/script")


def page(title: str, body: str, specs: list[dict[str, Any]]) -> str:
    """A self-contained HTML page: ``body``, then one ``<figure>`` per spec drawn as SVG by
    the inlined vega-embed. Opens offline; nothing is fetched."""
    figures = "".join(f'<figure id="fig-{i}" class="chart"></figure>' for i in range(len(specs)))
    payload = json.dumps(specs).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: {FONT}; color: {INK}; margin: 2rem auto; max-width: 1400px;
       padding: 0 1rem; }}
table {{ border-collapse: collapse; font-size: 0.9rem; margin: 1rem 0 2rem; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; text-align: right; }}
th {{ background: #f4f4f4; }}
figure {{ margin: 2rem 0; overflow-x: auto; }}
</style></head><body>
{body}
{figures}
<script>{javascript()}</script>
<script>
const specs = {payload};
specs.forEach((spec, i) => vegaEmbed("#fig-" + i, spec, {{renderer: "svg", actions: false}})
  .catch(error => console.error("chart " + i + ": " + error)));
</script>
</body></html>
"""


def render(spec: dict[str, Any], fmt: str) -> bytes:
    """One chart spec as ``html`` (JavaScript inlined), ``png`` (2x) or ``svg`` bytes."""
    version = vegalite_version()
    if fmt == "html":
        return page(str(spec.get("title", {}).get("text", "chart")), "", [spec]).encode("utf-8")
    if fmt == "png":
        return bytes(
            vlc.vegalite_to_png(spec, vl_version=version, scale=PNG_SCALE, allowed_base_urls=[])
        )
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec, vl_version=version, allowed_base_urls=[]).encode("utf-8")
    msg = f"charts: unknown format {fmt!r}; allowed: ['html', 'png', 'svg']"
    raise ValueError(msg)


def chart_specs(
    ds: xr.Dataset, charts: tuple[str, ...] | list[str], max_cells: int | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(file stem, Vega-Lite spec)`` of every chart: ``<chart>-<model>-<hardware>`` for each
    kind in ``charts``, model and device. Each shows the grid's first tp and weight dtype and
    says so in its subtitle when there are more (the builders take ``tp=`` and
    ``weight_dtype=`` for the others)."""
    for model in (str(m) for m in ds["model"].values):
        for device in (str(h) for h in ds["hardware"].values):
            for kind in charts:
                chart = BUILDERS[kind](ds, model, device, max_cells=max_cells)
                yield f"{kind}-{model}-{device}", chart.to_dict()


def _cell(value: object) -> str:
    if value is None:
        return "never"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value)
    return html.escape(f"{value:,}" if isinstance(value, int) else str(value))


def summary_table(ds: xr.Dataset) -> str:
    """The summary (``sweeps.pipeline.summarize``) as an HTML table, units in the headers."""
    from sweeps.pipeline.summary import summarize

    frame = summarize(ds)
    heads = "".join(
        f"<th>{html.escape(REGISTRY[c].label if c in REGISTRY else c.replace('_', ' '))}</th>"
        for c in frame.columns
    )
    rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in frame.iter_rows()
    )
    return f"<table><thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table>"


def report_html(ds: xr.Dataset, specs: list[tuple[str, dict[str, Any]]]) -> str:
    """One offline page: the sweep's title, its note, the summary table and every figure."""
    title = str(ds.attrs.get("title", ds.attrs.get("sweep", "sweep")))
    body = (
        f"<h1>{html.escape(title)}</h1>\n<p>{html.escape(str(ds.attrs.get('note', '')))}</p>"
        f"\n<h2>Summary</h2>\n{summary_table(ds)}\n<h2>Figures</h2>"
    )
    return page(title, body, [spec for _, spec in specs])


def write_figures(
    ds: xr.Dataset,
    folder: Path,
    charts: tuple[str, ...] | list[str],
    formats: tuple[str, ...] | list[str],
    max_cells: int | None = None,
    report: bool = True,
) -> list[str]:
    """Write ``charts/<stem>.<fmt>`` for every chart and format, and ``report.html``;
    returns the paths written, relative to ``folder``."""
    specs = list(chart_specs(ds, charts, max_cells))
    written: list[str] = []
    if specs and formats:
        (folder / "charts").mkdir(parents=True, exist_ok=True)
    for stem, spec in specs:
        for fmt in formats:
            relative = f"charts/{stem}.{fmt}"
            (folder / relative).write_bytes(render(spec, fmt))
            written.append(relative)
    if report:
        (folder / REPORT).write_text(report_html(ds, specs), "utf-8")
        written.append(REPORT)
    return written


def output_hooks(sweep: Sweep) -> tuple[Callable[[xr.Dataset, Sweep, Path], list[str]], ...]:
    """Hooks for ``sweeps.pipeline.run_to_folder``: the charts ``sweep`` asks for in the
    formats it asks for, and the report page."""

    def figures(ds: xr.Dataset, sweep: Sweep, staging: Path) -> list[str]:
        return write_figures(
            ds, staging, sweep.charts, sweep.formats, sweep.options.max_chart_cells
        )

    return (figures,)
