"""The plan: the layout from the config alone, figures only with the whole grid, and a
memory budget held or refused before any work (issues 14 item 4, 15 item 5)."""

from __future__ import annotations

import dataclasses

import pytest

from sweeps.config import parse_config
from sweeps.errors import ConfigError
from sweeps.grid.chunks import plan_chunks
from sweeps.grid.memory import BASE_BYTES, estimate_bytes
from sweeps.pipeline import plan, run_to_folder
from sweeps.pipeline.plan import AUTO_PARTITION_ROWS, IN_FLIGHT, chunk_budget, resolve_layout

CONFIG = """
[sweep]
name = "planned"
[axes]
model = ["llama-3-8b", "mixtral-8x7b"]
hardware = ["h100-sxm", "b200"]
batch = { start = 1, stop = 64 }
context = [1024, 8192, 32768]
[outputs]
charts = []
grid = "none"
"""


@pytest.fixture(scope="module")
def sweep():
    return parse_config(CONFIG, "planned.toml")


def test_auto_layout_depends_on_the_rows_alone(sweep):
    assert resolve_layout(sweep) == "single"
    big = dataclasses.replace(sweep, batch=tuple(range(1, AUTO_PARTITION_ROWS // 12 + 2)))
    assert resolve_layout(big) == "partitioned"
    for budget in (BASE_BYTES + 2**26, 2**40):  # the machine's memory has no say
        assert plan(sweep, budget).layout == "single"
        assert plan(sweep, budget, layout="partitioned").layout == "partitioned"


def test_unknown_layout_is_refused(sweep):
    with pytest.raises(
        ConfigError,
        match=r"outputs.layout = 'split' is not allowed; allowed: \('auto', 'single', 'partitioned'\)",
    ):
        plan(sweep, layout="split")


def test_plan_says_whether_the_whole_grid_outputs_are_written(sweep):
    whole = plan(sweep, 2**40)
    assert whole.whole_grid
    assert whole.chunks == 1
    budget = BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // 4
    streamed = plan(sweep, budget)
    assert streamed.streamed
    assert not streamed.whole_grid
    assert streamed.chunks == len(plan_chunks(sweep, chunk_budget(budget))) > 1


def test_plan_says_whether_the_figures_are_written(sweep):
    """A streamed run draws its figures from one-model-one-device grids, each within the
    budget; where one of those does not fit, the figures are not written, and plan says so."""
    assert plan(sweep, 2**40).writes_figures
    pieces = [
        dataclasses.replace(sweep, models=(m,), hardware=(h,))
        for m in sweep.models
        for h in sweep.hardware
    ]
    largest = max(estimate_bytes(piece) for piece in pieces)
    fits = plan(sweep, largest)
    assert fits.streamed
    assert fits.writes_figures
    one = dataclasses.replace(sweep, models=sweep.models[:1], hardware=sweep.hardware[:1])
    small = BASE_BYTES + (estimate_bytes(one) - BASE_BYTES) // 2
    assert not plan(one, small).writes_figures  # streamed, and its only slice is the sweep


def test_a_budget_no_chunk_fits_is_refused_with_the_smallest_that_would_do(sweep, tmp_path):
    earlier = run_to_folder(sweep, tmp_path)
    before = {p: p.read_bytes() for p in earlier.folder.rglob("*") if p.is_file()}
    wide = dataclasses.replace(sweep, context=tuple(range(1024, 1024 * 2000, 1024)))
    smallest = max(estimate_bytes(c.sweep) for c in plan_chunks(wide, BASE_BYTES + 1))
    need = BASE_BYTES + (smallest - BASE_BYTES) * IN_FLIGHT
    with pytest.raises(
        ConfigError,
        match=rf"cannot hold sweep 'planned': its smallest chunk .* needs {smallest:,} bytes "
        rf"and a streamed run holds 2 at once; allowed: at least {need:,} bytes",
    ) as refused:
        run_to_folder(wide, tmp_path, force=True, memory_budget=BASE_BYTES + 2**20)
    assert "--" not in str(refused.value)  # the library names no CLI flag
    assert {p: p.read_bytes() for p in earlier.folder.rglob("*") if p.is_file()} == before
    assert plan(wide, need).chunks > 1  # and that budget is held


def test_slice_groups_cut_each_models_devices_as_the_budget_allows() -> None:
    from sweeps.pipeline.plan import slice_groups, slice_sweeps

    sweep = parse_config(
        """
[sweep]
name = "groups"
[axes]
model = ["llama-3-8b", "mistral-7b"]
hardware = ["h100-sxm", "h200", "b200", "l4"]
batch = { start = 1, stop = 64 }
context = [1024, 4096]
"""
    )
    one_device = estimate_bytes(
        dataclasses.replace(sweep, models=sweep.models[:1], hardware=sweep.hardware[:1])
    )
    two_devices = estimate_bytes(
        dataclasses.replace(sweep, models=sweep.models[:1], hardware=sweep.hardware[:2])
    )
    pairs = [(s.models, s.hardware) for s in slice_sweeps(sweep)]
    for budget, sizes in [(10**12, [4, 4]), (two_devices, [2, 2, 2, 2]), (one_device, [1] * 8)]:
        groups = list(slice_groups(sweep, budget))
        assert [len(g.hardware) for g in groups] == sizes
        assert all(len(g.models) == 1 for g in groups)
        assert all(estimate_bytes(g) <= budget for g in groups)
        flat = [((g.models[0],), (h,)) for g in groups for h in g.hardware]
        assert flat == pairs  # the same slices, in the same order
    assert [len(g.hardware) for g in slice_groups(sweep, 1)] == [1] * 8  # one device always goes


def _counted(patch: pytest.MonkeyPatch, module: str, name: str) -> list[int]:
    """Count the calls of ``module.name`` wherever the package holds it (every ``sweeps``
    module that imported it, under any name, and the module itself): one entry per call."""
    import importlib
    import sys

    real = getattr(importlib.import_module(module), name)
    calls: list[int] = []

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__name__", "").startswith("sweeps"):
            for held, value in list(vars(loaded).items()):
                if value is real:
                    patch.setattr(loaded, held, counted)
    return calls


@pytest.mark.parametrize("how", ["whole", "pieces", "streamed"])
def test_a_run_plans_once_and_cuts_its_pieces_once(sweep, tmp_path, how):
    """``sweeps run``'s path (the plan made and shown, then ``run_to_folder(plan=...)``) and
    the library's (``run_to_folder`` alone) each make one plan in all and cut the chunks at
    most once: the pieces travel in the plan (issue 42 item 3)."""
    import sweeps.pipeline.execute  # loaded before the counters go in
    import sweeps.pipeline.stream  # noqa: F401
    from sweeps.pipeline import pieces

    budget = BASE_BYTES + (estimate_bytes(sweep) - BASE_BYTES) // 4 if how == "streamed" else None
    for given in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pieces, "PIECES_FROM", 0 if how == "pieces" else 1 << 62)
            plans = _counted(patch, "sweeps.pipeline.plan", "plan")
            cuts = _counted(patch, "sweeps.grid.chunks", "plan_chunks")
            planned = _plan_via(plans, sweep, budget) if given else None
            result = run_to_folder(sweep, tmp_path / str(given), memory_budget=budget, plan=planned)
        assert len(plans) == 1, (how, given)
        assert len(cuts) == (0 if how == "whole" else 1), (how, given)
        assert (result.chunks > 1) == (how == "streamed")
        if planned is not None:
            assert result.chunks == planned.chunks


def _plan_via(calls: list[int], sweep, budget):
    """The caller's plan, counted with the run's (``sweeps run`` plans before it runs)."""
    calls.append(1)
    return plan(sweep, budget)


def test_a_plan_of_another_run_is_refused(sweep, tmp_path):
    other = dataclasses.replace(sweep, name="other")
    with pytest.raises(ConfigError, match=r"plan is of sweep 'other'.*allowed: plan\(sweep"):
        run_to_folder(sweep, tmp_path, plan=plan(other))
    with pytest.raises(ConfigError, match=r"memory_budget = .* the plan's is"):
        run_to_folder(sweep, tmp_path, memory_budget=1 << 40, plan=plan(sweep, 1 << 39))
    assert not list(tmp_path.iterdir())  # refused before any work
