"""The written figures and report page: files, offline HTML, and a headless Chromium check."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import xarray as xr
from click.testing import CliRunner

from sweeps.charts import (
    output_hooks,
    slices,
    sweep_figures,
    time_figures,
    write_figures,
    write_figures_streamed,
)
from sweeps.charts.rendering import bundle_file, javascript
from sweeps.charts.report import CONDENSED
from sweeps.cli.main import cli
from sweeps.config import load_config, parse_config
from sweeps.grid import build_grid
from sweeps.outputs import declared
from sweeps.pipeline import run_to_folder

CONFIG = """
[sweep]
name = "report-test"
title = "Report test: Llama-3 8B on H100"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 16, 256]
context = [512, 32768]
kv_heads = ["native", 1]
[outputs]
charts = ["ceiling", "bottleneck", "ai-vs-batch", "roofline"]
formats = ["html", "svg"]
"""
CHARTS = ("ceiling", "bottleneck", "ai-vs-batch", "roofline")
CONFIGS = sorted((Path(__file__).parent.parent / "configs").glob("*.toml"))
MOE = Path(__file__).parent.parent / "configs" / "moe-mla-study.toml"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
PROBE = """<script>
window.__errors = [];
const __keep = message => { window.__errors.push(String(message)); };
const __error = console.error.bind(console);
console.error = (...args) => { __keep(args.join(" ")); __error(...args); };
window.addEventListener("error", event => __keep(event.message));
window.addEventListener("unhandledrejection", event => __keep(event.reason));
window.addEventListener("load", () => setTimeout(() => {
  const figure = document.querySelector("figure"), table = document.querySelector("table");
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    errors: window.__errors,
    width: window.innerWidth,
    scroll: document.documentElement.scrollWidth,
    figure_first: !!(figure && table &&
      (figure.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING)),
    fetched: performance.getEntriesByType("resource").map(entry => entry.name),
    drawn: [...document.querySelectorAll("figure.chart")].map(figure =>
      figure.querySelector("svg") ? figure.querySelectorAll("path").length : 0),
    smallest_text: Math.min(...[...document.querySelectorAll("figure.chart svg")].map(svg => {
      const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
      return Math.min(...[...svg.querySelectorAll("text")].map(text =>
        parseFloat(text.getAttribute("font-size") || getComputedStyle(text).fontSize) * scale));
    })),
    links: document.querySelectorAll("nav.contents a[href^='#fig-']").length,
    sections: document.querySelectorAll("details.section[open]").length,
    enlarged: (() => {
      const figure = document.querySelector("figure.chart");
      if (!figure) return null;
      figure.click();
      const width = figure.getBoundingClientRect().width, on = figure.matches(".enlarged");
      figure.click();
      return {on, width, off: !figure.matches(".enlarged")};
    })(),
  });
  document.body.appendChild(out);
  if (window.parent !== window) window.parent.postMessage(out.textContent, "*");
}, 3000));
</script>"""
PHONE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe src="probed.html" style="width:390px;height:900px;border:0"></iframe>
<script>
window.addEventListener("message", event => {
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = event.data;
  document.body.appendChild(out);
});
</script></body></html>"""
"""A 390 px wide viewport (a phone): Chromium's headless windows are at least 500 px wide, so
the report is opened in a 390 px iframe, whose probe posts its findings to this page."""


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("report")
    sweep = parse_config(CONFIG)
    return folder, write_figures(build_grid(sweep), folder, sweep.charts, sweep.formats)


def test_every_chart_in_every_format_and_the_report(result: tuple[Path, list[str]]) -> None:
    folder, written = result
    expected = {
        f"charts/{chart}-llama-3-8b-h100-sxm.{fmt}"
        for chart in CHARTS
        for fmt in ("html", "svg", "txt")
    }
    assert set(written) == expected | {bundle_file(), "report.html"}
    assert written[-2:] == [bundle_file(), "report.html"]
    for path in (p for p in written if not p.endswith(".txt")):
        assert (folder / path).stat().st_size > 5_000


def test_each_figure_has_its_caption_beside_it_to_paste(result: tuple[Path, list[str]]) -> None:
    folder, _ = result
    text = (folder / "charts" / "ceiling-llama-3-8b-h100-sxm.txt").read_text("utf-8")
    head, body = text.split("\n\n")
    assert head == (
        "llama-3-8b on H100 SXM5 80GB: fraction of the decode ceiling (weights bf16, KV bf16, tp 1)"
    )
    assert "At the memory wall decode reaches " in body
    assert "\n" not in body.rstrip("\n")  # one paragraph: the figure's wrapped lines joined
    assert "  " not in body


