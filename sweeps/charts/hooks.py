"""The hooks a run calls to write its figures (``sweeps.pipeline.run_to_folder``): the
studies' post-steps first (``sweeps.export.post_steps``: simulated.parquet where the sweep asks
for it, whose plans the CDFs draw), then the charts and the report,
whose skipped charts' status lines are kept for the run (``FiguresHook.notes``)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import xarray as xr

from .drawing import start

if TYPE_CHECKING:
    from sweeps.config import Sweep
    from sweeps.export.post_steps import PostStepHook
    from sweeps.pipeline.hook import Track


def output_hooks(sweep: Sweep, track: Track | None = None) -> tuple[Callable[..., list[str]], ...]:
    """Hooks for ``sweeps.pipeline.run_to_folder``: the charts ``sweep`` asks for in the
    formats it asks for, and the report page. Starts the processes that draw them
    (``drawing.start``) at once, so that their start-up overlaps the grid.

    Parameters
    ----------
    sweep
        The sweep run (its ``[outputs]`` charts, formats and report).
    track
        Told how the figures move (``sweeps.pipeline.hook.Track``, the phase ``figures``):
        slice by slice (one model on one device), then the figures across them and the
        report.

    Returns
    -------
    tuple of callable
        The hooks, each ``hook(grid, sweep, folder)`` returning the files it wrote (relative
        to ``folder``): the studies' post-steps, then the figures (``FiguresHook``, which
        names each figure it could not draw, with why, in ``notes``).
    """
    start(sweep.formats if sweep.charts else ())

    from sweeps.export.post_steps import post_steps

    steps = post_steps(sweep)  # the studies' tables made after the grid's (simulated.parquet)
    return (*steps, FiguresHook(steps, track))


class FiguresHook:
    """The run's hook writing the charts and the report; the status lines of the charts it
    skipped (``failures``) are kept in ``notes``, which ``run_to_folder`` hands on."""

    __name__ = "figures"

    def __init__(self, steps: Sequence[PostStepHook] = (), track: Track | None = None) -> None:
        self.steps = steps
        self.track = track
        """Told how the figures move (the phase ``figures``), where given."""
        """The studies' post-steps, run before this: their results are drawn (the simulated
        plans' CDFs, ``simulated.cdf_figures``)."""
        self.notes: list[str] = []

    def __call__(
        self, ds: xr.Dataset | Iterable[xr.Dataset], sweep: Sweep, staging: Path
    ) -> list[str]:
        # Altair is imported here, on the hooks' thread beside the writers, not before the grid
        from .output import sweep_figures
        from .simulated import KIND, cdf_figures

        done = [r for step in self.steps if step.step.name == KIND.name for r in step.results]
        extra = cdf_figures(done, sweep) if done else []
        track = self.track
        told = None if track is None else lambda d, n, what: track("figures", d, n, what)
        files = sweep_figures(ds, sweep, staging, extra, self.notes, told)
        if isinstance(ds, xr.Dataset) and sweep.charts:  # the explorer needs the whole grid
            files += _explore(ds, sweep, staging)
        return files


def _explore(ds: xr.Dataset, sweep: Sweep, staging: Path) -> list[str]:
    """``explore.html``, linked from the report's heading (where there is a report)."""
    from sweeps.views.summary_table import summary_frame

    from .explore import EXPLORE, write_explore

    summary = summary_frame(ds, sweep.options.ceiling_fraction)
    written = [write_explore(ds, summary, staging, sweep.title)]
    report = staging / "report.html"
    if report.exists():
        link = f'</h1>\n<p><a href="{EXPLORE}">Explore: pick the model, device, tp, context'
        link += " and KV format</a></p>"
        report.write_text(report.read_text("utf-8").replace("</h1>", link, 1), "utf-8")
    return written


def time_figures(ds: xr.Dataset, sweep: Sweep, folder: Path | None = None) -> dict[str, float]:
    """Seconds to write the figures and report of ``ds`` as ``sweep`` asks (into ``folder``, or a
    temporary one): ``{"figures": s}``, for ``sweeps bench``."""
    from .output import sweep_figures

    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        sweep_figures(ds, sweep, folder or Path(scratch))
        return {"figures": time.perf_counter() - start}
