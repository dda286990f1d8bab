"""``sweeps bench``'s traces line on a small generated trace: its fields and its line."""

from __future__ import annotations

import numpy as np

from sweeps.bench.traces import format_traces, generated, measure_traces
from sweeps.traces import hit_curve


def test_the_generated_trace_has_reuse_and_is_seeded() -> None:
    one, again = generated(2000), generated(2000)
    np.testing.assert_array_equal(one.hashes, again.hashes)
    assert one.block_tokens_of().sum() == one.prompt.sum()
    assert 0 < hit_curve(one).unbounded_rate < 1


def test_the_line_says_the_figures() -> None:
    result = measure_traces(requests=2000)
    assert result["requests"] == 2000
    assert result["summary_budget_s"] == 0.006
    line = format_traces(result)
    assert line.startswith("traces: 2,000 generated requests read in ")
    assert "LRU curve of" in line