def test_html_is_offline_and_loads_the_folders_one_bundle(
    result: tuple[Path, list[str]],
) -> None:
    folder, written = result
    bundle = javascript()
    assert (folder / bundle_file()).read_text("utf-8") == bundle
    for path in (p for p in written if p.endswith(".html")):
        text = (folder / path).read_text("utf-8")
        assert "vegaEmbed" in text
        sources = re.findall(r'<script[^>]+src="([^"]+)"', text)
        up = "../" if path.startswith("charts/") else ""
        assert sources == [f"{up}{bundle_file()}"], path  # relative: the folder moves whole
        assert (folder / path).parent.joinpath(sources[0]).resolve() == (
            folder / bundle_file()
        ).resolve()
        assert not re.search(r"<link[^>]+href=|@import", text), path
        assert "cdn.jsdelivr" not in text
        assert len(text) < 100_000  # no copy of the bundle in any page


def test_report_puts_the_figures_first_in_reading_order(result: tuple[Path, list[str]]) -> None:
    folder, _ = result
    text = (folder / "report.html").read_text("utf-8")
    assert "<h1>Report test: Llama-3 8B on H100</h1>" in text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert text.index('<figure id="fig-0"') < text.index("<table>")
    assert text.count('class="chart"') == len(CHARTS)
    specs = json.loads(re.search(r"const specs = (\[.*?\]);\n", text, re.S).group(1))  # type: ignore[union-attr]
    assert [s["title"]["text"].split(": ")[1].split(" (")[0] for s in specs] == [
        "fraction of the decode ceiling",
        "what bounds decode",
        "arithmetic intensity against batch",
        "roofline of decode and prefill",
    ]
    headings = re.findall(r"<summary><h2>(.*?)</h2></summary>", text)
    assert headings == [declared()[kind].title for kind in CHARTS]  # each section collapsible
    assert text.count('<details class="section"') == len(CHARTS)
    assert '<h2 id="summary">Summary</h2>' in text


def test_the_report_lists_its_figures_by_model_and_device(result: tuple[Path, list[str]]) -> None:
    folder, _ = result
    text = (folder / "report.html").read_text("utf-8")
    nav = text[text.index('<nav class="contents"') : text.index("</nav>")]
    assert nav.index("<li>llama-3-8b<ul><li>h100-sxm: ") < nav.index('href="#fig-0"')
    links = re.findall(r'<a href="#fig-(\d+)">(.*?)</a>', nav)
    assert links == [(str(i), kind) for i, kind in enumerate(CHARTS)]
    assert '<a href="#summary">Summary</a>' in nav
    assert "figure.chart.enlarged" in text  # a click enlarges a figure
    assert 'addEventListener("click"' in text


def test_a_page_on_its_own_inlines_the_bundle() -> None:
    from sweeps.charts.rendering import html_page

    spec = {"data": {"values": [{"x": 1}]}, "mark": "point"}
    assert html_page(spec).decode("utf-8").count(javascript()) == 1
    assert "<script src=" not in html_page(spec).decode("utf-8")


def test_the_report_keeps_figures_whole_in_print(result: tuple[Path, list[str]]) -> None:
    folder, _ = result
    text = (folder / "report.html").read_text("utf-8")
    print_css = text[text.index("@media print") :]
    assert "figure { break-inside: avoid; page-break-inside: avoid; }" in print_css
    assert "figure svg, figure canvas { max-width: 100%; height: auto; }" in text


def test_the_summary_is_condensed_and_the_full_table_collapsed(
    result: tuple[Path, list[str]],
) -> None:
    folder, _ = result
    text = (folder / "report.html").read_text("utf-8")
    summary = text[text.index('<h2 id="summary">Summary</h2>') :]
    condensed = summary[: summary.index("<details>")]
    assert condensed.count("<tr>") == 2  # the header and one row: one model on one device
    for column in CONDENSED:
        assert f"<th>{html.escape(column)}</th>" in condensed
    assert "<td>tp 1, bf16 weights</td>" in condensed
    assert "<summary>Every configuration: 4 rows</summary>" in summary
    assert "first batch reaching the threshold [sequence]" in summary
    assert "max batch [sequence]" in summary


