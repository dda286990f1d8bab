"""The bounds of docs/workloads.md for length distributions, against the simulator (the
adversary): generated lognormal and bimodal lengths and the Azure trace's own.

- Throughput: the replicas' busy time is at least the bound of the summed work,
  ``max(sum F_r / peak, (max(sum first_r, sum second_r) + sum Q_r) / bandwidth)`` (the
  fixed-length bound of docs/serving.md summed request by request: linear, so exact for any
  lengths); where the drawn prompts and outputs do not covary negatively, at least ``n`` times
  the fixed-length bound at their means (Jensen on the convex parts).
- Mean TTFT: at least the one-prompt prefill of the mean prompt (the prefill is convex in
  ``I``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.studies.serving.simulate import (
    SCHEDULERS,
    Lengths,
    StepCosts,
    backlog,
    poisson,
    simulate,
)
from sweeps.traces import read_trace
from sweeps.traces.data import shipped

from .simulation import costs, point, prefill_step, request_bound


def summed_bound(
    c: StepCosts, batch: int, prompt: np.ndarray, output: np.ndarray, budget: int
) -> float:
    """``request_bound``'s terms summed over the requests, the max taken of the sums [s]."""
    flops_cs = np.concatenate([[0.0], np.cumsum(c.decode_flops)])
    cache_cs = np.concatenate([[0.0], np.cumsum(c.cache)])
    decode_flops = flops_cs[prompt + output] - flops_cs[prompt + 1]  # contexts I+1..I+O-1
    flops = c.token_flops * prompt + c.pair_flops * c.pairs[prompt] + c.logit_flops + decode_flops
    q = c.cache[prompt] + cache_cs[prompt + output] - cache_cs[prompt + 1]
    w = c.weights
    chunk = np.minimum(budget, batch * prompt)
    first = (output - 1) / batch * w[batch] + prompt * (w[batch + chunk] - w[batch]) / chunk
    steps = (output - 1) / batch  # and (I + O - 1) / tau, summed below
    second_tokens = prompt + output - 1
    second = (
        max(steps.sum(), second_tokens.sum() / budget) * w[0]
        + second_tokens.sum() * (w[budget] - w[0]) / budget
    )
    memory = (max(first.sum(), second) + q.sum()) / c.bandwidth
    return float(max(flops.sum() / c.peak, memory))


def azure_pairs() -> np.ndarray:
    trace = read_trace(shipped("azure-conv-2023.csv"))
    fits = trace.prompt + trace.output < 8000
    return np.stack([trace.prompt[fits], trace.output[fits]], 1)


def lognormal_pairs(prompt: int, output: int, n: int = 4000) -> np.ndarray:
    """Lognormal lengths of CV 1 about these means, independent, cut to the cost tables'
    contexts (``I + O < 8000``)."""
    rng = np.random.default_rng(prompt + output)
    sigma = np.sqrt(np.log(2.0))  # CV 1
    draw = [rng.lognormal(np.log(m) - sigma**2 / 2, sigma, n) for m in (prompt, output)]
    pairs = np.maximum(np.rint(np.stack(draw, 1)), 1).astype(np.int64)
    return pairs[pairs.sum(1) < 8000]


DISTRIBUTIONS = {
    "lognormal": lambda: Lengths("csv", pairs=lognormal_pairs(1200, 120)),
    "lognormal-short": lambda: Lengths("csv", pairs=lognormal_pairs(300, 20)),
    "bimodal": lambda: Lengths(
        "csv", pairs=np.array([[40, 400], [3000, 20], [40, 20], [3000, 400]])
    ),
    "azure": lambda: Lengths("csv", pairs=azure_pairs()),
}


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from(sorted(DISTRIBUTIONS)),
    st.sampled_from([1, 8, 32]),  # B
    st.booleans(),  # Poisson arrivals or a backlog
    st.integers(0, 3),  # seed
)
def test_no_scheduler_beats_the_distribution_bounds(kind, b, open_loop, seed) -> None:  # type: ignore[no-untyped-def]
    c, lengths = costs(), DISTRIBUTIONS[kind]()
    i, o = (int(m) for m in lengths.pairs.mean(0))
    tau = max(4 * b, 2048)
    n = 4 * b + 20
    for scheduler in SCHEDULERS:
        chunked = scheduler.startswith("chunked")
        budget = tau if chunked else 0
        arrivals = poisson(0.5 / request_bound(c, b, i, o, tau)) if open_loop else backlog(n)
        tl = simulate(
            point(), scheduler, b, arrivals=arrivals, requests=n, prompt=i, output=o,
            lengths=lengths, budget=budget, seed=seed,
        )  # fmt: skip
        prompt, output = tl.prompt.astype(np.int64), tl.output.astype(np.int64)
        step_budget = tau if chunked else int(b * prompt.max())
        bound = summed_bound(c, b, prompt, output, step_budget)
        assert tl.busy.sum() >= bound * (1 - 1e-9), (scheduler, kind)
        covary = np.mean((prompt - prompt.mean()) * (output - output.mean()))
        if covary >= 0:
            at_means = request_bound(c, b, int(prompt.mean()), int(output.mean()), step_budget)
            assert tl.busy.sum() >= n * at_means * (1 - 1e-9), (scheduler, kind)
        mean_prefill = prefill_step(c, 1, int(prompt.mean()))
        assert tl.ttft.mean() >= mean_prefill * (1 - 1e-9), (scheduler, kind)


def test_the_summed_bound_is_the_fixed_bound_at_fixed_lengths() -> None:
    c = costs()
    prompt, output = np.full(10, 700), np.full(10, 60)
    assert summed_bound(c, 8, prompt, output, 2048) == pytest.approx(
        10 * request_bound(c, 8, 700, 60, 2048), rel=1e-12
    )
