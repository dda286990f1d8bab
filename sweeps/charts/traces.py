"""The figures of ``sweeps workload``: one a question a trace answers.

``arrival-rate`` (requests per second in each window over the trace), ``burstiness`` (the
inter-arrival times' distribution against the exponential of Poisson arrivals of the same
rate), ``lengths`` (prompt and output tokens, log-binned), ``correlation`` (prompt against
output tokens, a seeded sample of at most ``SAMPLE`` requests) and, where the trace has prefix
hashes, ``prefix-reuse`` (the exact LRU hit rate against the cache's capacity). Each is built
from the trace and its ``sweeps.traces.describe`` document; ``write_trace_figures`` renders
each as HTML and SVG into a folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np

SAMPLE = 2000
"""Most requests the correlation figure draws (a seeded sample beyond) [request]."""

BINS = 40
"""Log-spaced bins of the lengths figure."""


def _data(rows: list[dict[str, Any]]) -> alt.Data:
    return alt.Data(values=rows)


def arrival_rate(trace: Any, doc: dict[str, Any]) -> alt.Chart:
    """Requests per second in each window of ``bin_s`` over the trace."""
    info = doc["arrivals"]
    width = info["bin_s"]
    rows = [{"t": i * width, "rate": n / width} for i, n in enumerate(info["per_bin"])]
    mean = info["rate"] or 0.0
    return alt.Chart(_data(rows), title=alt.Title(
        "Arrival rate over the trace",
        subtitle=f"requests per second in {width:g} s windows; mean {mean:.3g}/s, "
        f"peak {info['peak_rate']:.3g}/s",
    )).mark_line(interpolate="step-after").encode(
        x=alt.X("t:Q", title="time from the first request [s]"),
        y=alt.Y("rate:Q", title="arrival rate [request/s]"),
    )  # fmt: skip


def burstiness(trace: Any, doc: dict[str, Any]) -> alt.Chart:
    """The inter-arrival times' CDF in units of their mean, against Poisson's ``1 - e^-x``."""
    gaps = np.diff(trace.arrival)
    mean = gaps.mean() if gaps.size else 0.0
    scaled = np.sort(gaps / mean) if mean > 0 else np.zeros(0)
    keep = np.unique(np.linspace(0, max(scaled.size - 1, 0), min(scaled.size, 400)).astype(int))
    x = scaled[keep] if scaled.size else np.zeros(0)
    share = (keep + 1) / max(scaled.size, 1)
    rows = [{"x": float(a), "cdf": float(b), "of": "trace"} for a, b in zip(x, share, strict=True)]
    grid = np.linspace(0, float(x.max()) if x.size else 1.0, 100)
    rows += [{"x": float(a), "cdf": float(1 - np.exp(-a)), "of": "Poisson"} for a in grid]
    cv = doc["arrivals"]["interarrival_cv"]
    return alt.Chart(_data(rows), title=alt.Title(
        "Burstiness: inter-arrival times",
        subtitle=f"CDF of the gaps over their mean; CV {cv:.3g} (Poisson: 1)"
        if cv is not None else "fewer than two gaps",
    )).mark_line().encode(
        x=alt.X("x:Q", title="inter-arrival time / its mean [1]"),
        y=alt.Y("cdf:Q", title="share of gaps at most x [1]"),
        color=alt.Color("of:N", title=None),
    )  # fmt: skip


def lengths(trace: Any, doc: dict[str, Any]) -> alt.Chart:
    """Prompt and output tokens, log-binned."""
    rows = []
    for name, values in (("prompt", trace.prompt), ("output", trace.output)):
        edges = np.unique(np.geomspace(1, max(int(values.max()), 2) + 1, BINS + 1).round())
        counts, _ = np.histogram(values, bins=edges)
        rows += [
            {"lo": float(a), "hi": float(b), "share": float(n / values.size), "of": name}
            for a, b, n in zip(edges[:-1], edges[1:], counts, strict=True)
        ]
    p50 = doc["prompt_tokens"]["p50"], doc["output_tokens"]["p50"]
    return alt.Chart(_data(rows), title=alt.Title(
        "Request lengths",
        subtitle=f"median prompt {p50[0]:,.0f}, output {p50[1]:,.0f} tokens",
    )).mark_rect(opacity=0.6).encode(
        x=alt.X("lo:Q", scale=alt.Scale(type="log"), title="tokens [token]"),
        x2="hi:Q",
        y=alt.Y("share:Q", title="share of requests [1]", stack=None),
        color=alt.Color("of:N", title=None),
    )  # fmt: skip


def correlation(trace: Any, doc: dict[str, Any]) -> alt.Chart:
    """Prompt against output tokens, a seeded sample."""
    n = trace.requests
    pick = (
        np.sort(np.random.default_rng(0).choice(n, SAMPLE, replace=False)) if n > SAMPLE else None
    )
    prompt = trace.prompt if pick is None else trace.prompt[pick]
    output = trace.output if pick is None else trace.output[pick]
    rows = [{"i": int(a), "o": int(b)} for a, b in zip(prompt, output, strict=True)]
    c = doc["correlation"]
    said = ", ".join(f"{k} {v:.2f}" for k, v in c.items() if v is not None)
    return alt.Chart(_data(rows), title=alt.Title(
        "Prompt against output tokens",
        subtitle=f"correlation: {said or 'none (a constant length)'}; {len(rows):,} requests",
    )).mark_circle(size=8, opacity=0.4).encode(
        x=alt.X("i:Q", scale=alt.Scale(type="log"), title="prompt tokens [token]"),
        y=alt.Y("o:Q", scale=alt.Scale(type="log"), title="output tokens [token]"),
    )  # fmt: skip


def prefix_reuse(trace: Any, doc: dict[str, Any]) -> alt.Chart:
    """The exact LRU hit rate against the cache's capacity."""
    info = doc["reuse"]
    curve = info["curve"]
    size = info["block_tokens"]
    rows = [
        {"blocks": b, "tokens": b * size, "hit": h}
        for b, h in zip(curve["capacity_blocks"], curve["hit_rate"], strict=True)
    ]
    return alt.Chart(_data(rows), title=alt.Title(
        "Prefix reuse under LRU",
        subtitle=f"share of prompt tokens found cached; {size}-token blocks; unbounded cache "
        f"{info['unbounded_hit_rate']:.1%} at {info['working_set_blocks']:,} blocks",
    )).mark_line(point=True, interpolate="step-after").encode(
        x=alt.X("tokens:Q", scale=alt.Scale(type="log"), title="cache capacity [token]"),
        y=alt.Y("hit:Q", title="prefix hit rate [1]"),
    )  # fmt: skip