def test_a_model_that_fits_nowhere_gets_one_line_saying_why(tmp_path: Path) -> None:
    sweep = load_config(MOE)
    grid = build_grid(sweep).sel(tp=[1, 2], hardware=["h200"])
    written = write_figures(grid, tmp_path, ["ceiling", "bottleneck"], [])
    assert written == [bundle_file(), "report.html"]
    text = (tmp_path / "report.html").read_text("utf-8")
    assert text.count("<li>Not drawn:") == 1
    assert (
        "<li>Not drawn: deepseek-v3 does not fit on H200 SXM 141GB at any tp (1, 2) and weight "
        "dtype (bf16, fp8) drawn.</li>"
    ) in text
    assert text.count('class="chart"') == 4  # mixtral and qwen3, two charts each
    assert "<td>deepseek-v3</td><td>H200 SXM 141GB</td><td>does not fit</td>" in text


def test_slices_are_views_of_the_grid_in_model_then_device_order() -> None:
    sweep = parse_config(
        CONFIG.replace('hardware = ["h100-sxm"]', 'hardware = ["h100-sxm", "h200"]')
    )
    grid = build_grid(sweep)
    pieces = list(slices(grid))
    assert [(str(p["model"].values[0]), str(p["hardware"].values[0])) for p in pieces] == [
        (str(m), str(h)) for m in grid["model"].values for h in grid["hardware"].values
    ]
    full = next(n for n, v in grid.data_vars.items() if {"model", "hardware"} <= set(v.dims))
    for piece in pieces:
        assert piece.sizes["model"] == piece.sizes["hardware"] == 1
        assert np.shares_memory(piece[full].values, grid[full].values)  # no copy of the grid


def test_streamed_slices_give_the_same_figures_one_slice_at_a_time(tmp_path: Path) -> None:
    sweep = parse_config(
        CONFIG.replace('hardware = ["h100-sxm"]', 'hardware = ["h100-sxm", "h200", "b200"]')
    )
    grid = build_grid(sweep)
    kinds = ("ceiling", "roofline")  # two kinds are enough, and half the time
    whole = write_figures(grid, tmp_path / "whole", kinds, ["svg"])
    asked: list[tuple[str, list[str]]] = []

    def pieces() -> Iterator[xr.Dataset]:
        for one in slices(grid):
            done = sorted(p.name for p in (tmp_path / "streamed" / "charts").glob("*.svg"))
            asked.append((str(one["hardware"].values[0]), done))
            yield one

    (tmp_path / "streamed" / "charts").mkdir(parents=True)
    streamed = write_figures_streamed(pieces(), tmp_path / "streamed", kinds, ["svg"])
    assert streamed == whole
    assert "charts/roofline-devices-llama-3-8b.svg" in streamed
    assert [device for device, _ in asked] == ["h100-sxm", "h200", "b200"]
    # the first device's charts were on disk before the third slice was asked for
    assert {f"{kind}-llama-3-8b-h100-sxm.svg" for kind in kinds} <= set(asked[2][1])
    for path in whole:  # the same charts (Vega numbers its clip paths per process: not bytes)
        ours, theirs = (tmp_path / "streamed" / path), (tmp_path / "whole" / path)
        assert abs(ours.stat().st_size - theirs.stat().st_size) < 20


def test_pipeline_hook_lists_the_figures_in_the_manifest(tmp_path: Path) -> None:
    sweep = parse_config(CONFIG.replace('formats = ["html", "svg"]', 'formats = ["svg"]'))
    run = run_to_folder(sweep, tmp_path, hooks=output_hooks(sweep))
    manifest = json.loads((run.folder / "manifest.json").read_text("utf-8"))
    assert "report.html" in manifest["files"]
    assert sum(f.startswith("charts/") and f.endswith(".svg") for f in manifest["files"]) == len(
        CHARTS
    )
    assert sum(f.endswith(".txt") for f in manifest["files"]) == len(CHARTS)
    assert "figures" in manifest["timings_s"]


