"""How the bench times a call: as ``timeit`` does, and several functions in turns."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from typing import Any


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of one call, and its result, measured the way ``timeit`` does.

    The garbage collector runs before the call and is off during it, so a collection of
    unrelated objects (a build creates thousands) does not land in one call's time.
    """
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        result = function()
        return time.perf_counter() - start, result
    finally:
        if enabled:
            gc.enable()


def interleaved(
    functions: dict[str, Callable[[], Any]], rounds: int
) -> dict[str, tuple[float, Any]]:
    """Best time (and last result) of each function, run in turn ``rounds`` times.

    Taking turns makes every function see the same moments of a noisy machine, so the ratios
    between them hold even when the machine's speed moves between runs. A function's previous
    result is released before it runs again: a single call (``sweeps run``) has no earlier
    grid in memory, and with the previous 0.8 GB grid held the median build took 2.4x longer.
    """
    best: dict[str, tuple[float, Any]] = {name: (math.inf, None) for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            best[name] = (best[name][0], None)
            seconds, result = timed(function)
            best[name] = (min(best[name][0], seconds), result)
    return best
