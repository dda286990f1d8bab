"""The simulator's workloads: seeded, round-tripped through CSV files, bad values named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sweeps.errors import ConfigError, MissingExtraError
from sweeps.studies.serving.simulate import (
    Arrivals,
    Lengths,
    closed_loop,
    draw_requests,
    kernel,
    poisson,
    read_lengths,
    read_trace,
    simulate,
    summarize,
    write_lengths,
    write_trace,
)

from .simulation import point

LOGNORMAL = Lengths("lognormal", cv=0.8)


def run(seed: int, scheduler: str = "chunked-greedy", **kw: object) -> dict[str, float]:
    arrivals = kw.pop("arrivals", poisson(20.0))
    tl = simulate(
        point(), scheduler, 32, arrivals=arrivals, requests=800, prompt=700, output=60,
        lengths=kw.pop("lengths", LOGNORMAL), budget=1024, seed=seed, **kw,
    )  # type: ignore[arg-type]  # fmt: skip
    return summarize(tl, ttft_slo_s=0.5, tpot_slo_s=0.02)


@pytest.mark.parametrize("scheduler", ["static", "serial-prefill", "batched-prefill",
                                       "chunked-paced", "chunked-greedy"])  # fmt: skip
def test_same_seed_same_numbers(scheduler: str) -> None:
    first, again, other = run(3, scheduler), run(3, scheduler), run(4, scheduler)
    assert first == again
    assert first != other


@pytest.mark.skipif(
    kernel.compiled() is None,
    reason="numba (the fast extra) is not installed: no compiled loop to compare with",
)
def test_same_seed_same_numbers_with_numba_or_without() -> None:
    kw = {"arrivals": poisson(20.0), "requests": 60, "prompt": 300, "output": 20}
    compiled = simulate(point(), "chunked-paced", 8, budget=256, use_numba=True, **kw)  # type: ignore[arg-type]
    plain = simulate(point(), "chunked-paced", 8, budget=256, use_numba=False, **kw)  # type: ignore[arg-type]
    np.testing.assert_array_equal(compiled.done, plain.done)
    np.testing.assert_array_equal(compiled.first, plain.first)


def test_lengths_have_their_means() -> None:
    rng = np.random.default_rng(0)
    for lengths in (Lengths("uniform"), LOGNORMAL):
        prompts, outputs = lengths.draw(1000, 200, 200_000, rng)
        assert prompts.min() >= 1
        assert outputs.min() >= 1
        assert prompts.mean() == pytest.approx(1000, rel=0.01)
        assert outputs.mean() == pytest.approx(200, rel=0.01)
    prompts, _ = LOGNORMAL.draw(1000, 200, 200_000, rng)
    assert prompts.std() / prompts.mean() == pytest.approx(0.8, rel=0.03)


def test_a_trace_round_trips(tmp_path: Path) -> None:
    drawn = draw_requests(poisson(20.0), LOGNORMAL, 700, 60, 800, seed=9)
    path = tmp_path / "trace.csv"
    write_trace(path, drawn)
    trace = read_trace(path)
    np.testing.assert_array_equal(trace.times, drawn.arrival)
    np.testing.assert_array_equal(trace.prompts, drawn.prompt)
    np.testing.assert_array_equal(trace.outputs, drawn.output)
    # the simulation of the trace is the simulation of the drawn requests
    assert run(9, arrivals=trace) == run(9)


def test_a_lengths_csv_round_trips(tmp_path: Path) -> None:
    prompts, outputs = np.array([10, 2000, 333]), np.array([1, 64, 7])
    path = tmp_path / "lengths.csv"
    write_lengths(path, prompts, outputs)
    lengths = read_lengths(path)
    np.testing.assert_array_equal(lengths.pairs, np.stack([prompts, outputs], 1))
    drawn = draw_requests(poisson(1.0), lengths, 1, 1, 1000, seed=2)
    assert set(zip(drawn.prompt.tolist(), drawn.output.tolist(), strict=True)) == {
        (10, 1), (2000, 64), (333, 7)
    }  # fmt: skip
    assert run(2, lengths=lengths) == run(2, lengths=read_lengths(path))


def test_a_closed_loop_keeps_its_clients_busy() -> None:
    tl = simulate(point(), "serial-prefill", 16, arrivals=closed_loop(8), requests=400,
                  prompt=256, output=32)  # fmt: skip
    # each client's next request arrives as its last one ends: never more than 8 in flight
    events = np.concatenate([np.stack([tl.arrival, np.ones(400)], 1),
                             np.stack([tl.done, -np.ones(400)], 1)])  # fmt: skip
    order = np.lexsort((events[:, 1], events[:, 0]))
    assert np.cumsum(events[order, 1]).max() == 8


def test_a_pool_splits_the_rate() -> None:
    one = summarize(simulate(point(), "serial-prefill", 16, arrivals=poisson(10.0),
                             requests=4000, prompt=512, output=32, seed=1))  # fmt: skip
    four = summarize(simulate(point(), "serial-prefill", 16, arrivals=poisson(40.0),
                              requests=16000, prompt=512, output=32, replicas=4, seed=1))  # fmt: skip
    assert four["requests_per_s"] == pytest.approx(4 * one["requests_per_s"], rel=0.05)
    assert four["utilization"] == pytest.approx(one["utilization"], rel=0.05)


def test_bad_values_are_named() -> None:
    with pytest.raises(ConfigError, match=r"arrival_rate = -1.0 must be > 0"):
        poisson(-1.0)
    with pytest.raises(ConfigError, match=r"concurrency = 0 must be a whole number >= 1"):
        closed_loop(0)
    with pytest.raises(ConfigError, match=r"cv = 0.0 must be a number > 0"):
        Lengths("lognormal", cv=0.0)
    with pytest.raises(ConfigError, match=r"kind = 'normal' is not a length distribution"):
        Lengths("normal")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"scheduler = 'fcfs' is not a named scheduler"):
        simulate(point(), "fcfs", 8, arrivals=poisson(1.0))


def test_bad_files_are_named(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0.5,10,2\n0.25,10,2\n")
    with pytest.raises(
        ConfigError, match=r"trace.csv: line 3: column 'arrival_s': '0.25' is before"
    ):
        read_trace(path)
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0.5,ten,2\n")
    with pytest.raises(ConfigError, match=r"line 2: column 'prompt_tokens': 'ten' is not a number"):
        read_trace(path)
    path.write_text("arrival_s,prompt\n0.5,10\n")
    with pytest.raises(ConfigError, match=r"no column 'prompt_tokens'"):
        read_trace(path)
    lengths = tmp_path / "lengths.csv"
    lengths.write_text("prompt_tokens,output_tokens\n10,0\n")
    with pytest.raises(
        ConfigError,
        match=r"lengths.csv: line 2: column 'output_tokens': 0 must be a whole number >= 1",
    ):
        read_lengths(lengths)
    with pytest.raises(ConfigError, match=r"missing.csv: cannot read the trace"):
        read_lengths(tmp_path / "missing.csv")
    with pytest.raises(ConfigError, match=r"row 1: prompt_tokens = 0 must be >= 1"):
        Arrivals("trace", times=np.zeros(1), prompts=np.zeros(1, np.int64), outputs=np.ones(1))


def test_use_numba_unset_is_compiled_where_numba_is_and_interpreted_where_not(monkeypatch) -> None:
    kw = {"arrivals": poisson(20.0), "requests": 40, "prompt": 300, "output": 20}
    compiled = kernel.compiled()
    assert kernel.replica_loop() is (compiled or kernel.loop)
    assert kernel.replica_loop(False) is kernel.loop
    auto = simulate(point(), "chunked-paced", 8, budget=256, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(kernel, "compiled", lambda: None)  # as without numba installed
    assert kernel.replica_loop() is kernel.loop
    plain = simulate(point(), "chunked-paced", 8, budget=256, **kw)  # type: ignore[arg-type]
    np.testing.assert_array_equal(auto.done, plain.done)


def test_use_numba_true_without_numba_names_the_fast_extra(monkeypatch) -> None:
    monkeypatch.setattr(kernel, "compiled", lambda: None)  # as without numba installed
    drawn = []
    monkeypatch.setattr(
        "sweeps.studies.serving.simulate.run.draw_requests", lambda *a, **k: drawn.append(a) or None
    )
    with pytest.raises(MissingExtraError, match=r"use_numba=True: .*numba.*fast extra: pip "
                       r"install 'roofline-sweeps\[fast\]'"):  # fmt: skip
        simulate(point(), "chunked-paced", 8, budget=256, use_numba=True,
                 arrivals=poisson(20.0), requests=40)  # type: ignore[arg-type]  # fmt: skip
    assert drawn == []  # said before any work
    assert isinstance(MissingExtraError("x"), ImportError)


def test_a_trace_replays_at_a_rate_scale(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,2\n3,10,2\n")
    np.testing.assert_array_equal(read_trace(path, rate_scale=2.0).times, [0.0, 1.5])
    with pytest.raises(ConfigError, match=r"rate_scale = 0.0 must be a number > 0"):
        read_trace(path, rate_scale=0.0)
