"""The chart kinds' registry (``sweeps.outputs``): its light reading (the source, for the
config) agrees with the registrations (the modules, for the drawing), and every registered
kind is drawn by a run, captioned, and held by the print check, so a new kind is tested by
its registration alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sweeps import outputs
from sweeps.charts import output_hooks
from sweeps.outputs import LIGHT, Kind, chart_names, declared, registered
from sweeps.pipeline import run_to_folder
from sweeps.pipeline.mapping import sweep_from_mapping
from tests.test_print import KINDS as PRINTED

CONFIG = {
    "sweep": {"name": "kinds"},
    "axes": {
        "model": ["llama-3.2-1b", "llama-3-8b"],
        "hardware": ["h100-sxm", "h200"],
        "batch": [1, 16, 64, 256],
        "context": [1024, 4096],
        "spec_tokens": [0, 4],
        "spec_acceptance": [0.7],
        "spec_draft": ["ngram"],
        "prefix_hit_rate": [0.0, 0.9],
        "kv_tier": ["host"],
        "engine": ["vllm"],
    },
    "serving": {
        "prompt_tokens": [512],
        "output_tokens": [64],
        "arrival_rate": [4.0],
        "simulate": 100,
    },
    "outputs": {"charts": list(chart_names()), "formats": ["html"], "grid": "none"},
}
"""Two models on two devices (the cross-device and model-size figures), with serving, its
simulation, speculative decoding, prefix caching and an engine (the expected figures): every
kind has what it needs."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sweep = sweep_from_mapping(CONFIG)
    out = tmp_path_factory.mktemp("kinds")
    return run_to_folder(sweep, out, hooks=output_hooks(sweep)).folder


def _light(kind: Kind) -> tuple[object, ...]:
    return tuple(getattr(kind, name) for name in LIGHT)


def test_the_source_reading_agrees_with_the_registrations() -> None:
    light, whole = declared(), registered()
    assert list(light) == list(whole)
    assert [_light(k) for k in light.values()] == [_light(k) for k in whole.values()]
    assert all(k.builder is None for k in light.values())
    assert whole["ceiling"].builder is not None
    assert len({k.order for k in whole.values()}) == len(whole)  # one place each in the report
    with pytest.raises(ValueError, match="registered twice"):
        outputs.register(replace(whole["ceiling"], order=-1))


@pytest.mark.parametrize("name", list(registered()))
def test_every_kind_is_drawn_captioned_and_printed(folder: Path, name: str) -> None:
    kind = registered()[name]
    drawn = sorted((folder / "charts").glob(f"{name}-*.html"))
    assert drawn, f"no figure of {name!r} in {sorted(p.name for p in folder.glob('charts/*'))}"
    for figure in drawn:
        caption = figure.with_suffix(".txt").read_text("utf-8")
        assert caption.strip(), f"{figure.name} has an empty caption"
    report = (folder / "report.html").read_text("utf-8")
    assert f'id="section-{name}"' in report
    assert kind.title in report
    assert any(k == name or k.startswith(f"{name}-") for k in PRINTED), (
        f"{name!r} is not in tests/test_print.py's KINDS"
    )
