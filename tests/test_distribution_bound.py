"""The serving table's ``bound`` row under ``[workload] trace``: the bound of the trace's length
distribution (``sweeps.studies.serving.distribution``; docs/workloads.md), against the
simulator (the adversary) replaying the trace's own requests.

- The row's time per request, ``1 / rate``, times the requests is the bound of their summed
  work written out here from the simulator's step costs (``summed_bound``), to 1e-4 (the
  table sums the decode steps in closed form).
- No named scheduler, replaying the trace's requests from a backlog or at their recorded
  times, serves them at a higher rate than the row's, nor at a lower mean TTFT: on
  negatively covarying lognormal draws (where the bound at the mean lengths falls below the
  distribution's rate, checked) and on the shipped Azure slice's own requests.
- The adversary has teeth: one scheduler comes within 5 % of the row's rate.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sweeps
from sweeps.config import parse_config
from sweeps.grid.scalar import point_inputs
from sweeps.studies.serving.simulate import SCHEDULERS, Arrivals, simulate
from sweeps.traces import read_trace
from sweeps.traces.data import shipped

from .simulation import costs, point
from .test_simulate_distributions import summed_bound

BATCHES = (1, 8, 32)
BUDGET = 2048

CONFIG = """
[sweep]
name = "distribution-bound"
[axes]
model = ["{model}"]
hardware = ["{hardware}"]
tp = [{tp}]
batch = [{batches}]
context = [1024]
kv_heads = ["native"]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
[options]
attention_flops = true
[outputs]
charts = []
grid = "none"
[serving]
chunk_tokens = {budget}
{workload}
"""


DENSE = ("llama-3-8b", "h100-sxm", 1)
MOE = ("mixtral-8x7b", "h200", 2)
"""A replica: model, device, tp."""


def _config(workload: str, replica: tuple[str, str, int] = DENSE) -> str:
    model, hardware, tp = replica
    return CONFIG.format(
        model=model, hardware=hardware, tp=tp, batches=", ".join(map(str, BATCHES)),
        budget=BUDGET, workload=workload,
    )  # fmt: skip


def negatively_covarying(n: int = 240, rho: float = -0.8, seed: int = 3) -> np.ndarray:
    """Lognormal lengths of CV 1 about means 1,200 and 120 from a Gaussian copula of
    correlation ``rho``, cut to ``I + O < 8000`` (the test cost tables' contexts)."""
    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], n)
    sigma = np.sqrt(np.log(2.0))
    means = np.log([1200.0, 120.0]) - sigma**2 / 2
    pairs = np.maximum(np.rint(np.exp(means + sigma * z)), 1).astype(np.int64)
    return pairs[pairs.sum(1) < 8000]


def azure() -> tuple[np.ndarray, np.ndarray]:
    """The shipped Azure slice's requests: times and ``(I, O)`` pairs."""
    trace = read_trace(shipped("azure-conv-2023.csv"))
    return trace.arrival, np.stack([trace.prompt, trace.output], 1).astype(np.int64)


def _generated() -> tuple[np.ndarray, np.ndarray]:
    pairs = negatively_covarying()
    times = np.sort(np.random.default_rng(7).uniform(0.0, 60.0, len(pairs)))
    return times, pairs


TRACES = {"negative": _generated, "azure": azure}


