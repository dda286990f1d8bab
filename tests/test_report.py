"""The written figures and report page: files, offline HTML, and a headless Chromium check."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.charts import output_hooks, write_figures
from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.grid import build_grid
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
ERROR_PROBE = """<script>
window.__errors = [];
const __keep = message => { window.__errors.push(String(message)); };
const __error = console.error.bind(console);
console.error = (...args) => { __keep(args.join(" ")); __error(...args); };
window.addEventListener("error", event => __keep(event.message));
window.addEventListener("unhandledrejection", event => __keep(event.reason));
window.addEventListener("load", () => setTimeout(() => {
  const out = document.createElement("pre");
  out.id = "console-errors";
  out.textContent = JSON.stringify(window.__errors);
  document.body.appendChild(out);
}, 3000));
</script>"""


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("report")
    sweep = parse_config(CONFIG)
    return folder, write_figures(build_grid(sweep), folder, sweep.charts, sweep.formats)


def test_every_chart_in_every_format_and_the_report(result: tuple[Path, list[str]]) -> None:
    folder, written = result
    expected = {
        f"charts/{chart}-llama-3-8b-h100-sxm.{fmt}" for chart in CHARTS for fmt in ("html", "svg")
    }
    assert set(written) == expected | {"report.html"}
    for path in written:
        assert (folder / path).stat().st_size > 5_000


def test_html_is_offline(result: tuple[Path, list[str]]) -> None:
    folder, written = result
    for path in (p for p in written if p.endswith(".html")):
        text = (folder / path).read_text("utf-8")
        assert "vegaEmbed" in text
        assert not re.search(r"<script[^>]+src=|<link[^>]+href=|@import", text), path
        assert "cdn.jsdelivr" not in text


def test_report_has_title_summary_and_every_figure(result: tuple[Path, list[str]]) -> None:
    folder, _ = result
    text = (folder / "report.html").read_text("utf-8")
    assert "<h1>Report test: Llama-3 8B on H100</h1>" in text
    assert "<table>" in text
    assert "ceiling [FLOP/byte]" in text
    assert "max batch [sequence]" in text
    assert text.count('class="chart"') == len(CHARTS)
    specs = json.loads(re.search(r"const specs = (\[.*?\]);\n", text, re.S).group(1))  # type: ignore[union-attr]
    assert [s["title"]["text"].split(": ")[1].split(" (")[0] for s in specs] == [
        "fraction of the decode ceiling",
        "what bounds decode",
        "arithmetic intensity against batch",
        "roofline of decode and prefill",
    ]


def test_pipeline_hook_lists_the_figures_in_the_manifest(tmp_path: Path) -> None:
    sweep = parse_config(CONFIG.replace('formats = ["html", "svg"]', 'formats = ["svg"]'))
    run = run_to_folder(sweep, tmp_path, hooks=output_hooks(sweep))
    manifest = json.loads((run.folder / "manifest.json").read_text("utf-8"))
    assert "report.html" in manifest["files"]
    assert sum(f.startswith("charts/") for f in manifest["files"]) == len(CHARTS)
    assert "figures" in manifest["timings_s"]


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_sweeps_run_writes_every_chart_of_the_shipped_configs(config: Path, tmp_path: Path) -> None:
    from sweeps.config import load_config

    sweep = load_config(config)
    outcome = CliRunner().invoke(cli, ["run", str(config), "--out", str(tmp_path)])
    assert outcome.exit_code == 0, outcome.output
    folder = tmp_path / sweep.name
    for model in sweep.models:
        for device in sweep.hardware:
            for chart in sweep.charts:
                for fmt in sweep.formats:
                    assert (folder / "charts" / f"{chart}-{model.id}-{device.id}.{fmt}").is_file()
    assert (folder / "report.html").is_file()


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed "
    "(apt-get install -y chromium); the report page is not checked in a browser",
)
def test_report_draws_every_chart_in_headless_chromium(
    result: tuple[Path, list[str]], tmp_path: Path
) -> None:
    folder, _ = result
    page = tmp_path / "report.html"
    page.write_text(
        (folder / "report.html").read_text("utf-8").replace("<head>", "<head>" + ERROR_PROBE, 1),
        "utf-8",
    )
    command = [
        str(CHROMIUM),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    dom = done.stdout
    figures = re.findall(r'<figure id="fig-\d+" class="chart[^"]*"[^>]*>(.*?)</figure>', dom, re.S)
    assert len(figures) == len(CHARTS), done.stderr[-2000:]
    for figure in figures:
        assert "<svg" in figure or "<canvas" in figure
        assert figure.count("<path") > 5
    errors = re.search(r'<pre id="console-errors">(.*?)</pre>', dom, re.S)
    assert errors is not None, "the error probe did not run"
    assert json.loads(errors.group(1).replace("&quot;", '"')) == []
    assert "ERROR:CONSOLE" not in done.stderr
