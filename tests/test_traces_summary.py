"""The workload document against an independent computation (the standard library's
statistics) on the shipped slices, and by hand on a small trace."""

from __future__ import annotations

import itertools
import statistics

import numpy as np
import pytest

from sweeps.errors import ConfigError
from sweeps.traces import Trace, describe, read_trace
from sweeps.traces.data import shipped


def ranks(values: list[int]) -> list[float]:
    """Ranks from 1, ties given their mean rank, by a plain loop."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


@pytest.mark.parametrize("name", ["azure-conv-2023.csv", "mooncake-conversation.jsonl"])
def test_counts_rate_and_percentiles_equal_the_standard_library(name: str) -> None:
    trace = read_trace(shipped(name))
    doc = describe(trace, bin_s=30.0)
    times = trace.arrival.tolist()
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert doc["requests"] == len(times)
    assert doc["arrivals"]["rate"] == pytest.approx((len(times) - 1) / (times[-1] - times[0]))
    cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
    assert doc["arrivals"]["interarrival_cv"] == pytest.approx(cv)
    assert sum(doc["arrivals"]["per_bin"]) == len(times)
    for column, values in (("prompt_tokens", trace.prompt), ("output_tokens", trace.output)):
        cuts = statistics.quantiles(values.tolist(), n=100, method="inclusive")
        for p in (50, 90, 95, 99):
            assert doc[column][f"p{p}"] == pytest.approx(cuts[p - 1])
        assert doc[column]["mean"] == pytest.approx(statistics.fmean(values.tolist()))
    pearson = statistics.correlation(trace.prompt.tolist(), trace.output.tolist())
    assert doc["correlation"]["pearson"] == pytest.approx(pearson)
    spearman = statistics.correlation(ranks(trace.prompt.tolist()), ranks(trace.output.tolist()))
    assert doc["correlation"]["spearman"] == pytest.approx(spearman)
    assert (doc["reuse"] is None) == (not trace.has_hashes)


def test_a_small_trace_by_hand() -> None:
    # three requests; the second and third reuse the first's first block, the third its second
    trace = Trace(
        arrival=np.array([0.0, 1.0, 4.0]),
        prompt=np.array([8, 6, 12]),
        output=np.array([1, 2, 3]),
        hashes=np.array([7, 8, 7, 9, 7, 8, 5]),
        offsets=np.array([0, 2, 4, 7]),
        block_tokens=4,
    )
    doc = describe(trace, bin_s=2.0)
    assert doc["arrivals"]["rate"] == pytest.approx(0.5)  # 2 gaps over 4 s
    assert doc["arrivals"]["per_bin"] == [2, 0, 1]
    assert doc["arrivals"]["peak_rate"] == pytest.approx(1.0)
    assert doc["arrivals"]["interarrival_cv"] == pytest.approx(0.5)  # gaps 1 and 3
    reuse = doc["reuse"]
    assert reuse["working_set_blocks"] == 4
    # unbounded: 4 tokens of the second, 8 of the third, of 26
    assert reuse["unbounded_hit_rate"] == pytest.approx(12 / 26)
    assert reuse["requests_reusing"] == pytest.approx(2 / 3)
    assert reuse["later_turns"] == pytest.approx(1 / 3)
    # one block: 7, touched last by each request, is found by the second and the third
    assert reuse["curve"]["hit_rate"][0] == pytest.approx(8 / 26)


def test_a_window_must_be_positive() -> None:
    trace = read_trace(shipped("azure-conv-2023.csv"))
    with pytest.raises(ConfigError, match=r"bin_s = 0.0 must be a number of seconds > 0"):
        describe(trace, bin_s=0.0)
