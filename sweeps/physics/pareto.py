"""The Pareto front of serving plans (``docs/serving.md`` section 6), by sorting: O(n log n).

A point is on its group's front when no other point of the group is at least as good in both
objectives and better in one (larger is better in both). Sorted by group, then ``x`` falling,
then ``y`` falling, every point that could dominate a point comes before it, so one running
maximum of ``y`` decides: no pairwise loop. It needs a sort, so it works on numpy arrays (or
anything ``numpy.asarray`` takes: a DataArray's values, a polars Series), not lazily on xarray.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array


def pareto_front(x: Array, y: Array, group: Array) -> np.ndarray:
    """Mask of the points on their group's Pareto front, larger ``x`` and ``y`` better.

    Ties: identical points (same group, ``x`` and ``y``) do not dominate each other, so all of
    them are on the front when one is; a point equal to another in one objective and worse in
    the other is dominated. A point with a NaN in either objective is never on the front and
    dominates nothing (filter by the objectives before: an SLO filter is NaN or a drop).

    Parameters
    ----------
    x : First objective, e.g. output tokens/s per device [any unit]
    y : Second objective, e.g. tokens/s per user [any unit]
    group : Group of each point (model and workload), any sortable codes; broadcast [1]

    Returns
    -------
    On-front flag per point, the broadcast shape of the inputs [bool]
    """
    xs, ys, gs = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float), np.asarray(group))
    on = np.zeros(xs.shape, dtype=bool)
    valid = ~(np.isnan(xs) | np.isnan(ys))
    xv, yv = xs[valid], ys[valid]
    codes = np.unique(gs[valid], return_inverse=True)[1].reshape(-1)
    ranks = np.unique(yv, return_inverse=True)[1].reshape(-1)
    order = np.lexsort((-yv, -xv, codes))
    xo, yo, go, ro = xv[order], yv[order], codes[order], ranks[order]
    # one key that orders y within a group and puts every earlier group below: a running
    # maximum over the whole array then never lets another group's point dominate
    key = go * (ranks.size + 1) + ro + 1
    count = key.size
    same = np.zeros(count, dtype=bool)
    same[1:] = (go[1:] == go[:-1]) & (xo[1:] == xo[:-1]) & (yo[1:] == yo[:-1])
    run_start = np.maximum.accumulate(np.where(same, 0, np.arange(count)))
    running = np.maximum.accumulate(key)
    before = np.where(run_start > 0, running[np.maximum(run_start - 1, 0)], 0)
    front = np.empty(count, dtype=bool)
    front[order] = before < key
    on[valid] = front
    return on