def test_time_figures_reports_the_seconds_of_the_figures(tmp_path: Path) -> None:
    sweep = parse_config(CONFIG.replace('formats = ["html", "svg"]', "formats = []"))
    timings = time_figures(build_grid(sweep), sweep)
    assert list(timings) == ["figures"]
    assert timings["figures"] > 0


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_sweeps_run_writes_every_chart_of_the_shipped_configs(config: Path, tmp_path: Path) -> None:
    sweep = load_config(config)
    outcome = CliRunner().invoke(cli, ["run", str(config), "--out", str(tmp_path)])
    assert outcome.exit_code == 0, outcome.output
    folder = tmp_path / sweep.name
    report = (folder / "report.html").read_text("utf-8")
    for model in sweep.models:
        for fmt in sweep.formats if "serving" in sweep.charts else ():  # one set per model
            for name in ("pareto", "request-time", "fleet"):
                assert (folder / "charts" / f"serving-{name}-{model.id}.{fmt}").is_file()
        for fmt in sweep.formats:  # the speculative and prefix figures: one set per model
            for kind, names in (("speculative", ("speedup", "verify-roofline")),
                                ("prefix", ("prefix-ttft",))):  # fmt: skip
                for name in names if kind in sweep.charts else ():
                    assert (folder / "charts" / f"{kind}-{name}-{model.id}.{fmt}").is_file()
        for device in sweep.hardware:
            per_device = ("serving", "speculative", "prefix", "model-size")
            for fmt in sweep.formats if "model-size" in sweep.charts else ():  # one per device
                assert (folder / "charts" / f"model-size-{device.id}.{fmt}").is_file()
            for chart in (c for c in sweep.charts if c not in per_device):
                for fmt in sweep.formats:
                    drawn = (folder / "charts" / f"{chart}-{model.id}-{device.id}.{fmt}").is_file()
                    assert drawn or f"Not drawn: {model.id} does not fit on" in report


def open_in_chromium(folder: Path, profile: Path) -> dict[str, Any]:
    """What the probe finds in ``folder``'s report, opened offline in a 390 px frame."""
    (folder / "probed.html").write_text(
        (folder / "report.html").read_text("utf-8").replace("<head>", "<head>" + PROBE, 1),
        "utf-8",
    )
    page = folder / "phone.html"
    page.write_text(PHONE, "utf-8")
    command = [
        str(CHROMIUM),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        "--window-size=600,1000",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    probe = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert probe is not None, "the probe did not run: " + done.stderr[-2000:]
    assert "ERROR:CONSOLE" not in done.stderr
    found: dict[str, Any] = json.loads(html.unescape(probe.group(1)))
    return found


def assert_legible_offline(found: dict[str, Any], folder: Path, figures: int) -> None:
    assert found["errors"] == []
    assert len(found["drawn"]) == figures
    assert all(paths > 5 for paths in found["drawn"]), found["drawn"]  # every chart drawn
    assert found["width"] == 390
    assert found["scroll"] <= found["width"]  # no sideways scrolling of the page on a phone
    assert found["smallest_text"] >= 9  # chart text keeps its size: it scrolls in its box
    assert found["figure_first"] is True
    assert found["links"] == figures  # the contents link every figure
    assert found["sections"] >= 1
    assert found["enlarged"] == {"on": True, "width": 390, "off": True}
    # offline: nothing requested (the folder's bundle is a file: drawn charts show it loaded)
    assert found["fetched"] == []
    assert (folder / bundle_file()).is_file()


NO_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed "
    "(apt-get install -y chromium); the report page is not checked in a browser",
)


@NO_CHROMIUM
def test_report_draws_every_chart_in_headless_chromium_at_390_px(
    result: tuple[Path, list[str]], tmp_path: Path
) -> None:
    folder, _ = result
    assert_legible_offline(open_in_chromium(folder, tmp_path / "profile"), folder, len(CHARTS))


SEED = Path(__file__).parent.parent / "configs" / "seed-llama3-8b-h100.toml"


