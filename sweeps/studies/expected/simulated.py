"""``simulated_expected.parquet``: the expected plans replayed by the simulator on expected steps.

Where ``[serving] simulate`` is above 0 and the sweep sets an engine, the plan of each workload,
load and engine with the fewest devices by expectation (``pools_expected``: then the lowest
cost; one-pool plans only, as the simulator replays one pool) is simulated as the serving
study simulates its cheapest plans (``sweeps.studies.serving.simulate``: its replicas, batch
and scheduler, Poisson arrivals at the rate, a closed loop of the clients or a ``[workload]``
trace, ``[serving] lengths``, seed 0), each step priced by the expected step costs of its
configuration (``steps.ExpectedSteps.step_costs``) instead of the roofline, at the plan's
parallel layout where the sweep has the axes (a whole-prompt scheduler's prefill steps with
their ``crossing``). One row per plan: the ``simulated.parquet`` columns, the engine and the
layout. With speculation or prefix hits each step prices them on expected steps
(``_techniques``), the plan's ``k``, draft and tier its own, one plan per workload, load,
acceptance, hit rate and engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps.engine.base import Variable
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.studies.base import PostStep
from sweeps.studies.expected.priced import prompts_a_step
from sweeps.studies.expected.served import TECHNIQUES
from sweeps.studies.expected.step import Config
from sweeps.studies.expected.steps import expected_steps, expected_verify
from sweeps.studies.serving.simulated import SIMULATED, wants_simulation

ENGINE = Variable("engine", "-", "Serving engine of the measured kernels (engine-version)", "str")
SIMULATED_EXPECTED: tuple[Variable, ...] = (*SIMULATED[:4], ENGINE, *SIMULATED[4:])
"""The columns of ``simulated_expected.parquet``: ``simulated.parquet``'s (the plan's parallel
layout among them) and the engine."""
WORKLOAD = ("model", "kv_heads", "kv_dtype", "weight_dtype", "prompt_tokens", "output_tokens")
LOADS = ("arrival_rate", "concurrency")


def config_at(p: Any) -> Config:
    """The configuration of the grid's inputs ``p`` at one point (``point_inputs``), on its
    parallel layout (``ep``, data-parallel attention, ``pp``; none without the axes)."""
    peak = float(p["peak_flops"])
    ep = int(p["_ep"])
    return Config(
        p["_model_records"], p["_device_records"], int(p["tp"]), int(p["kv_heads_count"]),
        str(p["kv_dtype"]), str(p["weight_dtype"]), float(p["kv_bytes"]),
        float(p["weight_bytes_per_param"]), peak, peak / float(p["_attention_ratio"]),
        p["_engine_choices"], ep, ep == 1 or bool(p["_dp"] == 1.0), int(p["_pp"]),
    )  # fmt: skip


def fewest_plans(expected: Any) -> Any:
    """The one-pool plan with the fewest expected devices, then the lowest cost, of each
    workload, load and engine of the ``pools_expected`` frame (the simulator replays one pool:
    a disaggregated plan is not replayed, as in ``simulated.parquet``)."""
    import polars as pl

    one_pool = pl.col("pool_mode").cast(pl.String) != "disaggregated"
    planned = expected.filter(one_pool & pl.col("expected_devices").is_not_null())
    ranked = planned.sort(
        ["expected_devices", "expected_pools_cost_per_million_output_tokens_usd"],
        nulls_last=True,
        maintain_order=True,
    )
    scenario = (c for c in ("spec_acceptance", "prefix_hit_rate") if c in expected.columns)
    keys = [*WORKLOAD, *(c for c in LOADS if c in expected.columns), *scenario, "engine"]
    return ranked.group_by(keys, maintain_order=True).first().sort(keys, maintain_order=True)


def _plan(found: dict[str, Any]) -> dict[str, Any]:
    from sweeps.studies.serving.simulate.plans import _plain

    return {
        **{k: found.get(k) for k in (*WORKLOAD, *LOADS)},
        **{k: str(found[k]) for k in ("model", "kv_dtype", "weight_dtype", "engine")},
        "hardware": str(found["hardware"]),
        "tp": int(found["tp"]),
        "batch": int(found["expected_decode_batch"]),
        "replicas": int(found["expected_replicas"]),
        "scheduler": str(found["pool_mode"]),
        **{d: _plain(found[d]) for d in PARALLEL_DIMS if d in found},  # its layout
        **{d: _plain(found[d]) for d in TECHNIQUES if d in found},  # its techniques
    }


def _replayed(sweep: Any, plan: dict[str, Any], lengths: Any, inputs_at: Any) -> Any:
    """One plan simulated on its expected step costs."""
    from sweeps.schedulers import BY_NAME
    from sweeps.studies import BY_NAME as STUDY
    from sweeps.studies.serving.simulate import closed_loop, draw_requests, poisson, simulate
    from sweeps.studies.serving.simulate.plans import SEED, Simulated, point_of
    from sweeps.studies.serving.simulate.stats import row_values, summarize
    from sweeps.studies.serving.trace import trace_load

    serving = sweep.studies["serving"]
    point = point_of(sweep, plan)
    engines = STUDY["expected"].axis("engine").labels(sweep)
    point["engine"] = [str(e) for e in engines].index(plan["engine"])
    clients, load = plan.get("concurrency"), trace_load(sweep, plan.get("arrival_rate"))
    arrivals = poisson(plan["arrival_rate"]) if clients is None else closed_loop(clients)
    if load is not None:  # [workload]: the trace itself, at its time scale, as simulated
        arrivals = load.arrivals(serving.simulate)
    drawn = draw_requests(
        arrivals, lengths, plan["prompt_tokens"], plan["output_tokens"], serving.simulate, SEED
    )
    batch = plan["batch"]
    context = int(np.max(drawn.prompt + drawn.output))
    tokens = int(max(batch * (int(np.max(drawn.prompt)) + 1), serving.chunk_tokens))
    count = prompts_a_step(plan["scheduler"], batch, float(np.mean(drawn.output)))
    p = inputs_at(sweep, point)
    steps = expected_steps(config_at(p), batch, context, tokens, (count,))
    chunked = BY_NAME[plan["scheduler"]].chunked
    costs = steps.step_costs(context, tokens, int(p["_devices"]), count, not chunked)
    costs, extra = _techniques(p, costs, batch, context, tokens)
    timeline = simulate(
        costs, plan["scheduler"], batch,
        arrivals=arrivals, requests=serving.simulate, prompt=plan["prompt_tokens"],
        output=plan["output_tokens"], lengths=lengths,
        budget=serving.chunk_tokens if chunked else 0, replicas=plan["replicas"], seed=SEED,
        extra=extra,
    )  # fmt: skip
    stats = summarize(timeline, serving.ttft_slo_s, serving.tpot_slo_s)
    row = {
        **plan,
        "seed": SEED,
        **row_values(stats),
        "requests": int(stats["requests"]),
    }
    return Simulated(row, timeline)


def _techniques(p: Any, costs: Any, batch: int, context: int, tokens: int) -> tuple[Any, Any]:
    """The point's speculation and prefix hits on expected steps (``simulate.speculation``'s
    ``Techniques``, their draws and cached tokens the bound's): a verify step of ``k + 1``
    rows a slot, each row's attention the expected one at its batch (``steps.Verify``, the
    body ``fixed[T]`` of the step's rows as a decode step's); the draft ``k`` passes, each a
    slot's share of the expected draft of ``B`` slots at its context (exact where all ``B``
    draft); the prefixes' reload from their tier over its bandwidth (the costs' cache bytes
    the point's). None where the point has neither (plain)."""
    import dataclasses

    from sweeps.engine.steps import cache_bytes
    from sweeps.studies.serving.simulate.speculation import techniques

    bound = techniques(p, context, batch)
    if bound.rows == 1 and bound.hit_rate == 0:
        return costs, None
    k = bound.rows - 1
    at = np.arange(context + k + 1, dtype=np.float64)
    own = np.maximum(at, 1.0)
    if k > 0:
        verify = expected_verify(
            config_at(p), batch, k, p["_draft_records"], context + k, tokens + batch * (k + 1)
        )
        rows = bound.rows * verify.per_row(own[: context + 1])
        drafted = verify.draft(batch, np.minimum(own, context + k)) / (k * batch)
    else:
        rows, drafted = costs.decode_flops, np.zeros(at.size)
    passes = k if np.any(drafted > 0) else 0
    extra = dataclasses.replace(
        bound, verify_flops=np.ascontiguousarray(rows), verify_cache=np.zeros(context + 1),
        draft_passes=passes, draft_shift=0, draft_flops=np.ascontiguousarray(drafted),
        draft_cache=np.zeros(at.size), draft_weights=np.zeros(batch + 1),
    )  # fmt: skip
    cache = np.arange(context + 1, dtype=np.float64)
    reload = np.ascontiguousarray(cache_bytes(p, cache), dtype=np.float64)
    return dataclasses.replace(costs, cache=reload), extra


def _run(expected: Any, sweep: Any, lengths: Any, inputs_at: Any) -> list[Any]:
    plans = fewest_plans(expected)
    rows = plans.iter_rows(named=True)
    return [_replayed(sweep, _plan(found), lengths, inputs_at) for found in rows]


def _wanted(sweep: Any) -> bool:
    from sweeps.studies.expected.served import wanted

    return wants_simulation(sweep) and wanted(sweep)


def _lengths(sweep: Any) -> Any:
    from sweeps.studies.serving.simulate.plans import lengths_of

    return lengths_of(sweep)


STEP = PostStep("simulated_expected", "pools_expected", SIMULATED_EXPECTED, _wanted, _lengths, _run)
"""``simulated_expected.parquet`` from the pools_expected table."""
