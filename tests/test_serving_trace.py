"""``[workload] trace = "..."``: the serving axes from a trace (by hand), the simulated plans
replaying it (against the simulator called directly on the file), and the refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import sweeps
from sweeps.cli.main import cli
from sweeps.errors import ConfigError
from sweeps.studies.serving.trace import TraceLoad
from sweeps.traces.data import shipped as slice_path

TRACE = """arrival_s,prompt_tokens,output_tokens
0.0,100,10
1.0,200,20
2.0,300,30
4.0,400,41
"""
"""Four requests over 4 s: a rate of 3 / 4 request/s, mean lengths 250 and 25.25."""

CONFIG = """
[sweep]
name = "replayed"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [16, 64]
context = [1024]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
[outputs]
charts = []
grid = "none"
[serving]
ttft_slo_s = 1.0
simulate = {simulate}
chunk_tokens = 4096
schedulers = ["chunked-greedy"]
{extra}
[workload]
trace = "{trace}"
rate_scale = [1.0, 2.0]
"""


def _config(folder: Path, trace: str = "trace.csv", simulate: int = 0, extra: str = "") -> Path:
    (folder / "trace.csv").write_text(TRACE, encoding="utf-8")
    path = folder / "replay.toml"
    text = CONFIG.format(trace=trace, simulate=simulate, extra=extra)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_serving_axes_are_the_traces_rate_and_mean_lengths(tmp_path: Path) -> None:
    sweep = sweeps.load_config(_config(tmp_path))
    assert sweep.prompt_tokens == (250,)
    assert sweep.output_tokens == (25,)  # 25.25, rounded
    assert all(isinstance(load, TraceLoad) for load in sweep.arrival_rate)
    assert [load.rate for load in sweep.arrival_rate] == [0.75, 1.5]
    assert sweep.concurrency == ()
    ds = sweeps.run(sweep)
    np.testing.assert_array_equal(ds["arrival_rate"].values, [0.75, 1.5])
    np.testing.assert_array_equal(ds["prompt_tokens"].values, [250])


def test_the_simulated_plans_replay_the_trace_at_each_scale(tmp_path: Path) -> None:
    from sweeps.grid.scalar import point_inputs
    from sweeps.studies.serving.simulate import Arrivals, read_trace, simulate, summarize

    shipped = "azure-conv-2023.csv"
    config = _config(tmp_path, trace=shipped, simulate=400)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    frame = pl.read_parquet(out / "replayed" / "simulated.parquet")
    assert frame.height == 2  # one cheapest plan at each scale
    assert frame["requests"].to_list() == [400, 400]  # the trace's first 400
    sweep = sweeps.load_config(config)
    for row, scale in zip(
        frame.sort("arrival_rate").iter_rows(named=True), (1.0, 2.0), strict=True
    ):
        arrivals = read_trace(slice_path(shipped), rate_scale=scale)
        first = Arrivals(
            "trace", times=arrivals.times[:400], prompts=arrivals.prompts[:400],
            outputs=arrivals.outputs[:400], source="direct",
        )  # fmt: skip
        point = point_inputs(sweep, {"batch": sweep.batch.index(row["batch"])})
        timeline = simulate(
            point, "chunked-greedy", row["batch"], arrivals=first, budget=4096,
            replicas=row["replicas"],
        )  # fmt: skip
        stats = summarize(timeline, 1.0, sweep.studies["serving"].tpot_slo_s)
        assert row["ttft_p90_s"] == stats["ttft_p90_s"]
        assert row["latency_p99_s"] == stats["latency_p99_s"]


@pytest.mark.parametrize(
    ("trace", "extra", "said"),
    [
        ("../outside.csv", "", "workload.trace: '../outside.csv' leads outside the config's"),
        ("missing.csv", "", "workload.trace: 'missing.csv': no such file"),
        ("trace.csv", "prompt_tokens = [512]", "serving.prompt_tokens: comes from workload"),
        ("trace.csv", "concurrency = [4]", "serving.concurrency: comes from workload"),
        ("trace.csv", 'lengths = "uniform"', "serving.lengths: comes from workload"),
        ('trace.csv"\nformat = "csv', "", "workload.format: 'csv' is no trace format"),
    ],
)
def test_bad_workloads_are_refused_naming_the_key(
    tmp_path: Path, trace: str, extra: str, said: str
) -> None:
    folder = tmp_path / "inner"
    folder.mkdir()
    (tmp_path / "outside.csv").write_text(TRACE, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        sweeps.load_config(_config(folder, trace, extra=extra))
    assert said in str(error.value)


def test_a_rate_scale_below_the_slowest_rate_is_refused(tmp_path: Path) -> None:
    """The trace's 0.75 request/s at a scale of 1e-300 was a rate that overflowed what is
    divided by it; a scale whose rate is below limits.MIN_RATE is named with the range."""
    path = _config(tmp_path)
    path.write_text(path.read_text().replace("[1.0, 2.0]", "[1e-300, 1.0]"), encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        sweeps.load_config(path)
    said = str(error.value)
    assert "workload.rate_scale[0]: 1e-300 makes the trace's 0.75 request/s 7.5e-301" in said
    assert "at least 1e-06 request/s (limits.MIN_RATE), a scale of at least 1.33333e-06" in said


def test_a_workload_needs_the_serving_table(tmp_path: Path) -> None:
    path = _config(tmp_path)
    text = path.read_text("utf-8").split("[serving]")[0] + '[workload]\ntrace = "trace.csv"\n'
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[workload\] needs a \[serving\] table"):
        sweeps.load_config(path)


def test_a_hashed_workload_trace_gives_the_prefix_hit_rate(tmp_path: Path) -> None:
    path = _config(tmp_path, trace="mooncake-conversation.jsonl")
    text = path.read_text("utf-8").replace(
        'weight_dtype = ["bf16"]', 'weight_dtype = ["bf16"]\nprefix_hit_rate = "trace"'
    )
    path.write_text(text, encoding="utf-8")
    sweep = sweeps.load_config(path)
    (rate,) = sweep.prefix_hit_rate
    assert Path(getattr(rate, "source", "")).name == "mooncake-conversation.jsonl"
    ds = sweeps.run(sweep)
    hit = float(ds["hit_rate"].squeeze())
    assert 0 < hit < 1
