"""Family tables in a config (``sweeps.config.sizes``): ``[models.NAME]`` with ``base`` and
``params`` on the model axis, and every mistake in one named with its key (exit 2)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.errors import ConfigError

SIZES = """
[sweep]
name = "sizes"
[axes]
model = ["llama-sizes", "llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1, 64]
context = [512, 8192]
[outputs]
charts = []
[models.llama-sizes]
base = "llama-3-8b"
"""


def _config(params: str, base: str = 'base = "llama-3-8b"') -> str:
    return SIZES.replace('base = "llama-3-8b"', base) + f"params = {params}\n"


def test_a_range_expands_into_one_model_per_size_on_the_model_axis() -> None:
    sweep = parse_config(_config("{ start = 1e9, stop = 1e12, geometric = true }"))
    ids = [m.id for m in sweep.models]
    sizes = ["1b", "2b", "4b", "8b", "16b", "32b", "64b", "128b", "256b", "512b"]
    assert ids == [f"llama-sizes-{s}" for s in sizes] + ["llama-3-8b"]
    params = [m.params for m in sweep.models[:-1]]
    assert params == sorted(params)
    for model, asked in zip(sweep.models, [1e9 * 2**k for k in range(10)], strict=False):
        assert abs(model.params / asked - 1) < 0.03  # the count comes within half a layer
        assert model.family == "Llama-3"
        assert "family rule" in model.source
    # at the 8B member's own size the rule gives the catalog's model back
    eight = parse_config(_config("[8030261248.0]")).models[0]
    catalog = sweep.models[-1]
    assert eight.id == "llama-sizes-8.03b"
    assert (eight.params, eight.layers, eight.hidden_size) == (catalog.params, 32, 4096)


def test_a_list_in_any_order_is_drawn_by_size_and_linear_ranges_step() -> None:
    listed = parse_config(_config("[7e10, 1e9]"))
    assert [m.id for m in listed.models] == ["llama-sizes-1b", "llama-sizes-70b", "llama-3-8b"]
    linear = parse_config(_config("{ start = 1e10, stop = 3e10, step = 1e10 }"))
    assert [m.id for m in linear.models][:3] == [f"llama-sizes-{n}b" for n in (10, 20, 30)]


def test_the_family_models_flow_through_the_grid_and_its_tables(tmp_path: Path) -> None:
    from sweeps import run, to_parquet

    sweep = parse_config(_config("[2e9, 2e10]"))
    ds = run(sweep)
    assert [str(m) for m in ds["model"].values] == [
        "llama-sizes-2b",
        "llama-sizes-20b",
        "llama-3-8b",
    ]
    assert float(ds["params"].sel(model="llama-sizes-20b")) == 19_999_523_840
    assert int(ds["max_batch"].sel(model="llama-sizes-20b", context=512).max()) > 0
    to_parquet(ds, tmp_path)
    import polars as pl

    models = pl.read_parquet(tmp_path / "models.parquet")
    assert models["model"].cast(pl.String).to_list()[:2] == ["llama-sizes-2b", "llama-sizes-20b"]
    assert models.filter(pl.col("model") == "llama-sizes-20b")["kv_bytes_per_token"][0] == 221_184


@pytest.mark.parametrize(
    ("params", "base", "key", "message"),
    [
        ("[1e8]", None, "models.llama-sizes.params[0]",
         r"1e\+08, outside the Llama-3 family's range: allowed 4\.943e\+08 to 1\.015e\+12"),
        ("{ start = 1e9, stop = 2e12, geometric = true }", None, "models.llama-sizes.params.stop",
         r"gives 1\.024e\+12, outside the Llama-3 family's range"),
        ("[1e9]", 'base = "llama-3-8bb"', "models.llama-sizes.base",
         r"unknown model 'llama-3-8bb'; did you mean 'llama-3-8b'"),
        ("[1e9]", 'base = "mixtral-8x7b"', "models.llama-sizes.base",
         r"'mixtral-8x7b' is of no family with a scaling rule \(Mixtral\); the families are "
         r"Llama-3, Llama-2, allowed bases: \['llama-2-13b'"),
        ('"big"', None, "models.llama-sizes.params",
         r"must be a list of parameter counts or a range table"),
        ("{ start = 1e9, stop = 2e9 }", None, "models.llama-sizes.params",
         r"a linear range needs a step"),
        ("[1e9, 1.0001e9]", None, "models.llama-sizes.params[1]",
         r"1\.0001e\+09 gives the same id llama-sizes-1b as 1e\+09"),
        ("[1e9]\nlayers = 3", None, "models.llama-sizes.layers",
         r"unknown key; allowed: base, params"),
    ],
)  # fmt: skip
def test_a_bad_family_table_is_named_by_its_key(
    params: str, base: str | None, key: str, message: str
) -> None:
    text = _config(params, base) if base else _config(params)
    with pytest.raises(ConfigError, match=rf"<config>: {re.escape(key)}: ({message})"):
        parse_config(text)


def test_a_family_model_named_like_another_table_is_refused() -> None:
    text = _config("[1e9]") + "[models.llama-sizes-1b]\nconfig = 'x.json'\n"
    with pytest.raises(ConfigError, match=r"models\.llama-sizes: its model 'llama-sizes-1b' has"):
        parse_config(text)


@pytest.mark.parametrize(
    ("text", "line", "allowed"),
    [
        (_config("[2e12]"), "models.llama-sizes.params[0]: 2e+12", "allowed 4.943e+08 to 1.015e+12"),
        (_config("[1e9]", 'base = "qwen3-8b"'), "models.llama-sizes.base: 'qwen3-8b' is of no family",
         "allowed bases: ['llama-2-13b'"),
    ],
)  # fmt: skip
def test_cli_exits_2_names_the_key_and_writes_nothing(
    write_config: Callable[[str], Path], tmp_path: Path, text: str, line: str, allowed: str
) -> None:
    path = write_config(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {path}: {line}")
    assert allowed in result.output
    assert not out.exists()


def test_a_family_on_the_model_axis_draws_the_model_size_figure_by_default() -> None:
    """The model-size figure answers a family's question: drawn by default where the model
    axis names a family table (the kind's ``family`` flag), not where ``[outputs] charts`` is
    set, nor without a family (issue 46)."""
    from sweeps.outputs import declared, default_charts, family_charts

    assert declared()["model-size"].family
    assert family_charts() == ("model-size",)
    unset = _config("[1e9, 7e10]").replace("[outputs]\ncharts = []\n", "")
    family = parse_config(unset)
    assert family.charts == (*default_charts(), "model-size")
    assert parse_config(_config("[1e9, 7e10]")).charts == ()  # charts = [] is the file's word
    plain = parse_config(unset.replace('"llama-sizes", ', ""))
    assert plain.charts == default_charts()
    assert "model-size" not in default_charts()
