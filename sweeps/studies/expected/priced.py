"""What the named schedulers priced on expected step costs share (docs/expected.md,
"Serving"): a mode's figures (``_result``), why a mode has none (``NOT_PRICED``) and the
prompt counts its prefill steps carry. The schedulers themselves, plain or with speculation
and prefix hits, are ``composed``'s.

The serving table's closed forms (docs/serving.md sections 1 and 3) are sums and ratios of
step times: ``t_d(B, S_mean)``, ``t_p(m, I)``, a chunked step's ``t_mix``. Here each of those
steps is the expected one (``steps.ExpectedSteps``) evaluated at exactly the points the closed
form names, and the algebra is the package's own (``sweeps.physics``: the slot groups, the
rates, the TPOTs), so a mode's expected figure is what that scheduler is expected to reach on
the measured kernels, saturated. No bound is priced here: an expectation bounds nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _result(ttft: Any, tpot: Any, rate: Any, steady: Any, output: Any) -> dict[str, Any]:
    """A mode's figures: ``ttft``, ``tpot`` (NaN at ``O = 1``), ``latency``, ``steady`` (its
    steady step) and ``rate`` (requests/s a replica) [s, s, s, s, 1/s]."""
    decodes = np.asarray(output) > 1
    tpot = np.where(decodes, tpot, np.nan)
    latency = ttft + np.where(decodes, (output - 1) * np.nan_to_num(tpot), 0.0)
    return {"ttft": ttft, "tpot": tpot, "latency": latency, "steady": steady, "rate": rate}


NOT_PRICED: dict[str, str] = {
    "bound": "a bound has no expectation: it holds for every scheduler",
}
"""Why a mode has no expected figure."""


def prompts_a_step(mode: str, batch: int, output: float) -> int:
    """The prompts a prefill step of ``mode`` carries, whose attention the simulator's tables
    price each prompt at (``steps.ExpectedSteps.step_costs``): a static batch's ``B``, the slot
    group most slots free in for batched-prefill (``B / (O - 1)`` rounded, at least 1), one
    for the others (a prompt alone, or a chunk or two a step) [prompt]."""
    if mode == "static":
        return int(batch)
    if mode == "batched-prefill" and output > 1:
        return max(1, round(batch / (output - 1)))
    return 1


def prompt_counts(batch: int, outputs: Any) -> tuple[int, ...]:
    """Every prompt count the modes' closed forms read at batch ``B`` and outputs ``O``: one,
    ``B`` (static) and the slot groups' ``q`` and ``q + 1`` (batched-prefill) [prompt]."""
    cycles = np.maximum(np.atleast_1d(np.asarray(outputs, dtype=np.int64)) - 1, 1)
    small = batch // cycles
    return tuple(sorted({1, int(batch), *(int(q) for q in small), *(int(q) + 1 for q in small)}))
