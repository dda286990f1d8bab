"""Shared helpers of the simulator's tests: one replica's step costs from a sweep, and the
closed forms of docs/serving.md written out from the per-step bounds."""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from sweeps.config import parse_config
from sweeps.grid.scalar import point_inputs
from sweeps.studies.serving.simulate import StepCosts, step_costs, step_time


def config_text(model: str = "llama-3-8b", hardware: str = "h100-sxm", tp: int = 1) -> str:
    """A one-point sweep (bf16 weights and KV, attention FLOPs on) of ``model`` on ``hardware``."""
    return f"""
[sweep]
name = "simulate-test"
[axes]
model = ["{model}"]
hardware = ["{hardware}"]
tp = [{tp}]
batch = [1]
context = [1024]
kv_heads = ["native"]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
[options]
attention_flops = true
"""


@cache
def point(model: str = "llama-3-8b", hardware: str = "h100-sxm", tp: int = 1):  # type: ignore[no-untyped-def]
    """The grid's inputs at the one point of ``config_text``."""
    return point_inputs(parse_config(config_text(model, hardware, tp)))


@cache
def costs(
    model: str = "llama-3-8b", hardware: str = "h100-sxm", tp: int = 1, context: int = 8192,
    tokens: int = 800_000,
) -> StepCosts:  # fmt: skip
    """Step-cost tables large enough for the tests' requests: the largest budget a test draws
    is test_simulate_closed_forms's 3.0 x (96 + 96 x 2500 / 1) = 720,288 tokens (600,000
    was read past by that draw) [token]."""
    return step_costs(point(model, hardware, tp), context, tokens)


def decode_step(c: StepCosts, batch: float, context: int) -> float:
    """``t_d(B, S)`` from the tables, ``B`` decodes at one context [s]."""
    flops = batch * c.decode_flops[context]
    nbytes = c.weights[round(batch)] + batch * c.cache[context]
    return float(max(flops / c.peak, nbytes / c.bandwidth))


def prefill_step(c: StepCosts, batch: int, prompt: int) -> float:
    """``t_p(B, I)``: ``B`` whole prompts in one step [s]."""
    return step_time(c, [], [(0, prompt, prompt)] * batch)


def groups(batch: int, output: int) -> list[int]:
    """Sizes of the groups in which ``B`` slots free over one cycle of ``O - 1`` steps."""
    steps = output - 1
    q, r = divmod(batch, steps)
    return [q + 1] * r + [q] * (steps - r) if q > 0 else [1] * batch


def static_batch(c: StepCosts, batch: int, prompt: int, output: int) -> tuple[float, float]:
    """A static batch (docs/serving.md section 1): ``B / (t_p(B, I) + sum_j t_d(B, I + j))``
    requests/s and TPOT ``sum_j t_d / (O - 1)``."""
    decode = sum(decode_step(c, batch, prompt + j) for j in range(1, output))
    return batch / (prefill_step(c, batch, prompt) + decode), decode / (output - 1)


