"""The closed forms of docs/serving.md against the simulator running each scheduler.

- Saturated (a backlog from a warm start: the first ``B`` requests in the slots, ending evenly
  spread as in steady state): each named scheduler's requests/s and mean TPOT in the serving
  table within 0.5 % of the simulator at pinned points, the budget-limited chunked points
  included (measured: within 0.067 %; each largest error pinned in ``PINNED``); the table's
  ``bound`` beaten by none, and equal to docs/serving.md's bound written out here.
- serving.md's check values, and its closed forms written out from the per-step bounds, equal
  to the serving table's.
- The bound over every scheduler: for generated operating points no simulated scheduler, from
  a backlog or under Poisson arrivals, serves its requests in less device time than
  ``requests x t_req``, and no request's TTFT beats ``t_p(1, I)``.
- Under Poisson load: a prompt alone on its replica is an M/D/1 queue; the simulated mean,
  p90 and p99 waits hold Erlang's exact distribution within their confidence intervals.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import sweeps
from sweeps.studies.serving.simulate import (
    SCHEDULERS,
    backlog,
    batch_means,
    poisson,
    simulate,
    summarize,
)

from .simulation import (
    batched_prefill,
    chunked_paced,
    costs,
    md1_wait_quantile,
    point,
    prefill_step,
    request_bound,
    serial_prefill,
    static_batch,
)

TOLERANCE = 0.005
"""docs/serving.md section 3: closed forms within 0.5 % of the simulator."""


# (model, hardware, tp, B, I, O, tau); serving.md's check point first, then the budget-limited
# chunked points (B + B I / (O - 1) > tau), B = 1, B > O - 1 (slots free in groups) and MoE
POINTS = [
    ("llama-3-8b", "h100-sxm", 1, 64, 2048, 256, 2048),
    ("llama-3-8b", "h100-sxm", 1, 64, 2048, 32, 2048),
    ("llama-3-8b", "h100-sxm", 1, 256, 512, 64, 2048),
    ("llama-3-8b", "h100-sxm", 1, 1, 2048, 256, 2048),
    ("llama-3-8b", "h100-sxm", 1, 256, 128, 16, 4096),
    ("llama-3-8b", "h100-sxm", 1, 16, 512, 128, 2048),
    ("mixtral-8x7b", "h200", 2, 128, 1024, 128, 4096),
]
PINNED = {
    "static": 1e-9,
    "serial-prefill": 5e-4,
    "batched-prefill": 5e-4,
    "chunked-paced": 1e-3,
    "chunked-greedy": 1e-3,
}
"""Each closed form's largest error on these points, pinned a little above what was measured
(sweeps' serving table against the simulator from a warm start): static exact; serial- and
batched-prefill 0.023 % on requests/s (B = 128 slots over O - 1 = 127 phases: a step's contexts
are not spread evenly, so it is not exactly t_d at the mean context) and 0.003 % on TPOT;
chunked-paced 0.054 % and 0.003 % (budget-limited points included); chunked-greedy 0.067 % and
0.055 %."""


@cache
def package(case: tuple) -> dict[str, tuple[float, float, float]]:  # type: ignore[type-arg]
    """Each mode's requests/s per replica, TPOT and TTFT from the serving table."""
    model, hardware, tp, b, i, o, tau = case
    ds = sweeps.run({
        "sweep": {"name": "closed-forms"},
        "axes": {"model": [model], "hardware": [hardware], "tp": [tp], "batch": [b],
                 "context": [1024], "kv_heads": ["native"], "kv_dtype": ["bf16"],
                 "weight_dtype": ["bf16"]},
        "options": {"attention_flops": True},
        "serving": {"prompt_tokens": [i], "output_tokens": [o], "arrival_rate": [1.0],
                    "chunk_tokens": tau},
    })  # fmt: skip
    out = {}
    for mode in ds["mode"].values:
        one = ds.sel(mode=mode)
        per_device = float(one["output_tokens_per_s_per_device"].squeeze())
        tpot, ttft = float(one["tpot_s"].squeeze()), float(one["serving_ttft_s"].squeeze())
        out[str(mode)] = (per_device * tp / o, tpot, ttft)
    return out


def saturated(case: tuple, scheduler: str) -> dict[str, float]:  # type: ignore[type-arg]
    model, hardware, tp, b, i, o, tau = case
    n = max(12 * b, 1200)
    tl = simulate(
        point(model, hardware, tp), scheduler, b, arrivals=backlog(n, b), requests=n,
        prompt=i, output=o, budget=tau,
    )  # fmt: skip
    return summarize(tl)


@pytest.mark.parametrize("case", POINTS, ids=lambda c: "-".join(map(str, c[3:])))
@pytest.mark.parametrize("scheduler", list(PINNED))
def test_each_schedulers_closed_form_matches_the_simulator(scheduler: str, case: tuple) -> None:  # type: ignore[type-arg]
    rate, tpot, _ = package(case)[scheduler]
    s = saturated(case, scheduler)
    tolerance = min(TOLERANCE, PINNED[scheduler])
    assert s["requests_per_s"] == pytest.approx(rate, rel=tolerance)
    assert s["tpot_mean_s"] == pytest.approx(tpot, rel=tolerance)


@pytest.mark.parametrize("case", POINTS, ids=lambda c: "-".join(map(str, c[3:])))
def test_no_scheduler_beats_the_packages_bound(case: tuple) -> None:  # type: ignore[type-arg]
    model, hardware, tp, b, i, o, tau = case
    rate, _, ttft = package(case)["bound"]
    c = costs(model, hardware, tp)
    # docs/serving.md section 2 written out here: the same to 1e-4 (the table sums the
    # decode steps in closed form)
    assert 1 / rate == pytest.approx(request_bound(c, b, i, o, tau), rel=1e-4)
    for scheduler in PINNED:
        n = 2 * b + 50
        tl = simulate(
            point(model, hardware, tp), scheduler, b, arrivals=backlog(n), requests=n,
            prompt=i, output=o, budget=tau,
        )  # fmt: skip
        assert n / tl.busy.sum() <= rate * (1 + 1e-12), scheduler
        assert tl.ttft.min() >= ttft * (1 - 1e-12), scheduler


def test_serving_md_check_values() -> None:
    c = costs()
    assert prefill_step(c, 1, 2048) == pytest.approx(30.007e-3, abs=5e-7)
    rate, tpot = serial_prefill(c, 64, 2048, 256)
    assert rate == pytest.approx(14.374, abs=5e-4)
    assert rate * 256 == pytest.approx(3679.7, abs=0.05)
    assert tpot == pytest.approx(17.343e-3, abs=5e-7)
    assert rate * prefill_step(c, 1, 2048) == pytest.approx(0.4313, abs=5e-5)
    _, t_mix, chunk = chunked_paced(c, 64, 2048, 256, 2048)
    assert chunk == pytest.approx(514.0, abs=0.05)
    assert t_mix == pytest.approx(9.97e-3, abs=5e-5)
    s = saturated(POINTS[0], "serial-prefill")
    assert s["tpot_mean_s"] == pytest.approx(17.343e-3, abs=5e-7)


@pytest.mark.parametrize("case", POINTS[:3], ids=lambda c: "-".join(map(str, c[3:])))
def test_the_serving_tables_closed_forms_are_serving_mds(case: tuple) -> None:  # type: ignore[type-arg]
    model, hardware, tp, b, i, o, tau = case
    c, table = costs(model, hardware, tp), package(case)
    for name, (rate, tpot) in {
        "static": static_batch(c, b, i, o),
        "serial-prefill": serial_prefill(c, b, i, o),
        "batched-prefill": batched_prefill(c, b, i, o),
        "chunked-paced": chunked_paced(c, b, i, o, tau)[:2],
    }.items():
        assert table[name][0] == pytest.approx(rate, rel=1e-3), name
        assert table[name][1] == pytest.approx(tpot, rel=1e-3), name


OPERATING_POINTS = st.tuples(
    st.sampled_from([("llama-3-8b", "h100-sxm", 1), ("mixtral-8x7b", "h200", 2)]),
    st.sampled_from([1, 2, 7, 32, 96]),  # B
    st.sampled_from([1, 16, 100, 700, 2500]),  # I: short and long prompts
    st.integers(2, 80),  # O
    st.sampled_from([0.5, 1.3, 3.0]),  # tau over B + B I / (O - 1): budget-limited or not
    st.booleans(),  # Poisson arrivals or a backlog
)


@settings(max_examples=25, deadline=None)
@given(OPERATING_POINTS)
@example((("llama-3-8b", "h100-sxm", 1), 96, 2500, 2, 3.0, False))  # the largest budget drawn
@example((("mixtral-8x7b", "h200", 2), 1, 16, 2, 1.3, True))  # paced prefill ahead of B I
def test_no_scheduler_beats_the_bound(case: tuple) -> None:  # type: ignore[type-arg]
    (model, hardware, tp), b, i, o, share, open_loop = case
    tau = max(int(share * (b + b * i / (o - 1))), b + 1)
    c = costs(model, hardware, tp)
    n = 3 * b + 5
    for scheduler in SCHEDULERS:
        chunked = scheduler.startswith("chunked")
        t_req = request_bound(c, b, i, o, tau if chunked else b * i)
        # a backlog, or Poisson arrivals near the bound's rate (slots freeing at random)
        arrivals = poisson(0.9 / t_req) if open_loop else backlog(n)
        tl = simulate(
            point(model, hardware, tp), scheduler, b, arrivals=arrivals, requests=n,
            prompt=i, output=o, budget=tau if chunked else 0,
        )  # fmt: skip
        assert tl.busy.sum() >= n * t_req * (1 - 1e-12), scheduler
        assert tl.ttft.min() >= prefill_step(c, 1, i) * (1 - 1e-12), scheduler


RHOS = [0.3, 0.7, 0.9]


@pytest.mark.parametrize("rho", RHOS)
def test_md1_waits_match_the_simulator_within_its_confidence_interval(rho: float) -> None:
    # O = 1: a request is one prefill step, alone: Poisson arrivals, deterministic service
    c, prompt = costs(), 512
    service = prefill_step(c, 1, prompt)
    rate = rho / service
    tl = simulate(
        point(), "serial-prefill", 8, arrivals=poisson(rate), requests=60_000,
        prompt=prompt, output=1, seed=11,
    )  # fmt: skip
    wait = tl.wait[6000:]
    assert wait.min() >= 0
    mean, half = batch_means(wait, level=0.99)
    assert abs(mean - rho * service / (2 * (1 - rho))) <= half
    for q in (0.9, 0.99):
        value, half = batch_means(wait, lambda v, q=q: float(np.quantile(v, q)), level=0.99)
        assert abs(value - md1_wait_quantile(q, rate, service)) <= half, q
