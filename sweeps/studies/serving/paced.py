"""``chunked-paced`` where random verify steps free its slots at random (docs/serving.md s. 3).

A free slot takes the next prompt, held from its first chunk: the prompt's ``p`` chunks of
``I / p`` tokens ride ``p`` steps beside every decode (``sweeps.physics.paced``), so no prompt
waits for a slot after its first token. The slots cycle on their own, ``p`` steps prefilling
and ``n`` verifying, so ``m ~ Bin(B, p / (p + n))`` of them prefill at a step; each rate and
time is the mean over ``m`` of the roofline of what the step carries (``Terms.mixed_step``:
``B - m`` verifies after the draft, ``m`` chunks each re-reading its prefix), not the roofline
of the mean step, since a step with no chunk may sit below the ridge and one with a chunk above.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sweeps import physics
from sweeps.physics._array import where


def held(t: Any, pace: Any, hold: Any) -> dict[str, Any]:
    """The terms of ``chunked-paced`` with held slots (``schedulers.Terms`` ``t``), its paced
    chunk ``pace`` (``B I / n``) setting the prefill's steps ``p = ceil(I / pace)``; ``hold``
    marks the points that use them (the sum over ``m`` reaches as far as they need).

    Rate ``B / ((p + n) E[t(m)])``, ``m ~ Bin(B, q)``; TPOT ``n E'[t(m)] / (O - 1)`` with the
    other ``B - 1`` slots' ``m ~ Bin(B - 1, q)``; TTFT (from admission) ``p E'[t(m + 1)]``.
    Every ``t(m)`` in one step over a dim of its own, summed away.
    """
    from xarray import Variable

    batch, computed, steps = t.batch, t.computed, t.steps
    parts = physics.held_prefill_steps(computed, pace)
    share = physics.held_share(parts, steps)
    chunk = computed / parts
    prefix = t.cached + (parts - 1) / 2 * chunk  # a chunk's mean prefix re-read
    reach = physics.binomial_reach(batch, where(hold, share, 0.0))
    m = Variable((_M,), np.arange(reach + 2, dtype=np.float64))
    times = t.mixed_step(np.maximum(batch - m, 0), m * chunk, prefix, m)

    def mean(weights: Any) -> Any:
        return (weights * times).sum(_M) / weights.sum(_M)

    step = mean(physics.binomial_pmf(batch, share, m))
    seen = mean(physics.binomial_pmf(batch - 1, share, m))  # while the slot decodes
    own = mean(physics.binomial_pmf(batch - 1, share, m - 1))  # while it prefills
    rate = physics.held_request_rate(batch, parts, steps, step)
    tpot = seen * steps / np.maximum(t.output - 1, 1)
    prefill_share = computed / (computed + steps * t.rows)
    out = t.result(parts * own, tpot, rate, step, prefill_share)
    return {**out, "chunk": batch * computed / (parts + steps)}


_M = "_held_prefilling"
"""The dim over the count of slots prefilling a step, summed away inside ``held``."""
