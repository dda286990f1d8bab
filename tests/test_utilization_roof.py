"""``utilization`` is over the step's own roof: 0..1 by construction (issue 44 item 3).

A step's GEMMs run at the weight format's peak and its attention at the KV format's; where
that is faster (fp8 KV beside bf16 weights) the step attains more than the GEMM peak, and a
share of the GEMM peak reached 1.55 in four shipped studies. The roof is now the formats'
peaks weighted by their FLOPs (the step's FLOPs over their split compute time), and the
roofline figure draws no point above the roof its caption names.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sweeps.charts import roofline_chart
from sweeps.charts.data import select
from sweeps.charts.roofline import compute_dtype, phase_points
from sweeps.config import parse_config
from sweeps.grid import build_grid

GRID = """
[sweep]
name = "utilization"
[axes]
model = ["{model}"]
hardware = ["{hardware}"]
batch = [1, 64, 1024, 8192]
context = [{context}]
prompt = [128, 8192]
weight_dtype = ["{weights}"]
kv_dtype = ["{kv}"]
{spec}
[options]
attention_flops = true
"""


@settings(
    max_examples=10,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    model=st.sampled_from(["llama-3-8b", "deepseek-v3", "gpt-oss-20b", "mixtral-8x7b"]),
    hardware=st.sampled_from(["h100-sxm", "b200", "mi300x"]),
    context=st.sampled_from([512, 32768, 131072]),
    weights=st.sampled_from(["bf16", "fp8"]),
    kv=st.sampled_from(["fp8", "bf16"]),
    spec=st.sampled_from(
        ["", 'spec_tokens = [0, 3]\nspec_acceptance = [0.8]\nspec_draft = ["ngram"]']
    ),
)
def test_utilization_is_a_share_of_the_steps_own_roof(
    model: str, hardware: str, context: int, weights: str, kv: str, spec: str
) -> None:
    text = GRID.format(
        model=model, hardware=hardware, context=context, weights=weights, kv=kv, spec=spec
    )
    ds = build_grid(parse_config(text, "<utilization>"))
    for name in ("utilization", "prefill_utilization", "verify_utilization"):
        if name in ds:
            values = ds[name].values
            values = values[np.isfinite(values)]
            assert values.size, name
            assert (values >= 0).all(), name
            assert (values <= 1 + 1e-12).all(), name


FP8_KV = GRID.format(
    model="llama-3-8b", hardware="h100-sxm", context=131072, weights="bf16", kv="fp8", spec=""
)


def test_the_roofline_draws_each_point_against_its_own_roof() -> None:
    """Points are where they are (1.07x above the bf16 roof here: not pulled down onto it),
    each at most on its own roof, and the own roofs above the roof drawn are drawn, dashed,
    at each such point (issue 46: the fp8-KV prefill points sat 1.38x above the roof the
    caption named)."""
    ds = build_grid(parse_config(FP8_KV, "<utilization>"))
    attained = max(float(ds["attainable_flops"].max()), float(ds["prefill_attainable_flops"].max()))
    assert attained > float(ds["peak_flops_bf16"].max())  # above the GEMM format's peak
    assert float(ds["prefill_utilization"].max()) <= 1.0
    sel = select(ds)
    points, _ = phase_points(sel)
    roof = float(np.atleast_1d(sel.ds[f"peak_flops_{compute_dtype(sel)}"].values)[0])
    assert points["attainable_flops"].max() == attained  # drawn where they are
    above = points.filter(pl.col("attainable_flops") > roof * (1 + 1e-9))
    assert above.height
    assert above["above"].all()  # each point above the roof named has its own roof drawn
    assert (points["attainable_flops"] <= points["own_roof"] * (1 + 1e-12)).all()
    bandwidth = float(np.atleast_1d(sel.ds["bandwidth"].values)[0])
    slope = points["arithmetic_intensity"] * bandwidth  # no efficiencies in this sweep
    own = (points["attainable_flops"] / points["own_roof"]).to_numpy()
    memory_bound = (points["attainable_flops"] / slope).to_numpy() > 1 - 1e-12
    assert np.allclose(own[~memory_bound], 1.0)  # compute-bound: on their own roof
    spec = roofline_chart(ds).to_dict()
    dashes = [layer for layer in spec["layer"] if layer["mark"].get("strokeDash") == [2, 2]]
    drawn = spec["datasets"][dashes[0]["data"]["name"]]
    assert sorted(r["attainable_flops"] for r in drawn) == sorted(above["own_roof"].to_list())
    caption = " ".join(spec["title"]["subtitle"])
    assert "a point's own roof" in caption
