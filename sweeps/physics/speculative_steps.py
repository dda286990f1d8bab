"""The distribution of a speculative request's verify steps, and the slowest of a batch.

A verify step yields ``X`` tokens, ``j`` with probability ``a^(j-1) (1 - a)`` for ``j <= k``
and ``k + 1`` with ``a^k`` (``sweeps.physics.expected_tokens``), the last one cut to what the
request still needs; the steps ``N`` to produce ``n`` tokens are the first ``N`` whose draws
sum to ``n`` or more. A static batch of ``B`` requests lasts until the slowest one is done:
``E[max_B N] = sum_{m >= 0} (1 - F(m)^B)`` for the ``B`` independent requests, ``F`` the CDF
of one request's ``N`` by dynamic programming over the tokens produced. Numbers and numpy
arrays only (the step axis is the DP's own): a grid wraps them in ``xarray.apply_ufunc``.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array


def verify_steps_cdf(tokens: Array, draft_tokens: Array, acceptance: Array) -> np.ndarray:
    """``P(N <= m)`` for ``m = 0..max(n)``: the CDF of the verify steps to produce ``n`` tokens.

    Dynamic programming over the steps: the mass of a request not yet done, by the tokens it
    has, moves by each step's draw; what reaches ``n`` is done. ``N <= n`` (a step yields at
    least one token), so the last column is 1.

    Parameters
    ----------
    tokens : Tokens to produce, ``n >= 0``, integers (``O - 1`` of a request) [token]
    draft_tokens : Draft tokens per verification, ``k >= 0``, integers [token]
    acceptance : Per-token acceptance probability, ``0 <= a <= 1`` [1]

    Returns
    -------
    The CDF, the broadcast shape of the three with a last axis of ``max(n) + 1`` steps [1]
    """
    n, k, a = np.broadcast_arrays(
        np.rint(np.asarray(tokens, dtype=float)).astype(np.int64),
        np.rint(np.asarray(draft_tokens, dtype=float)).astype(np.int64),
        np.asarray(acceptance, dtype=float),
    )
    top = int(n.max(initial=0))
    yields = np.arange(1, int(k.max(initial=0)) + 2)  # j = 1 .. k_max + 1
    kk, aa = k[..., None], a[..., None]
    # P(X = j): a^(j-1) (1 - a) below k + 1, a^k at k + 1, nothing beyond
    p = np.where(yields <= kk, aa ** (yields - 1) * (1 - aa), 0.0)
    p = np.where(yields == kk + 1, aa**kk, p)
    have = np.arange(top + 1)
    undone = n[..., None] > have  # a request with fewer than n tokens is not done
    alive = np.where(have == 0, 1.0, 0.0) * undone
    cdf = np.empty((*n.shape, top + 1))
    cdf[..., 0] = 1 - alive.sum(axis=-1)
    for m in range(1, top + 1):
        moved = np.zeros_like(alive)
        for i, j in enumerate(yields[:top]):  # a draw past max(n) is done wherever it lands
            moved[..., j:] += alive[..., : top + 1 - j] * p[..., i : i + 1]
        alive = moved * undone
        cdf[..., m] = 1 - alive.sum(axis=-1)
    return np.clip(cdf, 0.0, 1.0)


def max_verify_steps(tokens: Array, draft_tokens: Array, acceptance: Array, batch: Array) -> Array:
    """Expected verify steps of the slowest of ``B`` independent requests, ``E[max_B N]``.

    ``sum_m (1 - F(m)^B)`` with ``F`` from ``verify_steps_cdf``; ``n`` exactly at ``k = 0``
    or ``a = 0``, ``ceil(n / (k + 1))`` at ``a = 1``, ``verify_steps`` on average at ``B = 1``
    (the exact mean; ``verify_steps`` is its renewal approximation).

    Parameters
    ----------
    tokens : Tokens each request produces, ``n >= 0``, integers [token]
    draft_tokens : Draft tokens per verification, ``k >= 0``, integers [token]
    acceptance : Per-token acceptance probability, ``0 <= a <= 1`` [1]
    batch : Requests verified together, ``B >= 1`` [sequence]

    Returns
    -------
    Expected verify steps of the slowest request [1]
    """
    cdf = verify_steps_cdf(tokens, draft_tokens, acceptance)
    b = np.asarray(batch, dtype=float)
    shape = np.broadcast_shapes(cdf.shape[:-1], b.shape)
    below = np.broadcast_to(cdf, shape + cdf.shape[-1:])
    return np.sum(1 - below ** np.broadcast_to(b, shape)[..., None], axis=-1)
