"""TPOT percentiles of the named schedulers, saturated: serial- and batched-prefill's spread
from the slot groups against the simulator's requests; the others' one TPOT (no spread) in the
pools table."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import sweeps
from sweeps import physics
from sweeps.studies.serving.simulate import backlog, simulate
from tests.simulation import costs, decode_step, groups, point, prefill_step

PROMPT = 512


@pytest.mark.parametrize(
    ("scheduler", "batch", "output"),
    [
        ("serial-prefill", 64, 17),  # groups of 4: a spread
        ("serial-prefill", 40, 17),  # groups of 3 and 2
        ("batched-prefill", 40, 17),  # two group sizes: two TPOTs
        ("serial-prefill", 16, 64),  # B <= O - 1: one TPOT
    ],
)
def test_tpot_percentiles_against_the_simulator(scheduler: str, batch: int, output: int) -> None:
    c, n = costs(), 4000
    tl = simulate(
        point(), scheduler, batch, arrivals=backlog(n, stagger=batch), requests=n,
        prompt=PROMPT, output=output,
    )  # fmt: skip
    tpot = tl.tpot[n // 5 : -n // 5]  # the steady window
    t_ss = decode_step(c, batch, PROMPT + output // 2)
    alone = prefill_step(c, 1, PROMPT)
    q = batch // (output - 1)
    large, small = prefill_step(c, q + 1, PROMPT), prefill_step(c, q, PROMPT) if q else 0.0
    total = sum(prefill_step(c, m, PROMPT) for m in groups(batch, output))
    got = []
    for p in (0.5, 0.9, 0.99):
        if scheduler == "serial-prefill":
            model = physics.serial_prefill_tpot_quantile(p, batch, output, t_ss, alone)
        else:
            model = physics.batched_prefill_tpot_quantile(
                p, batch, output, t_ss, total, large, small
            )
        want = np.quantile(tpot, p, method="inverted_cdf")
        assert float(model) == pytest.approx(want, rel=1e-4), p
        got.append(float(model))
    assert got == sorted(got)
    spread = batch > output - 1
    assert (got[0] < got[-1]) == spread


def test_the_pools_table_says_where_tpot_has_no_spread() -> None:
    ds = sweeps.run(
        {
            "sweep": {"name": "tpot-spread"},
            "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"], "batch": [64]},
            "serving": {
                "prompt_tokens": [PROMPT],
                "output_tokens": [17],
                "arrival_rate": [5.0],
                "ttft_slo_s": 5.0,
                "tpot_slo_s": 1.0,
            },
        }
    )
    rows = {str(r["pool_mode"]): r for r in sweeps.export.frames(ds)["pools"].iter_rows(named=True)}
    for mode in ("serial-prefill", "batched-prefill"):
        r = rows[mode]
        assert r["tpot_p50_s"] <= r["tpot_s"] <= r["tpot_p99_s"]
    assert rows["serial-prefill"]["tpot_p50_s"] < rows["serial-prefill"]["tpot_p90_s"]
    for mode in ("chunked-paced", "chunked-greedy", "disaggregated"):
        r = rows[mode]
        assert r["tpot_p50_s"] == r["tpot_p90_s"] == r["tpot_p99_s"] == r["tpot_s"]
    serving = sweeps.export.frames(ds)["serving"].filter(pl.col("mode") == "serial-prefill")
    assert rows["serial-prefill"]["tpot_s"] == serving["tpot_s"][0]