def test_the_seed_studys_folder_is_small_and_its_report_opens_offline(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(cli, ["run", str(SEED), "--out", str(tmp_path)])
    assert outcome.exit_code == 0, outcome.output
    folder = tmp_path / load_config(SEED).name
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size < 2_000_000, size  # it was 6.5-7.1 MB: a bundle in every page
    assert len(list(folder.rglob("*.js"))) == 1
    if CHROMIUM is not None:
        assert_legible_offline(open_in_chromium(folder, tmp_path / "profile"), folder, 4)


def test_the_config_width_reaches_the_written_png(tmp_path: Path) -> None:
    from tests.test_charts import png_pixels

    text = CONFIG.replace('formats = ["html", "svg"]', 'formats = ["png", "pdf"]')
    sweep = parse_config(
        text.replace(
            'charts = ["ceiling", "bottleneck", "ai-vs-batch", "roofline"]', 'charts = ["ceiling"]'
        )
        + '[outputs.figures]\nwidth = "single-column"\n'
    )
    written = sweep_figures(build_grid(sweep), sweep, tmp_path)
    assert written == [
        "charts/ceiling-llama-3-8b-h100-sxm.png",
        "charts/ceiling-llama-3-8b-h100-sxm.pdf",
        "charts/ceiling-llama-3-8b-h100-sxm.txt",
        bundle_file(),
        "report.html",
    ]
    width, _, _ = png_pixels((tmp_path / written[0]).read_bytes())
    assert 0.6 * 3.5 * 300 <= width <= 1.05 * 3.5 * 300  # a 3.5 in column at 300 dpi
    assert (tmp_path / written[1]).read_bytes().startswith(b"%PDF-")


def test_a_long_summary_keeps_only_the_rows_the_page_shows(tmp_path: Path) -> None:
    text = CONFIG.replace("batch = [1, 16, 256]", "batch = [1]").replace(
        "context = [512, 32768]", "context = { start = 512, stop = 1611 }"
    )
    sweep = parse_config(text)  # 1,100 contexts x 2 KV-head settings: 2,200 summary rows
    assert write_figures(build_grid(sweep), tmp_path, [], []) == [bundle_file(), "report.html"]
    page = (tmp_path / "report.html").read_text("utf-8")
    details = page[page.index("<details>") : page.index("</details>")]
    assert (
        "<summary>Every configuration: 2,200 rows (the first 1,000; the Parquet files have "
        "all)</summary>"
    ) in details
    assert details.count("<tr>") == 1 + 1000


def test_grids_built_one_model_and_device_at_a_time_give_the_same_files(tmp_path: Path) -> None:
    """The run layer's route for a streamed grid: a sub-sweep per model and device."""
    sweep = parse_config(
        CONFIG.replace('hardware = ["h100-sxm"]', 'hardware = ["h100-sxm", "h200"]').replace(
            'formats = ["html", "svg"]', 'formats = ["svg"]'
        )
    )
    whole = sweep_figures(build_grid(sweep), sweep, tmp_path / "whole")
    pieces = (
        build_grid(dataclasses.replace(sweep, models=(m,), hardware=(h,)))
        for m in sweep.models
        for h in sweep.hardware
    )
    assert sweep_figures(pieces, sweep, tmp_path / "pieces") == whole
    ours = (tmp_path / "pieces" / "report.html").read_text("utf-8")
    theirs = (tmp_path / "whole" / "report.html").read_text("utf-8")
    assert ours == theirs


def test_the_report_alone_gives_the_rows_of_a_whole_selection(monkeypatch) -> None:
    """Without a cross-device roofline the report's rows come from the choice alone (no
    selection of every variable of each slice): the same rows as through ``select``, for
    models that fit and one that fits nowhere, at several tp and weight dtypes."""
    from sweeps.charts import output

    grid = build_grid(load_config(MOE)).sel(tp=[1, 2], hardware=["h200"])
    settings = output.Settings()
    through_select = output._Kept()
    for one in slices(grid):
        through_select.add(one, ("roofline",), settings)

    def no_select(*_: Any, **__: Any) -> None:
        msg = "select called for the report alone"
        raise AssertionError(msg)

    monkeypatch.setattr(output, "select", no_select)
    alone = output._Kept()
    for one in slices(grid):
        alone.add(one, (), settings)
    assert alone.condensed == through_select.condensed
    assert any(row["drawn at"] == "does not fit" for row in alone.condensed)
    assert len({row["drawn at"] for row in alone.condensed}) > 1


MANY = """
[sweep]
name = "many-pairs"
[axes]
model = ["llama-3-8b", "mistral-7b", "qwen2.5-7b", "gemma-2-9b", "phi-3-mini"]
hardware = ["h100-sxm", "mi300x", "a100-80gb", "l40s", "h200"]
batch = [1, 64]
context = [2048]
[outputs]
formats = ["html"]
"""
"""25 model-device pairs, one past ``PAIRS_DRAWN``, with the default charts."""


def test_scaled_leaves_out_the_per_pair_kinds_only_past_the_pairs_drawn() -> None:
    # every count of pairs from 1 to past the bound, named or not, against the rule written
    # plainly: up to PAIRS_DRAWN (or named) all asked for; past it none drawn per pair (nor
    # the roofline across devices, drawn along the roofline), the devices' roofs for the
    # roofline, the cross-model ceiling for the ceiling
    from sweeps.charts.output import scaled
    from sweeps.outputs import PAIRS_DRAWN, default_charts, registered

    per_pair = {name for name, kind in registered().items() if kind.builder is not None}
    assert {"ceiling", "bottleneck", "ai-vs-batch", "roofline"} <= per_pair
    for charts in (default_charts(), ("roofline", "serving"), ("bottleneck",), ("model-size",)):
        for pairs in range(1, 2 * PAIRS_DRAWN):
            for named in (False, True):
                drawn, left = scaled(charts, pairs, named)
                if named or pairs <= PAIRS_DRAWN:
                    assert (drawn, left) == (tuple(charts), ())
                    continue
                assert set(left) == per_pair & set(charts)
                assert not per_pair & set(drawn)
                assert "roofline-devices" not in drawn
                assert ("device-roofs" in drawn) == ("roofline" in charts)
                assert ("model-size" in drawn) == ("ceiling" in charts or "model-size" in charts)
                assert {c for c in charts if c not in per_pair} <= set(drawn)


def test_past_the_pairs_drawn_the_default_draws_the_figures_across_them(tmp_path: Path) -> None:
    sweep = parse_config(MANY)
    assert not sweep.charts_named
    run = run_to_folder(sweep, tmp_path, hooks=output_hooks(sweep))
    manifest = json.loads((run.folder / "manifest.json").read_text("utf-8"))
    charts = {Path(f).stem for f in manifest["files"] if f.startswith("charts/")}
    across = {f"model-size-{d.id}" for d in sweep.hardware}  # one a device, across the models
    assert charts == {*across, "device-roofs-all"}  # and one figure of every device's roof
    (line,) = manifest["figures_not_drawn"]
    assert line.startswith("ceiling, bottleneck, ai-vs-batch, roofline per model and device")
    assert "25 model-device pairs" in line
    assert "name them in [outputs] charts" in line
    assert line in run.notes
    report = (run.folder / "report.html").read_text("utf-8")
    assert f"Not drawn: {html.escape(line)}." in report
    assert report.count("<tr><td>") >= 25  # the summary keeps a row for every pair


def test_charts_named_are_drawn_past_the_pairs_drawn(tmp_path: Path) -> None:
    sweep = parse_config(MANY + 'charts = ["bottleneck"]\n')
    assert sweep.charts_named
    run = run_to_folder(sweep, tmp_path, hooks=output_hooks(sweep))
    manifest = json.loads((run.folder / "manifest.json").read_text("utf-8"))
    charts = {Path(f).stem for f in manifest["files"] if f.startswith("charts/")}
    pairs = {f"bottleneck-{m.id}-{d.id}" for m in sweep.models for d in sweep.hardware}
    assert charts == pairs
    assert manifest["figures_not_drawn"] == []


def test_the_contents_fold_each_models_links_past_a_hundred_figures() -> None:
    from sweeps.charts.report import CONTENTS_OPEN, Figure, contents

    def figures(count: int) -> list[Figure]:
        return [
            Figure(f"ceiling-m{i % 7}-d{i}", "ceiling", f"m{i % 7}", f"d{i}", {})
            for i in range(count)
        ]

    few, many = contents(figures(CONTENTS_OPEN)), contents(figures(CONTENTS_OPEN + 1))
    assert "<details>" not in few
    assert many.count("<details>") == 7  # one fold a model, every link still there
    assert many.count('<a href="#fig-') == CONTENTS_OPEN + 1
    assert "<summary>m0: 15 figures</summary>" in many
    assert many.count("<ul>") == many.count("</ul>")


def test_a_null_cell_says_never_only_where_a_batch_is_never_reached() -> None:
    from sweeps.charts.report import table

    frame = pl.DataFrame(
        {"first_reached": [None, 64], "ridge_batch": [None, 8], "ttft_s": [None, 0.5]},
        schema={"first_reached": pl.Int64, "ridge_batch": pl.Int64, "ttft_s": pl.Float64},
    )
    cells = re.findall(r"<td>([^<]*)</td>", table(frame, registry=False))
    assert cells[:3] == ["never", "never", "-"]
    assert cells[3:5] == ["64", "8"]