FIGURES: dict[str, Callable[[Any, dict[str, Any]], alt.Chart]] = {
    "arrival-rate": arrival_rate,
    "burstiness": burstiness,
    "lengths": lengths,
    "correlation": correlation,
    "prefix-reuse": prefix_reuse,
}
"""Every figure of a trace, by file name."""


def trace_specs(trace: Any, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Vega-Lite spec of each figure the trace has data for, by name."""
    wanted = [name for name in FIGURES if name != "prefix-reuse" or doc["reuse"] is not None]
    return {
        name: FIGURES[name](trace, doc).properties(width=480, height=280).to_dict()
        for name in wanted
    }


def write_trace_figures(trace: Any, doc: dict[str, Any], folder: Path) -> list[str]:
    """Each figure as ``NAME.svg`` and ``NAME.html`` in ``folder``, the pages loading one copy
    of the Vega bundle (offline, ``rendering.bundle_file``); the files written."""
    from sweeps.charts.rendering import bundle_file, html_page, javascript, render_spec

    script = bundle_file()
    (folder / script).parent.mkdir(parents=True, exist_ok=True)
    (folder / script).write_text(javascript(), "utf-8")
    written = [script]
    for name, spec in trace_specs(trace, doc).items():
        (folder / f"{name}.svg").write_bytes(render_spec(spec, ["svg"])["svg"])
        (folder / f"{name}.html").write_bytes(html_page(spec, script))
        written += [f"{name}.svg", f"{name}.html"]
    return written
