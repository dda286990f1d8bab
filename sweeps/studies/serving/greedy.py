"""``chunked-greedy`` where its slots free at random steps (speculation with ``0 < a < 1``).

Each freed slot's prompt prefilled whole in the step after: the prompts a step carries are
``m ~ Binomial(B, p)``, ``p = 1 / (n + 1)`` (``sweeps.physics.greedy``). Each ``m`` is priced
as the roofline of what the step carries (``Terms.mixed_step``: ``B - m`` verify steps at the
mean context after their draft, ``m`` whole prompts) and the times are averaged with the
binomial weights: over ``Binomial(B, p)`` for the rate, over the ``Binomial(B - 1, p)`` others
for a decoding request's TPOT and, one more prompt, for its own prefill step (TTFT).

Null (NaN) where that schedule does not hold: more than ``SPILL`` of the prompts not fitting
whole in their step (they queue for the budget), or the binomial's mass not summed to within
``TAIL`` by ``CAP`` prompts a step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sweeps import physics
from sweeps.physics._array import where

if TYPE_CHECKING:
    from sweeps.studies.serving.closed_forms import Terms

SPILL = 0.02
"""The largest share of prompts not fitting whole in the step after their slot frees that
the renewal schedule is held to (each waits a step; measured at 1.7 %: requests/s within 0.08 %,
TPOT within 0.17 %, the prefill 0.4 %)."""

TAIL = 1e-9
"""The binomial mass the sums may leave out."""

CAP = 512
"""The most prompts a step the sums price."""


def random_slots(t: Terms) -> dict[str, Any]:
    """Rate, TPOT, TTFT, mean step, chunk and token share of ``chunked-greedy`` whose slots
    free at random, each freed prompt whole in the next step; NaN where that does not hold
    [request/s, s, s, s, token, 1]."""
    batch, prompt = t.batch, t.computed
    steps = where(t.decodes, t.steps, 1.0)
    share = physics.prefilling_share(steps)
    fit = physics.fitting_prompts(batch, prompt, t.rows, t.budget)
    log_all = physics.binomial_log_first(batch, share)
    log_others = physics.binomial_log_first(batch - 1, share)
    mean, decode, own, spill = 0.0, 0.0, 0.0, 0.0
    mass_all, mass_others, previous = 0.0, 0.0, 0.0
    # only cells whose mean prompts a step fit may pass the spill test (Jensen:
    # E[(m - fit)+] >= B p - fit); their sums reach 6 sd and 8 prompts past the fit
    expected = batch * share
    candidate = expected <= np.maximum(fit, 0.0) / (1 - SPILL)
    reach = np.minimum(batch, np.maximum(fit, 0.0) + 6 * np.sqrt(expected) + 8)
    reach = where(candidate, where(np.isfinite(reach), reach, batch), 0.0)
    top = min(int(np.max(np.asarray(reach))), CAP)
    centre = float(np.max(np.asarray(where(candidate, expected, 0.0))))
    for j in range(top + 1):
        w_all, w_others = np.exp(log_all), np.exp(log_others)
        step = t.mixed_step(batch - j, j * prompt, t.cached, float(j))
        mean = mean + where(w_all > 0, w_all * step, 0.0)
        decode = decode + where(w_others > 0, w_others * step, 0.0)
        own = own + where(previous > 0, previous * step, 0.0)  # its own prompt and j - 1 others
        spill = spill + w_all * np.maximum(j - fit, 0.0)
        mass_all, mass_others = mass_all + w_all, mass_others + w_others
        previous = w_others
        if j > centre and float(np.max(np.asarray(np.maximum(w_all, w_others)))) < TAIL * 1e-3:
            break  # every cell's weights past their mode and negligible
        log_all = physics.binomial_log_next(log_all, j, batch, share)
        log_others = physics.binomial_log_next(log_others, j, batch - 1, share)
    held = (1 - mass_all <= TAIL) & (1 - mass_others <= TAIL)
    held = held & (physics.spill_share(spill, batch, share) <= SPILL)
    off = where(held, 0.0, np.nan)
    mean, decode = mean / mass_all + off, decode / mass_others + off
    own = own / (mass_others - previous) + off
    return {
        "rate": physics.random_greedy_rate(batch, share, mean),
        "tpot": physics.random_greedy_tpot(steps, t.output, decode),
        "ttft": own,
        "steady": mean,
        "chunk": batch * share * prompt + off,
        "share": prompt / (prompt + steps * t.rows) + off,
    }