@cache
def table(
    kind: str, folder: Path, replica: tuple[str, str, int] = DENSE
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The trace's times and pairs, and the bound row's requests/s of a replica and TTFT by
    batch, from a config whose ``[workload]`` is the trace written as a CSV file in
    ``folder``."""
    times, pairs = TRACES[kind]()
    rows = [f"{t:.6f},{i},{o}" for t, (i, o) in zip(times, pairs, strict=True)]
    text = "arrival_s,prompt_tokens,output_tokens\n" + "\n".join(rows) + "\n"
    (folder / f"{kind}.csv").write_text(text, encoding="utf-8")
    path = folder / f"{kind}-{replica[0]}.toml"
    path.write_text(_config(f'[workload]\ntrace = "{kind}.csv"', replica), encoding="utf-8")
    bound = sweeps.run(path).sel(mode="bound")
    per_device = bound["output_tokens_per_s_per_device"].values.reshape(-1)
    rate = per_device * replica[2] / pairs[:, 1].mean()  # tp devices a replica
    return times, pairs, rate, bound["serving_ttft_s"].values.reshape(-1)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traces")


@pytest.mark.parametrize("kind", sorted(TRACES))
def test_the_bound_row_is_the_bound_of_the_summed_work(kind: str, folder: Path) -> None:
    _, pairs, rate, _ = table(kind, folder)
    prompt, output = pairs[:, 0], pairs[:, 1]
    c = costs(context=int((prompt + output).max()) + 1)
    for b, r in zip(BATCHES, rate, strict=True):
        largest = max(b * int(prompt.max()), BUDGET)  # the largest step of any mode
        summed = summed_bound(c, b, prompt, output, largest)
        assert len(pairs) / r == pytest.approx(summed, rel=1e-4), b


def test_the_bound_at_the_mean_lengths_is_below_a_negatively_covarying_distributions(
    folder: Path,
) -> None:
    """What the row replaces: at the mean lengths the bound's rate is below what the
    distribution allows (``E[I O] < E[I] E[O]``), by more than the rounding of the means."""
    _, pairs, rate, _ = table("negative", folder)
    assert np.corrcoef(pairs.T)[0, 1] < -0.3
    i, o = (round(float(m)) for m in pairs.mean(0))
    text = _config(f"prompt_tokens = [{i}]\noutput_tokens = [{o}]\narrival_rate = [1.0]")
    at_means = sweeps.run(parse_config(text, "<at-means>")).sel(mode="bound")
    old = at_means["output_tokens_per_s_per_device"].values.reshape(-1) / o
    assert np.all(rate > old * 1.002)


@pytest.mark.parametrize(
    ("kind", "replica"),
    [("azure", DENSE), ("negative", DENSE), ("negative", MOE)],
    ids=["azure", "negative", "negative-moe"],
)
def test_no_scheduler_beats_the_bound_row_replaying_the_trace(
    kind: str, replica: tuple[str, str, int], folder: Path
) -> None:
    """Dense, and MoE (the weights a step reads grow with its tokens: the chords up to ``B``
    of the longest prompts)."""
    times, pairs, rate, ttft = table(kind, folder, replica)
    n = len(pairs)
    best = 0.0
    for b, r, first in zip(BATCHES, rate, ttft, strict=True):
        for scheduler in SCHEDULERS:
            budget = BUDGET if scheduler.startswith("chunked") else 0
            for at in (np.zeros(n), times):  # a backlog, and the trace's own times
                arrivals = Arrivals("trace", times=at, prompts=pairs[:, 0], outputs=pairs[:, 1])
                tl = simulate(
                    point(*replica), scheduler, b, arrivals=arrivals, requests=n, budget=budget
                )
                achieved = n / tl.busy.sum()
                assert achieved <= r * (1 + 1e-9), (scheduler, b)
                assert tl.ttft.mean() >= first * (1 - 1e-9), (scheduler, b)
                best = max(best, achieved / r)
    assert best > 0.95  # the row is no loose bound: a scheduler comes within 5 %


@pytest.mark.parametrize(
    "axes",
    [
        'prefix_hit_rate = [0.0]\nkv_tier = ["hbm"]',
        'spec_tokens = [0]\nspec_acceptance = [0.7]\nspec_draft = ["ngram"]',
    ],
    ids=["hit-rate-0", "k-0"],
)
def test_the_techniques_bound_of_a_distribution_at_their_plain_values_is_the_plain_one(
    axes: str, folder: Path
) -> None:
    """The parts of a hit prefill and of speculation (``bounds.technique_parts``) averaged over
    the trace's requests: at a hit rate of 0 and ``k = 0`` the plain row's rate."""
    _, pairs, rate, ttft = table("negative", folder)
    path = folder / "techniques.toml"
    text = _config('[workload]\ntrace = "negative.csv"').replace("[options]", f"{axes}\n[options]")
    path.write_text(text, encoding="utf-8")
    bound = sweeps.run(path).sel(mode="bound")
    per_device = bound["output_tokens_per_s_per_device"].values.reshape(-1)
    np.testing.assert_allclose(per_device / pairs[:, 1].mean(), rate, rtol=1e-12)
    np.testing.assert_allclose(bound["serving_ttft_s"].values.reshape(-1), ttft, rtol=1e-12)


TECHNIQUES = {
    "hit-hbm": 'prefix_hit_rate = [0.5]\nkv_tier = ["hbm"]',
    "hit-host": 'prefix_hit_rate = [0.7]\nkv_tier = ["host"]',
    "k-2-always": 'spec_tokens = [2]\nspec_acceptance = [1.0]\nspec_draft = ["ngram"]',
    "k-3-never": 'spec_tokens = [3]\nspec_acceptance = [0.0]\nspec_draft = ["llama-3.2-1b"]',
}
"""Prefix hits (from HBM, reloaded from the host) and speculation at a fixed acceptance (no
sampling luck to allow for)."""


@pytest.mark.parametrize("name", sorted(TECHNIQUES))
def test_no_scheduler_beats_the_bound_row_with_techniques(name: str, folder: Path) -> None:
    _, pairs, _, _ = table("negative", folder)
    path = folder / f"{name}.toml"
    text = _config('[workload]\ntrace = "negative.csv"')
    path.write_text(text.replace("[options]", f"{TECHNIQUES[name]}\n[options]"), "utf-8")
    sweep = sweeps.load_config(path)
    bound = sweeps.run(sweep).sel(mode="bound")
    rate = bound["output_tokens_per_s_per_device"].values.reshape(-1) / pairs[:, 1].mean()
    ttft = bound["serving_ttft_s"].values.reshape(-1)
    n = len(pairs)
    for index, (b, r, first) in enumerate(zip(BATCHES, rate, ttft, strict=True)):
        x = point_inputs(sweep, {"batch": index})
        for scheduler in SCHEDULERS:
            budget = BUDGET if scheduler.startswith("chunked") else 0
            arrivals = Arrivals(
                "trace", times=np.zeros(n), prompts=pairs[:, 0], outputs=pairs[:, 1]
            )
            tl = simulate(x, scheduler, b, arrivals=arrivals, requests=n, budget=budget)
            assert n / tl.busy.sum() <= r * (1 + 1e-9), (scheduler, b)
            assert tl.ttft.mean() >= first * (1 - 1e-9), (scheduler, b)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(2, 60),
    rho=st.floats(-0.95, 0.95),
    cv=st.sampled_from([0.3, 1.0, 2.0]),
    seed=st.integers(0, 2**16),
)
def test_the_bound_row_is_the_summed_work_bound_of_generated_traces(
    n: int, rho: float, cv: float, seed: int, tmp_path: Path
) -> None:
    """Generated traces: lognormal lengths of any CV and correlation, a few requests or
    many; the row's time per request times the requests is the bound of their summed work."""
    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], n)
    sigma = np.sqrt(np.log(1 + cv * cv))
    means = np.log([900.0, 90.0]) - sigma**2 / 2
    pairs = np.clip(np.rint(np.exp(means + sigma * z)), 1, [6000, 1500]).astype(np.int64)
    rows = "\n".join(f"{0.5 * k},{i},{o}" for k, (i, o) in enumerate(pairs))
    folder = tmp_path / f"generated-{seed}-{n}"
    folder.mkdir()
    (folder / "g.csv").write_text(f"arrival_s,prompt_tokens,output_tokens\n{rows}\n", "utf-8")
    (folder / "g.toml").write_text(_config('[workload]\ntrace = "g.csv"'), "utf-8")
    bound = sweeps.run(folder / "g.toml").sel(mode="bound")
    rate = bound["output_tokens_per_s_per_device"].values.reshape(-1) / pairs[:, 1].mean()
    prompt, output = pairs[:, 0], pairs[:, 1]
    c = costs(context=8192)
    for b, r in zip(BATCHES, rate, strict=True):
        summed = summed_bound(c, b, prompt, output, max(b * int(prompt.max()), BUDGET))
        assert n / r == pytest.approx(summed, rel=1e-4), b


def test_capped_holds_a_rate_at_the_bound_and_keeps_nulls() -> None:
    """Hand values: above the bound it is the bound, under it itself; a null rate stays null
    and a null bound holds nothing [token/s]."""
    from sweeps.studies.serving.distribution import capped

    named = np.array([1.0, 3.0, np.nan, 5.0])
    bound = np.array([2.0, 2.0, 2.0, np.nan])
    got = capped(named, bound)
    np.testing.assert_array_equal(got, [1.0, 2.0, np.nan, 5.0])
