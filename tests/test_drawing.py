"""``sweeps.charts.drawing``: charts drawn in worker processes, the same as drawn here."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sweeps.charts import drawing, rendering
from sweeps.charts.drawing import Drawers
from sweeps.charts.rendering import Renderer, render_spec
from sweeps.charts.theme import SCREEN

from .conftest import ROOT

SPEC = {
    "data": {"values": [{"x": i, "y": i * i} for i in range(20)]},
    "mark": "line",
    "encoding": {
        "x": {"field": "x", "type": "quantitative"},
        "y": {"field": "y", "type": "quantitative"},
    },
    "title": "twenty points",
}
BAD = {"data": {"values": [{"x": 1}]}, "mark": "no-such-mark", "encoding": {}}


def _request(spec: dict[str, object]) -> drawing.Request:
    return (spec, ("svg", "png", "pdf"), rendering.vegalite_version(), SCREEN.png_scale)


@pytest.fixture
def pool() -> Drawers:
    made = Drawers(workers=2)
    yield made
    made.close()


def test_a_worker_draws_what_this_process_draws(pool: Drawers) -> None:
    here = render_spec(SPEC, ["svg", "png", "pdf"])
    there = pool.submit(_request(SPEC), rendering._draw_here).result(timeout=60)
    assert there["svg"] == here["svg"]
    assert there["png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert len(there["png"]) > 1_000
    assert there["pdf"][:5] == b"%PDF-"
    assert set(there) == {"svg", "png", "pdf"}


def test_a_charts_own_error_is_raised_here_and_the_worker_kept(pool: Drawers) -> None:
    with pytest.raises(ValueError, match="charts: drawing a chart: "):
        pool.submit(_request(BAD), rendering._draw_here).result(timeout=60)
    again = pool.submit(_request(SPEC), rendering._draw_here).result(timeout=60)
    assert again["svg"].startswith(b"<svg")
    assert all(worker.process.poll() is None for worker in pool.workers)


def test_a_dead_worker_is_replaced_and_its_chart_drawn_here(pool: Drawers) -> None:
    for worker in list(pool.workers):
        worker.process.kill()
        worker.process.wait()
    answers = [pool.submit(_request(SPEC), rendering._draw_here) for _ in range(4)]
    assert {a.result(timeout=60)["svg"] for a in answers} == {render_spec(SPEC, ["svg"])["svg"]}
    alive = [w for w in pool.workers if w.process.poll() is None]
    assert len(alive) == 2  # the two dead ones replaced, nothing waits on them


def test_close_ends_every_worker_and_closes_both_its_pipes() -> None:
    made = Drawers(workers=2)
    made.submit(_request(SPEC), rendering._draw_here).result(timeout=60)
    made.workers[1].process.kill()  # one already dead: still closed
    made.close()
    for worker in made.workers:
        assert worker.process.poll() is not None
        assert worker.stdin.closed
        assert worker.stdout.closed  # else a ResourceWarning at the end of the process


def test_where_no_worker_can_start_charts_are_drawn_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rendering, "drawers", lambda *_: None)
    renderer = Renderer(["svg", "html"])
    renderer.submit("chart", SPEC)
    ((stem, files),) = renderer.done()
    renderer.close()
    assert stem == "chart"
    assert list(files) == ["svg", "html"]
    assert files["svg"] == render_spec(SPEC, ["svg"])["svg"]
    assert b"twenty points" in files["html"]


def test_one_core_starts_no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drawing, "WORKERS", 1)
    monkeypatch.setattr(drawing, "_POOL", {})
    drawing.start(["png"])
    assert drawing.drawers() is None


@pytest.mark.skipif(drawing.WORKERS < 2, reason="one core: no worker processes")
def test_start_is_light_and_starts_workers_only_for_drawn_formats() -> None:
    probe = (
        "import sys; from sweeps.charts import drawing; drawing.start(['html']);"
        "print(drawing._POOL, 'altair' in sys.modules, 'vl_convert' in sys.modules);"
        "drawing.start(['png']); print(len(drawing._POOL['pool'].workers))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines() == ["{} False False", "2"]


def test_an_unguarded_user_script_runs_once(tmp_path: Path) -> None:
    script = tmp_path / "mine.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(ROOT)!r})
            print("the script ran")
            from sweeps.charts.rendering import Renderer
            renderer = Renderer(["png"])
            renderer.submit("chart", {SPEC!r})
            (_, files), = renderer.done()
            print(len(files["png"]) > 1000)
            """
        ),
        "utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines() == ["the script ran", "True"]
