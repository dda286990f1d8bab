"""The bench's lines, each declared once: its letter, its title, its key in the report, how it
is measured and how it prints (``LINE``; ``run_bench`` measures, ``format_report`` prints and
``chosen`` picks from this one table).

A measurement takes the ``Session`` of the run: its sizes (``quick``, the end-to-end budget,
the cold runs of (f)), a temporary folder for the files it writes, and the engine grid's
measurement, made once for the lines that share it ((a) and (c) are one measurement; (b) and
(d) use its grid). The measuring modules are imported when a line runs, not here:
``sweeps bench --help`` and a report's printing stay light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.bench import report as show


@dataclass(slots=True)
class Session:
    """One bench run's sizes, its folder, and what its lines share.

    quick : Small grids and sample sizes (``sweeps bench --quick``)
    e2e_budget : The end-to-end run's memory budget [byte]
    runs : The cold runs (f) makes of each of its grids [1]
    folder : A temporary folder the lines write their files in (removed with the run)
    """

    quick: bool
    e2e_budget: int
    runs: int
    folder: Path
    _engine: tuple[dict[str, Any], dict[str, Any], Any] | None = None

    def configs(self) -> tuple[str, str]:
        """The config texts of the engine grid and of the larger end-to-end grid."""
        from sweeps.bench.grids import bench_configs

        return bench_configs(self.quick)

    def engine(self) -> tuple[dict[str, Any], dict[str, Any], Any]:
        """(a)'s and (c)'s figures and the engine grid, measured once a run."""
        if self._engine is None:
            from sweeps.bench.engine import measure_engine
            from sweeps.config import parse_config

            self._engine = measure_engine(parse_config(self.configs()[0], "<bench>"))
        return self._engine

    def sized(self, quick: int, full: int) -> int:
        """``quick`` or ``full``, as the run is."""
        return quick if self.quick else full


def _scalar(s: Session) -> Any:
    from sweeps.bench.scalar import measure_scalar
    from sweeps.config import parse_config

    engine, _, ds = s.engine()
    sweep = parse_config(s.configs()[0], "<bench>")
    return measure_scalar(sweep, ds, s.sized(500, 5000), engine["points_per_s"])


def _export(s: Session) -> Any:
    from sweeps.bench.engine import measure_export

    return measure_export(s.engine()[2], s.folder)


def _end_to_end(s: Session) -> Any:
    from sweeps.bench.e2e import measure_end_to_end

    return measure_end_to_end(s.configs()[1], s.quick, s.e2e_budget, s.folder)


def _run_path(s: Session) -> Any:
    from sweeps.bench.run_path import measure_run_paths

    return measure_run_paths(s.configs()[1], s.quick, s.e2e_budget, s.folder, s.runs)


def _validate(s: Session) -> Any:
    from sweeps.bench.validate import measure_validate

    return measure_validate(values=s.sized(10_000, 100_000))


def _pareto(s: Session) -> Any:
    from sweeps.bench.pareto import measure_pareto

    return measure_pareto(points=s.sized(100_000, 1_000_000))


def _seed_run(s: Session) -> Any:
    from sweeps.bench.seed import WARM_REPEATS, measure_seed_run

    return measure_seed_run(repeats=s.sized(1, WARM_REPEATS))


def _simulated(s: Session) -> Any:
    from sweeps.bench.simulated import measure_simulated

    return measure_simulated(requests=s.sized(10_000, 100_000), interpreted=s.sized(500, 2_000))


def _calibrated(s: Session) -> Any:
    from sweeps.bench.calibrated import measure_calibration

    return measure_calibration(rows=s.sized(1_000, 48_000))


def _traces(s: Session) -> Any:
    from sweeps.bench.traces import measure_traces

    return measure_traces(requests=s.sized(10_000, 1_000_000))


def _expected(s: Session) -> Any:
    from sweeps.bench.expected import QUICK_SIDES, SIDES, measure_expected

    return measure_expected(QUICK_SIDES if s.quick else SIDES, rounds=s.sized(1, 5))


def _points(_: Session) -> Any:
    from sweeps.bench.points import measure_points

    return measure_points()


def _figures(s: Session) -> Any:
    from sweeps.bench.figures import measure_default_outputs

    return measure_default_outputs(s.quick)


def _cluster(s: Session) -> Any:
    from sweeps.bench.cluster import measure_cluster

    return measure_cluster(s.quick)


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the bench.

    letter : What ``chosen`` picks it by, and its place in the order lines are measured
    title : What the progress line says while it is measured
    key : Its figures' key in the report
    measure : Its figures (JSON-ready) from the run's ``Session``
    text : What it prints from its figures: a line, or several (each printed after the
        letter in brackets)
    """

    letter: str
    title: str
    key: str
    measure: Callable[[Session], Any]
    text: Callable[[Any], str | list[str]]


LINE = (
    Line("a", "engine", "engine", lambda s: s.engine()[0], show.format_engine),
    Line("b", "scalar loop", "scalar", _scalar, show.format_scalar),
    Line("c", "write limit", "write_limit", lambda s: s.engine()[1], show.format_write_limit),
    Line("d", "export", "export", _export, show.format_export),
    Line("e", "end to end", "end_to_end", _end_to_end, show.format_end_to_end),
    Line("f", "run path", "run_path", _run_path, show.format_run_paths),
    Line("g", "validate", "validate", _validate, show.format_validate),
    Line("h", "pareto front", "pareto", _pareto, show.format_pareto),
    Line("i", "seed run", "seed_run", _seed_run, show.format_seed_run),
    Line("j", "simulator", "simulated", _simulated, show.format_simulated),
    Line("k", "calibrate", "calibrated", _calibrated, show.format_calibration),
    Line("l", "traces", "traces", _traces, show.format_traces),
    Line("m", "expected pass", "expected", _expected, show.format_expected),
    Line("n", "single points", "points", _points, show.format_points),
    Line("o", "default outputs", "figures", _figures, show.format_default_outputs),
    Line("p", "two local workers", "cluster", _cluster, show.format_cluster),
)
"""Every line of the bench, in the order they are measured and printed."""

LINES = {line.letter: line.title for line in LINE}
"""The lines' titles by letter (what ``chosen`` picks from)."""


def chosen(only: str | None) -> frozenset[str]:
    """The letters of ``only`` (``"efm"``, ``"e,f,m"``; None: every line), each one of
    ``LINES``; a ``ValueError`` naming an unknown letter and the allowed ones."""
    if only is None:
        return frozenset(LINES)
    letters = frozenset(only.replace(",", "").replace(" ", "").lower())
    unknown = sorted(letters - set(LINES))
    if unknown or not letters:
        named = f"no line {', '.join(unknown)} in the bench" if unknown else "no line named"
        msg = f"only = {only!r}: {named}; one or more of {''.join(LINES)}"
        raise ValueError(msg)
    return letters


def format_report(report: dict[str, Any]) -> str:
    """The bench figures as lines of text: each line measured (its key in ``report``)."""
    text = [f"point: {report['point']}"]
    for line in LINE:
        if line.key in report:
            said = line.text(report[line.key])
            text += [
                f"({line.letter}) {one}" for one in ([said] if isinstance(said, str) else said)
            ]
    return "\n".join(text)
