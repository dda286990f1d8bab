"""A figure never costs the run: a chart that fails to build or to draw is skipped with one
status line, and the long batch axis that once overflowed vl-convert's stack is drawn thinned."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sweeps import outputs
from sweeps.charts import rendering
from sweeps.charts.failures import REASON_CHARS, why
from sweeps.cli.main import cli

LONG = """
[sweep]
name = "long-axis"
title = "A batch axis of 2,048 values"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = { start = 1, stop = 2048, step = 1 }
context = [512, 8192]
[outputs]
charts = ["ceiling", "bottleneck", "ai-vs-batch"]
formats = ["html", "svg"]
"""


def _forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ai-vs-batch builder raises; the bottleneck chart's drawing raises (drawn in this
    process, so that vl-convert can be patched)."""

    def broken(*_: Any, **__: Any) -> Any:
        msg = "forced: the builder met a grid it was not written for"
        raise RuntimeError(msg)

    kind = outputs.registered()["ai-vs-batch"]
    monkeypatch.setitem(outputs.KINDS, kind.name, replace(kind, builder=broken))
    monkeypatch.setattr(rendering, "drawers", lambda: None)
    draw = rendering.vlc.vegalite_to_svg

    def svg(spec: dict[str, Any], *args: Any, **kwargs: Any) -> str:
        if "what bounds decode" in str(spec.get("title")):
            msg = "Vega-Lite to SVG conversion failed:\nRangeError: forced"
            raise ValueError(msg)
        return str(draw(spec, *args, **kwargs))

    monkeypatch.setattr(rendering.vlc, "vegalite_to_svg", svg)


def test_failed_charts_are_skipped_with_one_line_each_and_the_run_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "long.toml"
    config.write_text(LONG, "utf-8")
    _forced(monkeypatch)
    outcome = CliRunner().invoke(cli, ["run", str(config), "--out", str(tmp_path / "out")])
    assert outcome.exit_code == 0, outcome.output
    folder = tmp_path / "out" / "long-axis"
    for name in ("decode.parquet", "prefill.parquet", "hardware.parquet", "models.parquet",
                 "grid.zarr", "manifest.json", "report.html"):  # fmt: skip
        assert (folder / name).exists(), name
    stem = "llama-3-8b-h100-sxm"
    lines = [line for line in outcome.stderr.splitlines() if "failed:" in line]
    assert len(lines) == 2, outcome.stderr
    assert lines[0].startswith(f"chart bottleneck-{stem} failed: ValueError: ")
    assert "RangeError: forced" in lines[0]
    assert lines[1].startswith(f"chart ai-vs-batch-{stem} failed: RuntimeError: forced")
    assert all(line.endswith("(the tables and the other figures are written)") for line in lines)
    charts = sorted(p.name for p in (folder / "charts").iterdir())
    assert charts == [
        f"ceiling-{stem}.{fmt}" for fmt in ("html", "svg", "txt")
    ]  # nothing of the failed
    report = (folder / "report.html").read_text("utf-8")
    assert f"Not drawn: chart bottleneck-{stem} failed: ValueError" in report
    assert f"Not drawn: chart ai-vs-batch-{stem} failed: RuntimeError" in report
    # the 2,048-value axis: drawn thinned, and the chart says so
    svg = (folder / "charts" / f"ceiling-{stem}.svg").read_text("utf-8")
    assert "Axes thinned to fit the figure (48 of 2,048 batch values, log-spaced)" in svg


def test_the_json_document_carries_the_same_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "one.toml"
    config.write_text(
        LONG.replace("stop = 2048, step = 1", "stop = 64, geometric = true")
        .replace('["ceiling", "bottleneck", "ai-vs-batch"]', '["ai-vs-batch"]')
        .replace('["html", "svg"]', '["html"]'),
        "utf-8",
    )
    _forced(monkeypatch)
    outcome = CliRunner().invoke(
        cli, ["run", str(config), "--out", str(tmp_path / "out"), "--json"]
    )
    assert outcome.exit_code == 0, outcome.output
    import json

    notes = json.loads(outcome.stdout)["runs"][0]["notes"]
    assert len(notes) == 1
    assert notes[0].startswith("chart ai-vs-batch-llama-3-8b-h100-sxm failed: RuntimeError")


def test_the_long_axis_spec_spells_no_long_list() -> None:
    from sweeps.charts import ceiling_chart
    from sweeps.config import parse_config
    from sweeps.grid import build_grid

    ds = build_grid(parse_config(LONG))
    spec = ceiling_chart(ds).to_dict()
    longest = 0

    def walk(node: Any) -> None:
        nonlocal longest
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "sort" and isinstance(value, list):
                    longest = max(longest, len(value))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    assert 2 < longest <= 48


def test_a_reason_is_one_short_line() -> None:
    error = ValueError("Vega-Lite to SVG conversion failed:\nRangeError: deep\n    at Function")
    assert why(error) == "ValueError: Vega-Lite to SVG conversion failed:; RangeError: deep"
    assert len(why(RuntimeError("x" * 1000))) == REASON_CHARS
    assert why(RuntimeError()) == "RuntimeError: no message"


def test_a_wrong_figures_setting_is_still_the_users_error(tmp_path: Path) -> None:
    config = tmp_path / "tp.toml"
    config.write_text(
        LONG.replace("stop = 2048, step = 1", "stop = 8, geometric = true")
        + "[outputs.figures]\ntp = 4\n",
        "utf-8",
    )
    outcome = CliRunner().invoke(cli, ["run", str(config), "--out", str(tmp_path / "out")])
    assert outcome.exit_code == 2, outcome.output
    assert not (tmp_path / "out" / "long-axis").exists()
