"""Dashboard types in every table (issue 46, item 3): one Enum per name axis holding that
axis's own categories, null (never NaN) where a value does not exist, dates as Date, counts
as integers."""

from __future__ import annotations

import polars as pl
import pytest

from sweeps.axes import AXIS
from sweeps.catalog.loader import load_catalog
from sweeps.config import parse_config
from sweeps.grid import REGISTRY
from sweeps.pipeline import run_to_folder
from sweeps.schedulers import POOL_MODES, SERVING_MODES

# every study at once, small: serving (modes, pools, prices), speculative, prefix, parallel
CONFIG = """
[sweep]
name = "types"
[axes]
model = ["mixtral-8x7b"]
hardware = ["h100-sxm", "rtx-4090"]
batch = [1, 16]
context = [512, 4096]
kv_dtype = ["bf16", "fp8"]
spec_tokens = [0, 2]
spec_acceptance = [0.7]
spec_draft = ["ngram"]
prefix_hit_rate = [0.0, 0.5]
kv_tier = ["hbm", "host"]
ep = [1, 2]
dp_attention = [false, true]
[serving]
prompt_tokens = [512]
output_tokens = [128]
arrival_rate = [1.0]
simulate = 100
[outputs]
charts = []
grid = "none"
"""


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    from sweeps.export.post_steps import post_steps

    sweep = parse_config(CONFIG, "types.toml")
    out = tmp_path_factory.mktemp("t")
    folder = run_to_folder(sweep, out, hooks=post_steps(sweep)).folder
    return {path.stem: pl.read_parquet(path) for path in sorted(folder.glob("*.parquet"))}


def _domain(dim: str) -> set[str]:
    """What an axis's Enum may hold: its kind's labels (catalog ids, formats, modes) and, for
    an axis of the sweep's own labels, those."""
    catalog = load_catalog()
    field = AXIS[dim].field
    if field == "models":
        return {m.id for m in catalog.models.values()}
    if field == "hardware":
        return {h.id for h in catalog.hardware.values()}
    if field in ("kv_dtype", "weight_dtype"):
        return set(catalog.dtypes)
    return {"mode": set(SERVING_MODES), "pool_mode": set(POOL_MODES)}.get(
        dim, {"ngram", "hbm", "host", "false", "true"}
    )


def test_every_table_is_there(tables):
    assert set(tables) >= {"decode", "prefill", "serving", "pools", "speculative", "prefix"}
    assert {"parallel", "simulated", "summary", "hardware", "models"} <= set(tables)


def test_no_nan_in_any_float_column(tables):
    for name, frame in tables.items():
        floats = [c for c, t in frame.schema.items() if t in (pl.Float32, pl.Float64)]
        nan = [c for c in floats if frame[c].is_nan().any()]
        assert nan == [], f"{name}.parquet has NaN in {nan}"


def test_every_name_axis_is_an_enum_of_its_own_categories(tables):
    seen = 0
    for name, frame in tables.items():
        for column, kind in frame.schema.items():
            if column not in AXIS or AXIS[column].kind != "name":
                continue
            assert isinstance(kind, pl.Enum), f"{name}.{column} is {kind}"
            categories = set(kind.categories.to_list())
            assert categories <= _domain(column), f"{name}.{column}: {categories}"
            seen += 1
    assert seen > 30
    assert set(tables["serving"]["mode"].dtype.categories) == set(SERVING_MODES)
    assert "fp8" not in tables["serving"]["mode"].dtype.categories


def test_formats_dates_and_counts(tables):
    assert isinstance(tables["decode"].schema["compute_dtype"], pl.Enum)
    assert tables["hardware"].schema["price_as_of"] == pl.Date
    assert tables["serving"].schema["price_as_of"] == pl.Date
    assert tables["pools"].schema["decode_price_as_of"] == pl.Date
    prices = tables["hardware"].select("hardware", "price_per_hour", "price_as_of")
    missing = prices.filter(pl.col("price_per_hour").is_null())
    assert missing["price_as_of"].null_count() == missing.height  # no price, no date
    for name in ("decode", "serving", "pools"):
        frame = tables[name]
        for column, kind in frame.schema.items():
            entry = next((v for v in REGISTRY.values() if v.column_name == column), None)
            if entry is not None and entry.dtype in ("count", "int64"):
                assert kind.is_integer(), f"{name}.{column} is {kind}"


def test_the_simulated_plans_name_the_layout_of_their_pools_plan(tables):
    """A simulated plan says which parallel layout its replica is (a replica: tp x ep x pp
    devices), the layout of the pools plan it replays (before: tp alone, the layout dropped)."""
    keys = ["model", "hardware", "tp", "ep", "dp_attention", "pp", "batch", "replicas"]
    keys += ["prefix_hit_rate", "kv_tier", "spec_tokens"]
    simulated = tables["simulated"].select(keys)
    assert simulated.height > 0
    assert simulated.select("ep", "dp_attention", "pp").null_count().sum_horizontal()[0] == 0
    decode = {name: f"decode_{name}" for name in ("hardware", "tp", "batch", "replicas")}
    pools = tables["pools"].rename({theirs: ours for ours, theirs in decode.items()})
    text = [pl.col(c).cast(pl.String) for c in keys]
    found = simulated.with_columns(text).join(
        pools.select(keys).with_columns(text).unique(), on=keys, how="anti", nulls_equal=True
    )
    assert found.height == 0, found  # each simulated plan is a plan of the pools table
