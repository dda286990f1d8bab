"""A step-by-step chunked-prefill scheduler, for the tests that check the closed forms.

One loop, two oracles: tests/test_serving_physics.py prices each step from the physics,
tests/test_serving.py from the grid's own decode and prefill tables.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

StepTime = Callable[[np.ndarray, int], float]
"""The time of one mixed step [s], given the decode progress ``j`` (1 .. O-1) of each active
slot and the prompt tokens already prefilled before this step's chunk."""


def chunked_schedule(
    batch: int, prompt: int, output: int, chunk: int, step_time: StepTime
) -> tuple[float, float, float]:
    """Decodes first, then ``chunk`` tokens of the prompt being prefilled, step by step.

    A prompt whose prefill completes takes a free slot (or waits for one); its first token
    comes out of the prefill. Returns the mean step time [s], the mean TTFT [s] and the output
    tokens per second [token/s].
    """
    steps = output - 1
    progress = 1 + (np.arange(batch) * steps) // batch  # evenly spread, as in steady state
    clock, done, prefilled, waiting = 0.0, 0, 0, 0
    started, ttfts, step_times = 0.0, [], []
    for _ in range(4 * steps):
        active = progress > 0
        step = step_time(progress[active], prefilled)
        clock += step
        step_times.append(step)
        progress = np.where(active, progress + 1, 0)
        finished = progress > steps
        done += int(np.sum(finished))
        progress = np.where(finished, 0, progress)
        prefilled += chunk
        if prefilled >= prompt:  # first token out: TTFT from its first chunk
            ttfts.append(clock - started)
            started, prefilled, waiting = clock, 0, waiting + 1
        free = np.flatnonzero(progress == 0)[:waiting]
        progress[free] = 1
        waiting -= free.size
    return float(np.mean(step_times)), float(np.mean(ttfts[1:])), done * output / clock
