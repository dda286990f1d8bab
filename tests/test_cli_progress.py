"""Progress that moves (issue 46, item 7): each long phase of a run, the tables, the grid
file and the figures, reports its own progress as it works, on a bar of its own; none sits
at a number while another phase does the work (the figures' bar stood at 77 % for the 91 s
the grid file took).

The library's ``track`` (``sweeps.pipeline.hook.Track``) is recorded as a run calls it;
the command's bars (``sweeps.cli.console.Phases``) are drawn on a captured console.
"""

from __future__ import annotations

import io
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import xarray as xr
from rich.console import Console
from rich.progress import Progress

from sweeps.charts import output_hooks
from sweeps.cli.console import Output, Phases
from sweeps.config import parse_config
from sweeps.export.grid import chunk_count
from sweeps.pipeline import run_to_folder

CONFIG = """
[sweep]
name = "phases"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm", "h200", "a100-80gb"]
batch = [1, 8, 64, 512]
context = [512, 4096, 32768]
kv_dtype = ["bf16", "fp8"]
[outputs]
charts = ["ceiling", "bottleneck"]
formats = ["html"]
"""


class Recorder:
    """A ``Track`` keeping every call, by phase, in order (from any thread)."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        self._lock = threading.Lock()

    def __call__(self, phase: str, done: int, total: int, what: str) -> None:
        with self._lock:
            self.calls[phase].append((done, total, what))


def _moves(calls: list[tuple[int, int, str]]) -> None:
    """A phase's calls: never backwards, one total, ending at it."""
    done = [d for d, _, _ in calls]
    assert done == sorted(done), done
    assert len({t for _, t, _ in calls}) == 1
    assert done[-1] == calls[-1][1]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recorder, Path]:
    sweep = parse_config(CONFIG)
    track = Recorder()
    out = tmp_path_factory.mktemp("run")
    result = run_to_folder(sweep, out, hooks=output_hooks(sweep, track), track=track)
    return track, result.folder


def test_each_long_phase_reports_its_own_progress(recorded: tuple[Recorder, Path]) -> None:
    track, _ = recorded
    assert set(track.calls) == {"tables", "grid file", "figures"}
    for calls in track.calls.values():
        _moves(calls)


def test_the_tables_move_file_by_file(recorded: tuple[Recorder, Path]) -> None:
    track, folder = recorded
    calls = track.calls["tables"]
    files = {what.removeprefix("writing ") for _, _, what in calls[:-1]}
    assert "decode.parquet" in files
    assert all((folder / f).is_file() for f in files)
    assert [d for d, _, _ in calls[:-1]] == list(range(len(files)))  # one step a file
    assert calls[-1][:2] == (len(files), len(files))


def test_the_grid_file_moves_chunk_by_chunk(recorded: tuple[Recorder, Path]) -> None:
    track, folder = recorded
    calls = track.calls["grid file"]
    total = chunk_count(xr.open_zarr(folder / "grid.zarr"))
    assert calls[-1][:2] == (total, total)
    assert len({d for d, _, _ in calls}) > total // 2  # it moves, not 0 then 100 %
    assert {what for _, _, what in calls} == {"writing grid.zarr"}


def test_the_figures_move_slice_by_slice(recorded: tuple[Recorder, Path]) -> None:
    track, _ = recorded
    calls = track.calls["figures"]
    devices = ["h100-sxm", "h200", "a100-80gb"]
    slices = [what for _, _, what in calls if " on " in what]
    assert slices == [
        f"writing figures: llama-3-8b on {d} ({i} of 3)" for i, d in enumerate(devices, 1)
    ]
    assert [d for d, _, _ in calls] == [0, 1, 2, 3, 5]  # 3 slices, across them, the report
    assert calls[0][1] == 5


def _bars() -> tuple[Phases, Progress]:
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    bar = Progress(console=console, auto_refresh=False)
    return Phases(bar, "run"), bar


def test_each_phase_has_a_bar_of_its_own_beside_the_others() -> None:
    phases, bar = _bars()
    phases.start("computing the grid")
    phases.track("tables", 0, 4, "writing decode.parquet")
    phases.track("figures", 1, 5, "writing figures: a on b (2 of 3)")
    phases.track("grid file", 10, 97, "writing grid.zarr")
    shown = {task.description: (task.completed, task.total) for task in bar.tasks}
    assert shown == {
        "run: computing the grid": (0, None),
        "run: writing decode.parquet": (0, 4),
        "run: writing figures: a on b (2 of 3)": (1, 5),
        "run: writing grid.zarr": (10, 97),
    }
    phases.track("tables", 2, 4, "writing prefill.parquet")  # moves its own bar only
    phases.track("grid file", 97, 97, "writing grid.zarr")  # done: its bar goes
    phases.start("summarizing")  # a step replaces the step before
    shown = {task.description: (task.completed, task.total) for task in bar.tasks}
    assert shown == {
        "run: writing prefill.parquet": (2, 4),
        "run: writing figures: a on b (2 of 3)": (1, 5),
        "run: summarizing": (0, None),
    }
    phases.done()
    assert not bar.tasks


def test_a_run_in_a_terminal_draws_each_phase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's run: every long phase opened its bar and moved it to its end, and the
    bars were drawn on the (captured) terminal."""
    from sweeps.cli.execute import run_one

    seen: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    original = Phases.track

    def spy(self: Phases, phase: str, done: float, total: float | None, what: str) -> None:
        seen[phase].append((done, total, what))
        original(self, phase, done, total, what)

    monkeypatch.setattr(Phases, "track", spy)
    screen = io.StringIO()
    output = Output()
    output._err = Console(file=screen, force_terminal=True, width=120)
    run_one(parse_config(CONFIG), tmp_path, False, None, None, output)
    assert {"tables", "grid file", "figures"} <= set(seen)
    for phase in ("tables", "grid file", "figures"):
        done, total, _ = seen[phase][-1]
        assert done == total, phase
        assert len({d for d, _, _ in seen[phase]}) > 2, phase  # it moved
    assert "phases: " in screen.getvalue()  # drawn
