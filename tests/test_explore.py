"""``explore.html`` (issue 46, item 6): drop-downs over the summary and the decode table,
offline; in headless Chromium a changed selection changes what is drawn."""

from __future__ import annotations

import html
import json
import re
import subprocess

import pytest

from sweeps.charts.hooks import output_hooks
from sweeps.config import parse_config
from sweeps.pipeline import run_to_folder

from .test_report import CHROMIUM, CHROMIUM_FLAGS

CONFIG = """
[sweep]
name = "explore"
title = "Explore"
[axes]
model = ["llama-3-8b", "qwen2.5-7b"]
hardware = ["h100-sxm", "l4"]
batch = [1, 4, 16, 64, 256]
context = [512, 8192]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = ["ceiling"]
formats = ["html"]
grid = "none"
"""

# after the figures are drawn: the SVG's marks, then again after each drop-down is changed
PROBE = """<script>
window.addEventListener("load", async () => {
  await window.sweepsDrawn;
  const wait = () => new Promise(done => setTimeout(done, 300));
  const svg = () => document.querySelector("#fig-0 svg").innerHTML;
  const found = {selects: [], first: svg(), changed: {}, fetched: []};
  for (const select of document.querySelectorAll("select")) {
    found.selects.push(select.parentElement.textContent.trim().split(" ")[0]);
  }
  for (const select of document.querySelectorAll("select")) {
    const label = select.parentElement.textContent.trim().split(" ")[0];
    const before = svg();
    select.selectedIndex = select.options.length - 1;
    select.dispatchEvent(new Event("change"));
    await wait();
    found.changed[label] = svg() !== before;
  }
  found.fetched = performance.getEntriesByType("resource").map(e => e.name);
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(found);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    sweep = parse_config(CONFIG, "explore.toml")
    out = tmp_path_factory.mktemp("explore")
    return run_to_folder(sweep, out, hooks=output_hooks(sweep)).folder


def test_the_page_is_written_offline_and_linked_from_the_report(folder):
    page = (folder / "explore.html").read_text("utf-8")
    from sweeps.charts.rendering import bundle_file

    assert f'<script src="{bundle_file()}">' in page  # the folder's own copy, no network
    assert (folder / bundle_file()).is_file()
    assert 'href="explore.html"' in (folder / "report.html").read_text("utf-8")
    specs = json.loads(re.search(r"const specs = (\[.*?\]);\n", page, re.S).group(1))
    names = {p["name"] for p in specs[0]["params"]}
    assert names == {"pick_model", "pick_hardware", "pick_tp", "pick_context", "pick_kv_dtype"}
    assert all("bind" in p for p in specs[0]["params"])


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium); explore.html is not "
    "checked in a browser",
)
def test_a_changed_selection_redraws_in_headless_chromium(folder, tmp_path):
    probed = folder / "probed-explore.html"
    text = (folder / "explore.html").read_text("utf-8")
    end = text.rindex("</body>")  # the page's own: the inlined vega-embed has one in a string
    probed.write_text(text[:end] + PROBE + text[end:], "utf-8")
    command = [
        str(CHROMIUM),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=15000",
        "--dump-dom",
        probed.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    probe = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert probe is not None, "the probe did not run: " + done.stderr[-2000:]
    found = json.loads(html.unescape(probe.group(1)))
    assert found["selects"] == ["model", "device", "tp", "context", "KV"]
    assert "<path" in found["first"] or "<rect" in found["first"]
    changed = found["changed"]
    assert changed["model"]
    assert changed["device"]
    assert changed["context"]
    assert changed["KV"]
    assert [f for f in found["fetched"] if not f.startswith("file:")] == []
