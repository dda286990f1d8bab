"""The studies' post-steps, run and written by the export: the tables a study makes after the
grid's, from one of them (``sweeps.studies.base.PostStep``; ``simulated.parquet`` from the
pools table).

Each runs as one of the run's hooks (``sweeps.pipeline.run_to_folder``), first, reading only
the tables written (``tables_only``), so a streamed run runs it too. Everything is written
into the run's staging folder: a post-step that fails (a bad lengths CSV, say) leaves nothing
behind, the run fails whole. Its results stay on it (``PostStepHook.results``) for the
figures that draw them (the simulated CDFs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweeps.studies import STUDIES
from sweeps.studies.base import PostStep

_POLARS = {"str": "String", "int64": "Int64", "float64": "Float64"}


def typed_frame(rows: list[dict[str, Any]], variables: tuple[Any, ...]) -> Any:
    """``rows`` as a Polars frame, typed and ordered as ``variables`` declare."""
    import polars as pl

    schema = {v.name: getattr(pl, _POLARS[v.dtype]) for v in variables}
    frame = pl.DataFrame([{v.name: row.get(v.name) for v in variables} for row in rows], schema)
    return _axes_as_enums(frame)


def _axes_as_enums(frame: Any) -> Any:
    """Each name axis's column as that axis's Enum (``shared_enum``), as in every table."""
    import polars as pl

    from sweeps.axes import AXIS
    from sweeps.export.enums import shared_enum

    names = [c for c in frame.columns if c in AXIS and AXIS[c].kind == "name"]
    return frame.with_columns(
        pl.col(c).cast(shared_enum(c, frame[c].drop_nulls().unique(maintain_order=True)))
        for c in names
    )


def read_table(ds: Any, staging: Path, name: str) -> Any:
    """The run's table ``name``: from the grid held in memory, else as written into
    ``staging`` (one file, or one per model)."""
    import polars as pl
    import xarray as xr

    if isinstance(ds, xr.Dataset):
        from sweeps.export.parquet import frame

        return frame(ds, name)
    single = staging / f"{name}.parquet"
    return pl.read_parquet(single if single.exists() else staging / name / "*.parquet")


def write_table(step: PostStep, results: list[Any], staging: Path) -> None:
    """``<step.name>.parquet`` of ``results``' rows, its units in its metadata."""
    from sweeps.export.parquet import write_with_units

    frame = typed_frame([r.row for r in results], step.variables)
    info = {v.name: {"unit": v.unit, "description": v.description} for v in step.variables}
    write_with_units(frame, staging / f"{step.name}.parquet", info)


class PostStepHook:
    """One study's post-step as a hook of the run: it reads its input table, runs the step and
    writes its table; its results stay in ``results``. What the step reads before the grid
    (``PostStep.prepare``) is read when the hook is made, so bad input fails the run first."""

    tables_only = True
    """It reads the tables written, never the grid's slices: a streamed run runs it too."""

    def __init__(self, step: PostStep, sweep: Any) -> None:
        self.step = step
        self.__name__ = step.name
        self.prepared = step.prepare(sweep)
        self.results: list[Any] = []

    def __call__(self, ds: Any, sweep: Any, staging: Path) -> list[str]:
        from sweeps.grid.scalar import point_inputs

        table = read_table(ds, staging, self.step.reads)
        self.results[:] = self.step.run(table, sweep, self.prepared, point_inputs)
        write_table(self.step, self.results, staging)
        return [f"{self.step.name}.parquet"]


NULL_REASONS = "null_reasons"
"""The key of a post-step's row that says, of each of its statistics left null, why
(``sweeps.studies.serving.simulate.stats.NULL_REASONS``): read into the manifest."""


def described(hook: PostStepHook) -> dict[str, Any]:
    """What the manifest says of a post-step's table once written: its ``rows``, its
    ``columns`` (unit, description) and ``nulls``: of each statistic left null, in how many
    rows and why (the reasons its rows give)."""
    nulls: dict[str, dict[str, Any]] = {}
    for result in hook.results:
        for column, reason in result.row.get(NULL_REASONS, {}).items():
            entry = nulls.setdefault(column, {"rows": 0, "reasons": []})
            entry["rows"] += 1
            if reason not in entry["reasons"]:
                entry["reasons"].append(reason)
    columns = {v.name: {"unit": v.unit, "description": v.description} for v in hook.step.variables}
    return {"rows": len(hook.results), "columns": columns, "nulls": nulls}


def post_steps(sweep: Any) -> tuple[PostStepHook, ...]:
    """The post-steps ``sweep`` asks for, of every study it has, as hooks of its run."""
    return tuple(
        PostStepHook(step, sweep)
        for study in STUDIES
        if study.name in sweep.studies
        for step in study.post_steps
        if step.wanted(sweep)
    )


def declared() -> tuple[PostStep, ...]:
    """Every study's post-steps: the tables they write, for the column reference."""
    return tuple(step for study in STUDIES for step in study.post_steps)
