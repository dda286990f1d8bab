"""Keys are axes (issue 42 item 2): a study's axis is declared once, on the key of its config
table that gives its values; ``AXES``, ``Study.axes``, the config's ``[axes]`` model and the
``Sweep``'s attributes derive from it."""

from __future__ import annotations

import pickle
from typing import Annotated, get_args

import pytest
from pydantic import Field

from sweeps.axes import AXES, AXIS, GRID_AXES, STUDY_FIELDS
from sweeps.config import parse_config
from sweeps.config.schema import Axes, ConfigFile
from sweeps.engine.axis import Axis, key_axis, table_axes
from sweeps.fields import Strict, TokenAxis
from sweeps.studies import DIMS, STUDIES

SERVED = """
[sweep]
name = "keys"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 8]
context = [1024]
spec_tokens = [0, 2]
[serving]
prompt_tokens = [512, 1024]
output_tokens = [128]
arrival_rate = [2.0]
[outputs]
charts = []
grid = "none"
"""


def test_a_key_with_an_axis_row_is_an_axis_named_by_the_key() -> None:
    class Keys(Strict):
        lora_rank: Annotated[TokenAxis, key_axis("size", "1", "Adapter rank, r", "r")] = Field(
            default=[8], description="Adapter ranks"
        )
        note: str = Field(default="", description="Not an axis")

    (row,) = table_axes(Keys)
    assert (row.dim, row.field, row.kind, row.unit, row.title) == (
        "lora_rank",
        "lora_rank",
        "size",
        "1",
        "r",
    )
    assert Keys(lora_rank=[4, 16]).lora_rank == [4, 16]  # the type still validates
    assert "Adapter ranks" in str(Keys.model_json_schema())


def test_every_study_axis_is_a_key_of_its_table() -> None:
    """``Study.axes`` are its table's keys carrying a row; each is a field of the config's
    model of that table, and a row of ``AXES`` (the study's keys', then those it adds)."""
    for study in STUDIES:
        keys = study.keys.model_fields
        rows = tuple(d for d, f in keys.items() if any(isinstance(m, Axis) for m in f.metadata))
        assert study.axes == rows
        assert study.axes  # each study has axes
        if study.table == "axes":  # its keys are part of [axes]'s model
            assert issubclass(Axes, study.keys)
        else:  # its keys are its table's model
            assert study.keys in get_args(ConfigFile.model_fields[study.table].annotation)
        for row in study.axis_rows:
            assert AXIS[row.dim] == row
        assert set(study.axes) <= STUDY_FIELDS


def test_axes_are_the_grids_then_the_studies_in_the_canonical_order() -> None:
    assert AXES[: len(GRID_AXES)] == GRID_AXES
    assert tuple(a.dim for a in AXES) == DIMS
    assert len(set(DIMS)) == len(DIMS)  # no dim declared twice
    # the order the goldens hold: the expected pass, speculation, prefix, parallel, serving
    order = [d for d in DIMS if d in ("engine", "spec_tokens", "prefix_hit_rate", "ep", "mode")]
    assert order == ["engine", "spec_tokens", "prefix_hit_rate", "ep", "mode"]
    assert {d for s in STUDIES for d in s.axes} == STUDY_FIELDS


def test_a_sweep_reads_its_studies_axes_as_attributes() -> None:
    sweep = parse_config(SERVED, "keys.toml")
    assert sweep.prompt_tokens == (512, 1024)
    assert sweep.output_tokens == (128,)
    assert sweep.arrival_rate == (2.0,)
    assert sweep.concurrency == ()  # the study is on, the key left out
    assert sweep.spec_tokens == (0, 2)
    assert [d.id for d in sweep.spec_draft] == ["ngram"]  # the study's default, a record
    assert sweep.ep == ()  # a study the config does not turn on
    assert set(sweep.study_axes) == {
        "prompt_tokens",
        "output_tokens",
        "arrival_rate",
        "concurrency",
        "spec_tokens",
        "spec_acceptance",
        "spec_draft",
    }
    with pytest.raises(AttributeError, match="no attribute 'prompt_token'"):
        _ = sweep.prompt_token
    cloudpickle = pytest.importorskip("cloudpickle")  # how dask ships a Sweep to its workers
    again = pickle.loads(cloudpickle.dumps(sweep))
    assert again.prompt_tokens == sweep.prompt_tokens
    assert again == sweep
