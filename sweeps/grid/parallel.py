"""The derived inputs of the parallel axes (``axes.ep``, ``.dp_attention``, ``.pp``).

``_ep`` [1], ``_dp`` [1] (1 with data-parallel attention, 0 without) and ``_pp`` [1] along
their dims when the sweep has the parallel study, else the scalars 1, 0, 1 (a replica of
``tp`` devices: every term as before, bit for bit); ``_moe_layers`` [1]: the MoE layers of
each model, ``(P - P_act) / ((E - k) 3 h_m h_e)`` (58 for DeepSeek-V3's 61), all its layers
where the catalog has no expert width, 0 for a dense model; ``_scale_up`` [byte/s]: each
device's scale-up link per direction (catalog ``scale_up_bandwidth``), NaN where unknown.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Coord = tuple[str | tuple[str, ...], np.ndarray]


def moe_layers(model: Any) -> float:
    """MoE layers of ``model`` [1] (see the module docstring)."""
    if not model.is_moe:
        return 0.0
    width = 3 * model.hidden_size * model.moe_intermediate_size
    if width <= 0:
        return float(model.layers)
    spare = model.experts - model.experts_per_token
    return float(round((model.params - model.active_params) / (spare * width)))


def label(tp: int, ep: int, dp: bool, pp: int) -> str:
    """The layout of a replica in a few characters: ``tp8``, ``tp1 ep8+dp``, ``tp8 pp2``
    (``ep1`` with or without data-parallel attention is one rank: plain ``tp``)."""
    parts = [f"tp{tp}"]
    if ep > 1:  # one rank's attention is data-parallel or not alike
        parts.append(f"ep{ep}" + ("+dp" if dp else ""))
    if pp > 1:
        parts.append(f"pp{pp}")
    return " ".join(parts)


def parallel_inputs(sweep: Any) -> dict[str, Coord]:
    """The derived inputs of the parallel axes (see the module docstring)."""
    links = [getattr(d, "scale_up_bandwidth", None) for d in sweep.hardware]
    out: dict[str, Coord] = {
        "_moe_layers": ("model", np.array([moe_layers(m) for m in sweep.models])),
        "_scale_up": ("hardware", np.array([math.nan if b is None else b for b in links])),
    }
    if sweep.ep:
        out["_parallel_label"] = (
            ("tp", "ep", "dp_attention", "pp"),
            np.array(
                [
                    [
                        [[label(t, e, d, p) for p in sweep.pp] for d in sweep.dp_attention]
                        for e in sweep.ep
                    ]
                    for t in sweep.tp
                ],
                dtype=object,
            ),
        )
    if not sweep.ep:
        return (
            out
            | {name: ((), np.array(v)) for name, v in (("_ep", 1.0), ("_dp", 0.0))}
            | {"_pp": ((), np.array(1.0))}
        )
    return out | {
        "_ep": ("ep", np.array(sweep.ep, dtype=np.float64)),
        "_dp": ("dp_attention", np.array([1.0 if d else 0.0 for d in sweep.dp_attention])),
        "_pp": ("pp", np.array(sweep.pp, dtype=np.float64)),
    }
