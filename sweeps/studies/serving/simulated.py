"""``simulated.parquet``: the serving study's post-step, the cheapest plans simulated.

Where ``[serving] simulate`` is above 0, each cheapest one-device plan of the pools table is
simulated (``simulate.plans``); one row per plan, its columns declared once here
(``SIMULATED``, units and descriptions into the file's metadata as for every table). The
export runs and writes it (``sweeps.export.post_steps``); the TTFT and TPOT of every request
feed the CDF charts (``sweeps.charts.simulated``).
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.base import Variable
from sweeps.studies.base import PostStep

_V = Variable
SIMULATED: tuple[Variable, ...] = (
    _V("model", "-", "Model id", "str"),
    _V("kv_heads", "head", "Key/value heads in effect", "int64"),
    _V("kv_dtype", "-", "KV-cache number format", "str"),
    _V("weight_dtype", "-", "Weight number format", "str"),
    _V("prompt_tokens", "token", "Mean prompt tokens per request, I", "int64"),
    _V("output_tokens", "token", "Mean output tokens per request, O", "int64"),
    _V(
        "arrival_rate",
        "request/s",
        "Poisson arrival rate of the workload (null: a closed loop)",
        "float64",
    ),
    _V(
        "concurrency",
        "request",
        "Closed-loop clients of the workload (null: Poisson arrivals)",
        "int64",
    ),
    _V(
        "spec_acceptance",
        "1",
        "Draft acceptance the workload meets (null: no speculation axes)",
        "float64",
    ),
    _V(
        "prefix_hit_rate",
        "1",
        "Prefix hit rate the workload meets (null: no prefix axes)",
        "float64",
    ),
    _V("hardware", "-", "Device of the plan", "str"),
    _V("tp", "device", "Tensor-parallel devices of one replica (a replica: tp x ep x pp)", "int64"),
    _V("ep", "device", "Expert-parallel ranks of the plan (null: no parallel axes)", "int64"),
    _V("dp_attention", "-", "Data-parallel attention of the plan (null: no parallel axes)", "str"),
    _V("pp", "device", "Pipeline stages of the plan (null: no parallel axes)", "int64"),
    _V("batch", "sequence", "Slots of one replica, B", "int64"),
    _V("replicas", "replica", "Replicas of the plan", "int64"),
    _V("scheduler", "-", "Named scheduler simulated (docs/serving.md section 3)", "str"),
    _V("spec_tokens", "token", "Draft tokens of the plan, k (null: no speculation axes)", "int64"),
    _V("spec_draft", "-", "Draft of the plan (null: no speculation axes)", "str"),
    _V("kv_tier", "-", "Tier of the plan's cached prefixes (null: no prefix axes)", "str"),
    _V("requests", "request", "Requests simulated", "int64"),
    _V("seed", "-", "Seed of the arrivals and lengths", "int64"),
    *(
        _V(f"{name}_{stat}_s", "s", f"{label}, {what} (simulated)")
        for name, label in (
            ("ttft", "Time to first token"),
            ("tpot", "Time per output token after the first (null: O = 1)"),
            ("latency", "End-to-end latency"),
        )
        for stat, what in (
            ("mean", "mean"),
            ("mean_ci", "half-width of the mean's 95 % confidence interval (batch means)"),
            ("p50", "median"),
            ("p90", "90th percentile"),
            ("p99", "99th percentile"),
        )
    ),
    _V("slo_attainment", "1", "Share of requests meeting both the TTFT and TPOT objectives"),
    _V("requests_per_s", "request/s", "Completed requests per second, steady window"),
    _V("output_tokens_per_s", "token/s", "Output tokens per second of the plan, steady window"),
    _V("goodput_requests_per_s", "request/s", "Requests per second meeting both objectives"),
    _V("utilization", "1", "Share of the replicas' time spent running steps"),
    _V("mean_queue_length", "request", "Mean prompts waiting per replica (Little's law)"),
)
"""The columns of ``simulated.parquet``, each declared once."""


def wants_simulation(sweep: Any) -> bool:
    """Whether ``sweep`` asks for simulated plans."""
    serving = sweep.studies.get("serving")
    return serving is not None and serving.simulate > 0


def _lengths(sweep: Any) -> Any:
    from sweeps.studies.serving.simulate.plans import lengths_of

    return lengths_of(sweep)


def _simulated(pools: Any, sweep: Any, lengths: Any, inputs_at: Any) -> list[Any]:
    from sweeps.studies.serving.simulate.plans import simulate_plans

    return simulate_plans(pools, sweep, inputs_at, lengths)


STEP = PostStep("simulated", "pools", SIMULATED, wants_simulation, _lengths, _simulated)
"""``simulated.parquet`` from the pools table."""