def serial_prefill(c: StepCosts, batch: int, prompt: int, output: int) -> tuple[float, float]:
    """``serial-prefill`` saturated: requests/s and mean TPOT (docs/serving.md section 3)."""
    t_ss = decode_step(c, batch, prompt + output // 2)
    alone = prefill_step(c, 1, prompt)
    rate = 1 / ((output - 1) * t_ss / batch + alone)
    sizes = groups(batch, output)
    stalls = batch - 0.5 - sum(m * m for m in sizes) / (2 * batch)
    return rate, t_ss + stalls * alone / (output - 1)


def batched_prefill(c: StepCosts, batch: int, prompt: int, output: int) -> tuple[float, float]:
    """``batched-prefill`` saturated: ``r = B / ((O - 1) t_ss + sum_groups t_p(m, I))``; TPOT
    derived the same way: a request waits, over its life, for the prefills of the other groups
    (its own group's prefill is before its first token) [request/s, s]."""
    t_ss = decode_step(c, batch, prompt + output // 2)
    sizes = groups(batch, output)
    prefills = [prefill_step(c, m, prompt) for m in sizes]
    rate = batch / ((output - 1) * t_ss + sum(prefills))
    # a request of group g sees every other group's prefill once over its O - 1 steps
    seen = sum(m * (sum(prefills) - p) for m, p in zip(sizes, prefills, strict=True)) / batch
    return rate, t_ss + seen / (output - 1)


def chunked_paced(
    c: StepCosts, batch: int, prompt: int, output: int, budget: int
) -> tuple[float, float, float]:
    """``chunked-paced`` saturated: requests/s, TPOT = t_mix, and the chunk ``c``."""
    limited = batch + batch * prompt / (output - 1) > budget
    decoders = budget * (output - 1) / (prompt + output - 1) if limited else batch
    chunk = budget - decoders if limited else batch * prompt / (output - 1)
    s_mean = prompt + output // 2
    flops = decoders * c.decode_flops[s_mean] + chunk / prompt * (
        c.token_flops * prompt + c.pair_flops * c.pairs[prompt] + c.logit_flops
    )
    weights = np.interp(decoders + chunk, np.arange(c.weights.size), c.weights)
    prefix = np.interp(prompt / 2, np.arange(c.cache.size), c.cache)
    writes = chunk * c.cache[prompt] / prompt
    nbytes = weights + decoders * c.cache[s_mean] + prefix + writes
    t_mix = max(flops / c.peak, nbytes / c.bandwidth)
    return decoders / ((output - 1) * t_mix), t_mix, chunk


def request_bound(c: StepCosts, batch: int, prompt: int, output: int, budget: float) -> float:
    """The bound over every scheduler (docs/serving.md section 2): the least time a request
    costs a replica, ``max(F_req / peak, (weights + Q_req) / bandwidth)`` [s]. ``budget`` is
    the largest step's tokens (``B I`` without chunking)."""
    contexts = np.arange(prompt + 1, prompt + output)
    flops = (c.token_flops * prompt + c.pair_flops * c.pairs[prompt] + c.logit_flops) + float(
        np.sum(c.decode_flops[contexts])
    )
    q_req = c.cache[prompt] + float(np.sum(c.cache[contexts]))
    w = c.weights
    # the most tokens a step beside B decodes may carry: a paced scheduler prefills ahead, so a
    # step holds up to its whole budget of prompt tokens, more than B I where tau > B I (the
    # chord over fewer tokens is steeper and not a bound: hypothesis found B = 1, I = 16, tau =
    # 22 on Mixtral beat it by 3.4 %); sweeps.physics.weights_per_request takes this chunk too
    chunk = int(max(budget, batch * prompt))
    first = (output - 1) / batch * w[batch] + prompt * (w[batch + chunk] - w[batch]) / chunk
    tau = int(budget)
    steps = max((output - 1) / batch, (prompt + output - 1) / tau)
    second = steps * w[0] + (prompt + output - 1) * (w[tau] - w[0]) / tau
    return max(flops / c.peak, (max(first, second) + q_req) / c.bandwidth)


def md1_wait_cdf(t: float, rate: float, service: float) -> float:
    """P(W <= t) of the M/D/1 queue (Erlang's formula, summed with math.fsum) [1]."""
    rho = rate * service
    terms = [
        (rate * (k * service - t)) ** k / math.factorial(k) * math.exp(-rate * (k * service - t))
        for k in range(math.floor(t / service) + 1)
    ]
    return (1 - rho) * math.fsum(terms)


def md1_wait_quantile(q: float, rate: float, service: float) -> float:
    """The ``q`` quantile of the M/D/1 wait, by bisection on ``md1_wait_cdf`` [s]."""
    if md1_wait_cdf(0.0, rate, service) >= q:
        return 0.0
    lo, hi = 0.0, service
    while md1_wait_cdf(hi, rate, service) < q:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if md1_wait_cdf(mid, rate, service) < q else (lo, mid)
    return (lo + hi) / 2
