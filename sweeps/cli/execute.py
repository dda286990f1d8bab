"""``sweeps run`` for one sweep: one library call (``run_to_folder``) with its phases drawn.

Each long phase has a bar of its own, moved as it works (``Phases.track``): the rows computed
and written (after each chunk when streamed or computed model by model), the table files,
the grid file chunk by chunk, the figures slice by slice (the figures hook's ``track``); a
hook that tells nothing (the studies' post-steps) has a bar while it runs. What the run wrote
is then rendered from the ``RunResult``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from sweeps.cli.console import Output, Phases
from sweeps.config import Sweep

HOOK_PHASES = {"figures": "writing figures", "report": "writing the report"}
"""What each output hook's phase says, by the hook's name (else ``writing <name>``)."""


def _phased(hook: Any, phases: Phases) -> Any:
    name = getattr(hook, "__name__", "hook")

    @functools.wraps(hook)
    def wrapper(*args: Any) -> Any:
        phases.track(name, 0, None, HOOK_PHASES.get(name, f"writing {name}"))
        try:
            return hook(*args)
        finally:
            phases.end(name)

    return wrapper


def _grid_progress(phases: Phases, after: str | None) -> Any:
    """The library's progress callback: moves the step of the rows, then opens ``after``
    (or closes it: the phases after it have bars of their own)."""

    def progress(done: int, total: int) -> None:
        phases.update(done, total)
        if done >= total:
            if after is None:
                phases.end(phases.STEP)
            else:
                phases.start(after)

    return progress


def preflight(sweeps: list[Sweep]) -> None:
    """What would end a run after its work has begun, said before it: an address-space limit
    too small to start (Polars' threads abort with SIGABRT, no message), an output whose
    optional package is missing (``sweeps.pipeline.extras``)."""
    from sweeps.cli.errors import RunFailed
    from sweeps.grid.memory import address_space_problem
    from sweeps.pipeline.extras import check_extras

    if (space := address_space_problem()) is not None:
        raise RunFailed(space)
    for sweep in sweeps:
        check_extras(sweep)


def _run(
    sweep: Sweep,
    out: Path | str,
    force: bool,
    budget: int | None,
    client: Any,
    phases: Phases,
    how: Any,
) -> Any:
    """``run_to_folder`` of the plan ``how`` (planned once, shown before) with a bar for
    each of its phases; its ``RunResult``."""
    from sweeps.charts import output_hooks
    from sweeps.pipeline import run_to_folder

    after = None
    if how.streamed:
        phases.start(f"computing and writing {how.chunks:,} chunks")
        after = "writing the spec tables and the summary"
    else:
        phases.start("computing the grid and writing the tables")
    track = phases.track if phases.drawn else None
    return run_to_folder(
        sweep,
        out,
        force=force,
        hooks=tuple(_phased(hook, phases) for hook in output_hooks(sweep, track)),
        memory_budget=budget,
        progress=_grid_progress(phases, after) if phases.drawn else None,
        client=client,
        phase=phases.start if phases.drawn else None,
        track=track,
        plan=how,
    )


def run_one(
    sweep: Sweep, out: Path | str, force: bool, budget: int | None, client: Any, output: Output
) -> dict[str, Any]:
    """Run ``sweep`` into ``out``, draw its phases, print its summary; its ``--json`` record."""
    from sweeps.cli import render
    from sweeps.pipeline import plan
    from sweeps.pipeline.distributed import cluster_plan

    how = plan(sweep, budget, distributed=client is not None)
    how = how if client is None else cluster_plan(how, client)  # the workers' chunks, once
    output.status(render.plan_line(how), level=1)
    with output.phases(sweep.name) as phases:
        result = _run(sweep, out, force, budget, client, phases, how)
        phases.start("summarizing")
        frame = result.summary()
        rows = None if frame is None else render.summary_rows(frame)
        phases.done()
    if rows:
        output.result(
            render.summary_table(
                rows,
                sweep.title,
                sweep.options.ceiling_fraction,
                render.where_rows_are(result),
                output.out,
                output.width,
            )
        )
    plans = _plans(result)
    if plans:
        from sweeps.cli.render_plans import plans_table

        output.result(plans_table(plans, sweep.title))
    if frame is None:
        output.status(
            "no summary: even the grid at one batch size is over the memory budget "
            f"({render.where_rows_are(result)} has every configuration)"
        )
    for line in render.run_lines(result, distributed=client is not None):
        output.status(line)
    for line in render.timing_lines(result):
        output.status(line, level=1)
    document = render.run_document(sweep, result, rows)
    if plans:
        document["plans"] = plans
    return document


def _plans(result: Any) -> list[dict[str, Any]]:
    """The cheapest serving plans of ``result`` (none without a ``[serving]`` table), from
    its grid or, for a streamed run, its pools table; with an engine, each says the devices
    it needs by expectation (``expected``: engine to devices, ``sweeps.views.plans_expected``)."""
    from sweeps.views import cheapest_plans

    tables = _pools_tables(result)
    if tables is None:
        return []
    plans = cheapest_plans(tables["pools"])
    rows = list(plans.to_dicts())
    if "pools_expected" in tables:
        from sweeps.views.plans import _keys
        from sweeps.views.plans_expected import expected_plans

        keys = _keys(plans)
        by_key: dict[tuple[str, ...], dict[str, Any]] = {}
        for got in expected_plans(tables["pools"], tables["pools_expected"]).to_dicts():
            found = by_key.setdefault(tuple(str(got[k]) for k in keys), {})
            found[str(got["engine"])] = got["expected_devices"]
        for row in rows:
            row["expected"] = by_key.get(tuple(str(row[k]) for k in keys), {})
    return rows


def _pools_tables(result: Any) -> dict[str, Any] | None:
    """The pools table (and pools_expected where the run has it) of ``result`` as frames."""
    import polars as pl

    if result.held is not None:  # the grid in one piece (a grid held model by model is not
        # joined for this: its pools table is written)
        if "pools_feasible" not in result.held:
            return None
        from sweeps.export import frames

        held = frames(result.held)
        return {k: held[k] for k in ("pools", "pools_expected") if k in held}
    out = {}
    for name in ("pools", "pools_expected"):
        files = sorted(result.folder.glob(f"{name}.parquet"))
        files += sorted(result.folder.glob(f"{name}/*.parquet"))
        if files:
            out[name] = pl.concat([pl.read_parquet(f) for f in files])
    return out if "pools" in out else None
