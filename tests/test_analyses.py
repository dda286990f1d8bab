"""The analyses' declarations: each variable declared once, computed, stored as declared."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from sweeps.axes import AXES, canonical
from sweeps.config import parse_config
from sweeps.engine.base import LABELS
from sweeps.grid import ANALYSES, REGISTRY, TABLES, VARIABLES, build_grid
from sweeps.grid.analyses import (
    BY_NAME,
    ITEMSIZE,
    Inputs,
    Variable,
    active_dims,
    applicable,
    owner,
)
from sweeps.grid.coords import derived_inputs, grid_coords
from sweeps.grid.memory import analysis_bytes, row_bytes

from .conftest import NOTE_CONFIG

SWEEP = """
[sweep]
name = "declared"
[axes]
model = ["llama-3-8b", "deepseek-v3", "gemma-2-9b"]
hardware = ["h100-sxm", "b200"]
tp = [1, 2]
batch = [1, 16]
context = [512, 8192]
prompt = [256]
kv_heads = ["native"]
"""


@pytest.fixture(scope="module")
def sweep():
    return parse_config(SWEEP)


@pytest.fixture(scope="module")
def grid(sweep):
    return build_grid(sweep)


def test_every_name_is_declared_once() -> None:
    counts = Counter(v.name for v in VARIABLES)
    assert [name for name, n in counts.items() if n > 1] == []
    assert len(REGISTRY) == len(VARIABLES)


def test_analyses_come_after_what_they_need() -> None:
    seen: set[str] = set()
    for analysis in ANALYSES:
        assert set(analysis.needs) <= seen, analysis.name
        assert analysis.dims == canonical(analysis.dims), analysis.name
        seen.add(analysis.name)


def test_table_columns_are_declared_by_the_analysis_or_what_it_needs() -> None:
    for table in TABLES:
        allowed = {table.name, *table.needs}
        for name in table.columns:
            assert owner(name).name in allowed, (table.name, name)
        assert len(set(table.columns)) == len(table.columns)


def test_each_compute_returns_its_declared_variables_and_only_internals_besides(sweep) -> None:
    class Recording:
        def pointwise(self, function, dims, *args):
            from sweeps.grid.layout import pointwise

            return pointwise(function, dims, *args)

        def roofline(self, dims, *, with_tokens, **inputs):
            from sweeps.grid.layout import GridEngine

            return GridEngine(sizes).roofline(dims, with_tokens=with_tokens, **inputs)

        def fits(self, dims, **inputs):
            from sweeps.grid.layout import GridEngine

            return GridEngine(sizes).fits(dims, **inputs)

    import xarray as xr

    ds = xr.Dataset(coords=grid_coords(sweep))
    sizes = {str(k): int(v) for k, v in ds.sizes.items()}
    values = {str(k): ds[k].variable for k in ds.variables}
    values.update({k: xr.Variable(d, v) for k, (d, v) in derived_inputs(sweep).items()})
    results: dict = {}
    for analysis in applicable(sweep):
        inputs = Inputs(
            values, sweep.options, Recording(), results, getattr(sweep, "serving", None)
        )
        out = analysis.compute(inputs)
        public = {k for k in out if not k.startswith("_")}
        assert public == {v.name for v in analysis.variables}, analysis.name
        for variable in analysis.variables:  # a variable's dims never leave its analysis's
            assert set(out[variable.name].dims) <= set(analysis.dims), variable.name
        results.update(out)


def test_the_grid_stores_each_variable_as_declared(sweep, grid) -> None:
    numpy = {"float64": np.float64, "nullable": np.float64, "int64": np.int64}
    numpy |= {"bool": np.bool_, "flag": np.int8}
    numpy |= {label: np.object_ for label in LABELS}  # names, formats, dates: Python strings
    for analysis in applicable(sweep):
        for variable in analysis.variables:
            data = grid[variable.name]
            assert data.dtype == numpy[variable.dtype], variable.name
            assert data.dims == tuple(d for d in analysis.dims if d in data.dims)
            if variable.rank == "full":
                assert set(data.dims) == set(analysis.dims), variable.name
            if variable.rank == "point":
                assert set(data.dims) == set(analysis.dims) - {"hardware"}, variable.name


def test_every_grid_variable_and_coordinate_is_registered(sweep, grid) -> None:
    missing = [str(name) for name in grid.variables if str(name) not in REGISTRY]
    assert missing == []
    assert set(grid.dims) == set(active_dims(sweep))  # the dims of the analyses that apply
    assert set(active_dims(sweep)) < {a.dim for a in AXES}  # no serving axes without [serving]


def test_the_memory_estimate_follows_the_declarations(sweep) -> None:
    decode = BY_NAME["decode"]
    before = analysis_bytes(sweep, decode)
    extra = Variable("probe", "1", "A probe column", "float64", rank="full")
    wider = replace(decode, variables=(*decode.variables, extra), columns=(*decode.columns,))
    points = sweep.points(decode.dims)
    assert analysis_bytes(sweep, wider) - before == pytest.approx(points * ITEMSIZE["float64"])
    # the table counts every declared column: axes (4 Enum codes, 4 Int64), the native flag,
    # then 21 float64/int64 values, ridge_batch and the two energy estimates with their
    # validity bits, the Enum bottleneck, the compute dtype's label and two booleans
    axes = 4 * 4 + 4 * 8 + 1
    assert row_bytes(decode) == pytest.approx(axes + 21 * 8 + 3 * (8 + 1 / 8) + 4 + 4 + 2 * 1)


def test_the_notes_abstract_model_still_builds() -> None:
    sweep = parse_config(NOTE_CONFIG)
    ds = build_grid(sweep)
    assert set(ds.data_vars) == {v.name for a in applicable(sweep) for v in a.variables}


def test_the_summary_in_user_terms_is_the_decode_table_at_batch_1_and_at_the_wall() -> None:
    """The closed forms at batch 1 and at max_batch against the grid's own points there: a
    sweep whose batch axis holds every batch up to past the wall."""
    from sweeps.config import parse_config
    from sweeps.grid import build_grid
    from sweeps.views.summary import summarize

    sweep = parse_config(
        '[sweep]\nname = "terms"\n[axes]\nmodel = ["llama-3-8b", "mixtral-8x7b"]\n'
        'hardware = ["h100-sxm"]\ntp = [1, 2]\nbatch = { start = 1, stop = 1200 }\n'
        "context = [8192, 32768]\nprompt = [1024, 4096]\n"
    )
    ds = build_grid(sweep)
    summary = summarize(ds)
    for row in summary.iter_rows(named=True):
        at = {k: row[k] for k in ("model", "hardware", "tp", "context", "kv_dtype", "weight_dtype")}
        point = ds.sel(at).isel(kv_heads=0)
        one = point.sel(batch=1)
        per_device = float(one["tokens_per_s"]) / row["tp"]
        wall = int(row["max_batch"])
        if wall < 1:  # not one sequence fits: no figure, at batch 1 nor at the wall
            assert not bool(one["feasible"])
            for name in ("token_time_b1_s", "device_tokens_per_s_b1"):
                assert row[name] is None, name
            assert row["token_time_wall_s"] is None
            assert row["device_tokens_per_s_wall"] is None
            assert row["reason"].startswith("does not fit")
            continue
        assert row["token_time_b1_s"] == pytest.approx(float(one["step_time_s"]), rel=1e-12)
        assert row["device_tokens_per_s_b1"] == pytest.approx(per_device, rel=1e-12)
        assert row["reason"] is None
        there = point.sel(batch=wall)
        assert bool(there["feasible"])
        assert not bool(point.sel(batch=wall + 1)["feasible"])
        assert row["token_time_wall_s"] == pytest.approx(float(there["step_time_s"]), rel=1e-12)
        tokens = float(there["tokens_per_s"]) / row["tp"]
        assert row["device_tokens_per_s_wall"] == pytest.approx(tokens, rel=1e-12)
        without = {k: v for k, v in at.items() if k != "context"}
        prefill = ds["ttft_s"].sel(without).isel(kv_heads=0).sel(batch=1, prompt=1024)
        assert row["ttft_s"] == pytest.approx(float(prefill), rel=1e-12)
