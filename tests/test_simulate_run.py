"""``[serving] simulate = N`` in a run: simulated.parquet, the CDF charts, bad inputs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from sweeps.cli.main import cli
from sweeps.studies.serving.simulated import SIMULATED

CONFIG = """
[sweep]
name = "simulated"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [16, 64]
context = [1024]
kv_heads = ["native"]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
[outputs]
charts = []
formats = ["html"]
[serving]
prompt_tokens = [512]
output_tokens = [1, 64]
arrival_rate = [4.0]
simulate = 300
"""


def run(tmp_path: Path, text: str) -> tuple[int, str, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "s.toml"
    config.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(config), "--out", str(out)])
    return result.exit_code, result.output, out / "simulated"


def test_a_run_writes_one_row_per_cheapest_plan(tmp_path: Path) -> None:
    code, output, folder = run(tmp_path, CONFIG)
    assert code == 0, output
    frame = pl.read_parquet(folder / "simulated.parquet")
    assert frame.columns == [v.name for v in SIMULATED]
    assert frame.height == 2  # one workload per output length, one cheapest plan each
    assert frame["requests"].to_list() == [300, 300]
    assert frame["scheduler"].to_list() == ["serial-prefill", "serial-prefill"]
    assert frame["seed"].to_list() == [0, 0]
    at_one = frame.filter(pl.col("output_tokens") == 1)
    assert at_one["tpot_mean_s"].to_list() == [None]  # no TPOT at O = 1: null, never NaN
    others = frame.filter(pl.col("output_tokens") == 64)
    assert 0 < others["tpot_p50_s"][0] <= others["tpot_p99_s"][0]
    assert others["ttft_p50_s"][0] <= others["ttft_p90_s"][0] <= others["ttft_p99_s"][0]
    assert 0 <= others["slo_attainment"][0] <= 1
    field = pq.read_schema(folder / "simulated.parquet").field("ttft_p99_s")
    assert field.metadata[b"unit"] == b"s"
    for metric in ("ttft", "tpot"):
        assert (folder / "charts" / f"simulated-{metric}-cdf.html").exists()
    assert "Simulated plans: TTFT and TPOT of every request" in (folder / "report.html").read_text()


def test_the_same_config_gives_the_same_table(tmp_path: Path) -> None:
    text = CONFIG + 'lengths = { kind = "lognormal", cv = 0.5 }\n'
    first = run(tmp_path / "a", text)
    second = run(tmp_path / "b", text)
    a = pl.read_parquet(first[2] / "simulated.parquet")
    assert a.equals(pl.read_parquet(second[2] / "simulated.parquet"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("simulate = -1", "serving.simulate"),
        ("slo_quantile = 1.0", "serving.slo_quantile"),
        ('lengths = "normal"', "'normal' is not a length distribution"),
        ('lengths = { kind = "lognormal" }', 'kind = "lognormal" needs cv'),
        ('lengths = { csv = "lengths.csv" }', "serving.lengths.csv = 'lengths.csv': line 2: "
         "column 'output_tokens': 0 must be a whole number >= 1"),
        ('lengths = { csv = "none.csv" }', "serving.lengths.csv = 'none.csv': cannot read the trace"),
    ],
)  # fmt: skip
def test_bad_simulation_inputs_exit_2_and_write_nothing(
    tmp_path: Path, extra: str, message: str
) -> None:
    (tmp_path / "lengths.csv").write_text("prompt_tokens,output_tokens\n100,0\n")
    replaced = extra.startswith("simulate")
    text = CONFIG.replace("simulate = 300", extra) if replaced else CONFIG + extra + "\n"
    code, output, folder = run(tmp_path, text)
    assert code == 2
    assert message in " ".join(output.split())
    assert "s.toml" in output
    assert not folder.parent.exists()
    checked = CliRunner().invoke(cli, ["validate", str(tmp_path / "s.toml")])  # as the run does
    assert checked.exit_code == 2
    assert message in " ".join(checked.output.split())


def test_a_negative_rate_exits_2(tmp_path: Path) -> None:
    code, output, folder = run(
        tmp_path, CONFIG.replace("arrival_rate = [4.0]", "arrival_rate = [-4.0]")
    )
    assert code == 2
    assert "serving.arrival_rate" in output
    assert not folder.parent.exists()


def test_a_streamed_run_simulates_the_same_plans(tmp_path: Path) -> None:
    from sweeps.charts import output_hooks
    from sweeps.config import parse_config
    from sweeps.grid.memory import BASE_BYTES, estimate_bytes
    from sweeps.pipeline import run_to_folder

    from .test_stream import SERVED

    sweep = parse_config(SERVED.replace("[1.0, 20.0]", "[1.0, 20.0]\nsimulate = 200"), "s.toml")
    whole = run_to_folder(sweep, tmp_path / "whole", hooks=output_hooks(sweep))
    budget = BASE_BYTES + 2 * (estimate_bytes(sweep) - BASE_BYTES) // 6
    streamed = run_to_folder(sweep, tmp_path / "streamed", memory_budget=budget,
                             hooks=output_hooks(sweep))  # fmt: skip
    assert streamed.chunks > 1
    assert "simulated" not in streamed.skipped  # it reads the pools table, not the slices
    one = pl.read_parquet(whole.folder / "simulated.parquet")
    assert one.height == 2
    assert one.equals(pl.read_parquet(streamed.folder / "simulated.parquet"))


PLANS = CONFIG.replace('["llama-3-8b"]', '["llama-3-8b", "mistral-7b"]').replace(
    'kv_heads = ["native"]\nkv_dtype = ["bf16"]',
    'kv_heads = ["native", 1, 2, 4]\nkv_dtype = ["bf16", "fp8"]',
)
"""32 workloads (2 models x 4 KV-head settings x 2 KV dtypes x 2 output lengths), so 32 cheapest
plans: more lines of 200 quantiles than one chart takes rows (Altair's 5,000)."""


def test_a_grid_computed_model_by_model_simulates_the_same_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Computed model by model (``pieces``), the simulated plans' hook reads pools.parquet
    once it is written (it is written after the last model's rows, so a hook run beside
    them found no file), and 32 plans' CDFs fit the chart's rows (fewer quantiles each)."""
    from sweeps.pipeline import pieces

    monkeypatch.setattr(pieces, "PIECES_FROM", 1 << 62)
    code, output, whole = run(tmp_path / "whole", PLANS)
    assert code == 0, output
    monkeypatch.setattr(pieces, "PIECES_FROM", 0)
    code, output, folder = run(tmp_path / "pieces", PLANS)
    assert code == 0, output
    frame = pl.read_parquet(folder / "simulated.parquet")
    assert frame.height == 32
    assert frame.equals(pl.read_parquet(whole / "simulated.parquet"))
    for metric in ("ttft", "tpot"):
        assert (folder / "charts" / f"simulated-{metric}-cdf.html").exists()


def test_the_cdfs_of_many_plans_keep_within_the_charts_rows() -> None:
    """Each plan's line has ``POINTS`` quantiles, fewer (the same for every plan, at least 2)
    where the plans' lines together would pass Altair's row limit; a line still runs from the
    plan's least value to its greatest."""
    from types import SimpleNamespace

    import numpy as np

    from sweeps.charts.simulated import POINTS, cdf_frame

    def plan(index: int) -> SimpleNamespace:
        row = {"concurrency": None, "arrival_rate": 1.0, "model": "m", "hardware": "h", "tp": 1,
               "batch": index, "replicas": 1, "scheduler": "s", "prompt_tokens": 1,
               "output_tokens": 2}  # fmt: skip
        ttft = np.r_[np.arange(100.0) + index, np.nan]  # a missing value is left out
        return SimpleNamespace(row=row, timeline=SimpleNamespace(ttft=ttft))

    few = cdf_frame([plan(i) for i in range(3)], "ttft")
    assert few.height == 3 * POINTS
    many = cdf_frame([plan(i) for i in range(32)], "ttft")
    assert many.height == 32 * (5000 // 32)  # 156 quantiles each, within 5,000 rows
    last = many.filter(pl.col("plan") == many["plan"][-1])
    assert (last["value"].min(), last["value"].max()) == (31.0, 130.0)
    assert cdf_frame([plan(i) for i in range(4000)], "ttft").height == 4000 * 2


def test_a_cdf_that_cannot_be_built_is_skipped_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A simulated plans' CDF that fails to build (here: patched to raise) is one figure
    skipped, named with its reason in the run's output; the run and its tables go on."""
    from sweeps.charts import simulated

    def broken(*args):
        msg = "too many plans to draw"
        raise ValueError(msg)

    monkeypatch.setattr(simulated, "cdf_chart", broken)
    code, output, folder = run(tmp_path, CONFIG)
    assert code == 0, output
    assert "chart simulated-ttft-cdf failed" in output
    assert "too many plans to draw" in output
    assert pl.read_parquet(folder / "simulated.parquet").height == 2
    assert not (folder / "charts" / "simulated-ttft-cdf.html").exists()
