"""The simulator's benchmark line: simulated requests per second on one core.

docs/serving.md section 7 and issue 19: 1e5 requests of ``I = 2048``, ``O = 256`` at
``B = 256`` (Llama-3 8B on an H100, bf16, attention FLOPs on), saturated, in under a second on
one core, for each named scheduler (token budget 4096 for the chunked ones); the same loop
interpreted (no numba) on a few thousand requests gives the ratio numba buys. Each timing is
the best of a few calls; the compiled loop is warmed up first, so compilation is not timed.
"""

from __future__ import annotations

from typing import Any

BUDGET_S = 1.0
"""What 1e5 simulated requests may take on one core [s]."""

CONFIG = """
[sweep]
name = "bench-simulate"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [256]
context = [2176]
kv_heads = ["native"]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
[options]
attention_flops = true
"""
BATCH, PROMPT, OUTPUT, TAU = 256, 2048, 256, 4096


def _time(point: Any, scheduler: str, requests: int, use_numba: bool | None, rounds: int) -> float:
    """Best of ``rounds`` simulations of ``requests`` saturated requests [s]."""
    from sweeps.bench.timing import timed
    from sweeps.studies.serving.simulate import backlog, simulate

    def once() -> Any:
        return simulate(
            point, scheduler, BATCH, arrivals=backlog(requests, BATCH), requests=requests,
            prompt=PROMPT, output=OUTPUT, budget=TAU, use_numba=use_numba,
        )  # fmt: skip

    return min(timed(once)[0] for _ in range(max(rounds, 1)))


def measure_simulated(
    requests: int = 100_000, interpreted: int = 2_000, rounds: int = 3
) -> dict[str, Any]:
    """Time every named scheduler on ``requests`` requests compiled (interpreted where numba
    is not installed: ``numba`` says which), and the slowest of them on ``interpreted``
    requests without numba.

    Returns ``requests`` [1], ``seconds`` per scheduler [s], ``requests_per_s`` per scheduler
    [1/s], ``slowest`` (its name), ``interpreted_requests_per_s`` [1/s], ``numba_speedup``
    [1], ``budget_s`` [s] (scaled to ``requests``) and ``within_budget``.
    """
    from sweeps.config import parse_config
    from sweeps.grid.scalar import point_inputs
    from sweeps.studies.serving.simulate import SCHEDULERS
    from sweeps.studies.serving.simulate.kernel import compiled

    point = point_inputs(parse_config(CONFIG, "<bench>"))
    _time(point, "chunked-paced", 2 * BATCH, None, 1)  # compile (or load) the loop
    # compiled where numba is installed (the fast extra), else the interpreted loop, said so
    seconds = {s: _time(point, s, requests, None, rounds) for s in SCHEDULERS}
    slowest = max(seconds, key=seconds.__getitem__)
    plain = _time(point, slowest, interpreted, False, 1)
    rate = {s: requests / t for s, t in seconds.items()}
    budget = BUDGET_S * requests / 100_000
    return {
        "requests": requests,
        "seconds": seconds,
        "requests_per_s": rate,
        "slowest": slowest,
        "interpreted_requests_per_s": interpreted / plain,
        "numba_speedup": rate[slowest] * plain / interpreted,
        "budget_s": budget,
        "within_budget": bool(seconds[slowest] <= budget),
        "numba": compiled() is not None,
    }


def format_simulated(result: dict[str, Any]) -> str:
    """The line ``sweeps bench`` prints for ``measure_simulated``."""
    each = ", ".join(f"{s} {t:.3f} s" for s, t in result["seconds"].items())
    how = "" if result.get("numba", True) else " (numba not installed: interpreted)"
    return (
        f"simulator{how}: {result['requests']:,} saturated requests (I {PROMPT}, O {OUTPUT}, "
        f"B {BATCH}) per scheduler: {each}; slowest {result['slowest']} "
        f"{result['requests_per_s'][result['slowest']] / 1e3:,.0f} k requests/s; "
        f"without numba {result['interpreted_requests_per_s']:,.0f} requests/s "
        f"({result['numba_speedup']:,.0f}x slower); budget {result['budget_s']:.2f} s "
        f"{'met' if result['within_budget'] else 'MISSED'}"
    )
