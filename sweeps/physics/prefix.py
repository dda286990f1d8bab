"""Prefix caching and KV tiers: a prompt whose first ``h I`` tokens are already cached.

beyond-the-step section 2 (copied into ``docs/speculative.md``). The hit prefill computes the
``(1 - h) I`` new tokens, each attending causally to every earlier position, and reads the
cached prefix from HBM; the prefix is first reloaded from its tier, overlapped layer by layer
with the compute at best. Recomputing the whole prompt is the plain prefill; the bound takes
the smaller. ``h = 0`` is the plain prefill exactly; ``h = 1`` computes only the logits row.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where
from sweeps.physics.prefill import prefill_attention_pairs


def tokens_recomputed(prompt: Array, hit_rate: Array) -> Array:
    """Prompt tokens a hit prefill computes, ``(1 - h) I``.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    hit_rate : Share of the prompt whose cache is held, ``0 <= h <= 1`` [1]

    Returns
    -------
    Tokens computed [token]
    """
    return (1 - hit_rate) * prompt


def cached_tokens(prompt: Array, hit_rate: Array) -> Array:
    """Prompt tokens whose cache is held, ``h I``: the prefix a hit prefill skips.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    hit_rate : Share of the prompt whose cache is held, ``0 <= h <= 1`` [1]

    Returns
    -------
    Cached tokens [token]
    """
    return hit_rate * prompt


def whole_cached_tokens(prompt: Array, hit_rate: Array) -> Array:
    """Cached tokens a measured hit prefill skips: ``h I`` to the nearest whole token, at most
    ``I - 1`` (a full hit still computes the last token, whose hidden state the first output
    token's logits need, as serving engines do; ``I = 1`` skips none).

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` (whole) [token]
    hit_rate : Share of the prompt whose cache is held, ``0 <= h <= 1`` [1]

    Returns
    -------
    Whole cached tokens, ``0 <= p <= max(I - 1, 0)`` [token]
    """
    whole = np.rint(cached_tokens(prompt, hit_rate))
    return np.maximum(np.minimum(whole, prompt - 1), 0.0)


def hit_attention_pairs(
    prompt: Array, hit_rate: Array, layers: Array, local_layers: Array, window: Array
) -> Array:
    """Causal pairs of the new tokens only: the prompt's pairs less the cached prefix's.

    The tokens at positions ``h I .. I`` attend to every earlier position (windowed layers to
    the last ``w``): ``pairs(I) - pairs(h I)`` summed over layers. ``h = 0`` is
    ``prefill_attention_pairs(I)``, ``h = 1`` is 0.

    Parameters
    ----------
    prompt : Prompt tokens, ``I`` [token]
    hit_rate : Cached share of the prompt, ``h`` [1]
    layers : Transformer layers [1]
    local_layers : Layers with a sliding window [1]
    window : Sliding-window length, or ``inf`` [token]

    Returns
    -------
    Pairs summed over layers [token**2]
    """
    cached = cached_tokens(prompt, hit_rate)
    whole = prefill_attention_pairs(prompt, layers, local_layers, window)
    return whole - prefill_attention_pairs(cached, layers, local_layers, window)


def reload_bytes(batch: Array, prefix_cache_bytes: Array) -> Array:
    """Bytes moved from the tier into HBM: every sequence's cached prefix.

    Parameters
    ----------
    batch : Sequences prefilled together [sequence]
    prefix_cache_bytes : KV bytes of one cached prefix of ``h I`` tokens [byte]

    Returns
    -------
    Reloaded bytes [byte]
    """
    return batch * prefix_cache_bytes


def reload_time(nbytes: Array, tier_bandwidth: Array) -> Array:
    """Time to bring the cached prefixes from their tier, ``bytes / bandwidth``.

    An HBM tier (``inf`` bandwidth) reloads nothing: 0.

    Parameters
    ----------
    nbytes : Reloaded bytes [byte]
    tier_bandwidth : Tier-to-HBM bandwidth per device [byte/s]

    Returns
    -------
    Reload time [s]
    """
    return nbytes / tier_bandwidth


def hit_time(compute_time: Array, reload: Array) -> Array:
    """Time of a hit prefill with the reload overlapped layer by layer: ``max(t_p_hit, t_r)``.

    Parameters
    ----------
    compute_time : Roofline time of the hit prefill [s]
    reload : Reload time of the prefix [s]

    Returns
    -------
    Hit prefill time, a bound [s]
    """
    return np.maximum(compute_time, reload)


def break_even_bandwidth(nbytes: Array, recompute_time: Array) -> Array:
    """Tier bandwidth at which reloading the prefix costs what recomputing the prompt costs.

    ``bytes / t_p(B, I)``: with the reload overlapped layer by layer, a tier faster than this
    beats recomputation. At ``h -> 1`` it is ``kv_bytes_per_token / t_per_token``; compute-bound,
    ``kv_bytes_per_token * peak / FLOPs_per_token`` (about 2.3 GB/s for Llama-3 70B with an fp8
    cache on an H100 at fp8). NaN (null) where nothing is reloaded.

    Parameters
    ----------
    nbytes : Reloaded bytes [byte]
    recompute_time : Time of the plain prefill of the whole prompt [s]

    Returns
    -------
    Break-even bandwidth per device [byte/s]
    """
    return where(nbytes > 0, nbytes / recompute_time, np.nan)


def prefixes_held(capacity: Array, prefix_cache_bytes: Array) -> Array:
    """Cached prefixes of this length a tier holds, ``floor(capacity / bytes)``; NaN if unknown.

    Parameters
    ----------
    capacity : Tier capacity per device (NaN where unknown) [byte]
    prefix_cache_bytes : KV bytes of one cached prefix per device [byte]

    Returns
    -------
    Prefixes held [1]
    """
    held = prefix_cache_bytes > 0
    return where(held, np.floor(capacity / where(held, prefix_cache_bytes, 1.0)), np.nan)
