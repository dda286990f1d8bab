"""Prefill: ``N`` prompt tokens for each of ``B`` sequences in one pass."""

from __future__ import annotations

from sweeps.physics._array import Array
from sweeps.physics.model import causal_attention_pairs


def prefill_attention_pairs(
    prompt: Array, layers: Array, local_layers: Array, window: Array
) -> Array:
    """Causal query-key pairs over all layers, windowed layers capped.

    Parameters
    ----------
    prompt : Prompt tokens, ``N`` [token]
    layers : Transformer layers [1]
    local_layers : Layers with a sliding window [1]
    window : Sliding-window length [token]

    Returns
    -------
    Pairs summed over layers [token**2]
    """
    full = prompt * prompt / 2
    return (layers - local_layers) * full + local_layers * causal_attention_pairs(prompt, window)


def prefill_flops(
    batch: Array,
    prompt: Array,
    active_params: Array,
    heads: Array,
    attention_dim: Array,
    pairs: Array,
    attention_on: Array,
    embedding_params: Array = 0,
    logit_params: Array = 0,
) -> Array:
    """FLOPs of a prefill: linear layers plus causal attention ``2 B H (d_qk + d_v) pairs``.

    The linear layers cost ``2 B N (P_act - E) + 2 B V h_m``: the lookup computes nothing and
    only the last prompt token needs logits (``E`` and ``V h_m`` from
    ``sweeps.physics.embedding``). With the defaults 0 they are the note's ``2 B N P_act``; with
    plain attention and no window the attention is ``2 B L H d N**2``.

    Parameters
    ----------
    batch : Sequences prefilled together [sequence]
    prompt : Prompt tokens per sequence [token]
    active_params : Parameters used per token [1]
    heads : Query heads [1]
    attention_dim : Query-key plus value dimension per head [1]
    pairs : Causal pairs summed over layers [token**2]
    attention_on : 1 to count attention FLOPs, 0 for the note's simple form [1]
    embedding_params : Embedding parameters ``E``, 0 for the note's form [1]
    logit_params : lm_head parameters ``V h_m``, run for the last token only; 0 for the note's
        form [1]

    Returns
    -------
    Prefill FLOPs [FLOP]
    """
    linear = 2 * prompt * (active_params - embedding_params) + 2 * logit_params
    return batch * (linear + attention_on * 2 * heads * attention_dim * pairs)


def prefill_bytes(weights_read: Array, batch: Array, kv_seq: Array) -> Array:
    """Bytes a prefill moves: weights read once, the new caches written.

    Parameters
    ----------
    weights_read : Weight bytes read [byte]
    batch : Sequences prefilled together [sequence]
    kv_seq : KV-cache bytes one sequence writes [byte]

    Returns
    -------
    Prefill bytes [byte]
    """
    return weights_read + batch * kv_seq


def prefill_memory_bound_prompt(ridge: Array, bytes_per_param: Array) -> Array:
    """Prompt length below which prefill turns memory-bound, ``N* = R * wb / 2``.

    From the note's simple form ``AI = 2 N P / (P wb)``: about 295 tokens on an H100 in bf16.

    Parameters
    ----------
    ridge : Ridge point of the device [FLOP/byte]
    bytes_per_param : Bytes per weight [byte]

    Returns
    -------
    Threshold prompt length [token]
    """
    return ridge * bytes_per_param / 2
