"""What a step really touches of the embeddings (cost-model sections 3 and 4).

With vocabulary ``V`` and width ``h_m``: the input embedding is a gather of one row a token, no
FLOPs; the output projection (lm_head) is a full ``V x h_m`` matrix, read whole and
``2 V h_m`` FLOPs for each token that needs logits. A tied model holds one matrix, read as the
lm_head. ``V = 0`` (a custom model without a vocabulary) makes every term here zero, so the
note's abstract form (``2 P`` FLOPs a token, every weight read) comes back exactly.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def embedding_params(vocab_size: Array, hidden_size: Array, tied: Array) -> Array:
    """Parameters of the embeddings, ``E``: ``2 V h_m`` untied, ``V h_m`` tied.

    Parameters
    ----------
    vocab_size : Vocabulary, ``V`` (0 when unknown) [token]
    hidden_size : Model width, ``h_m`` [1]
    tied : True (or 1) where the input embedding and the lm_head share one matrix [bool]

    Returns
    -------
    Embedding parameters [1]
    """
    return where(tied, 1, 2) * vocab_size * hidden_size


def lookup_params(vocab_size: Array, hidden_size: Array, tied: Array) -> Array:
    """Parameters of the input table a token looks up without computing: ``V h_m``, 0 if tied.

    ``P_act`` counts them, ``2 P_act`` charges them FLOPs; a tied model's one matrix is the
    lm_head, which does compute.

    Parameters
    ----------
    vocab_size : Vocabulary, ``V`` (0 when unknown) [token]
    hidden_size : Model width, ``h_m`` [1]
    tied : True (or 1) where input embedding and lm_head share one matrix [bool]

    Returns
    -------
    Lookup-only parameters [1]
    """
    return where(tied, 0, 1) * vocab_size * hidden_size


def logit_params(vocab_size: Array, hidden_size: Array) -> Array:
    """Parameters of the output projection (lm_head), ``V h_m``, tied or not.

    Each token that needs logits costs ``2 V h_m`` FLOPs here: every decode token, the last
    token of each prompt.

    Parameters
    ----------
    vocab_size : Vocabulary, ``V`` (0 when unknown) [token]
    hidden_size : Model width, ``h_m`` [1]

    Returns
    -------
    lm_head parameters [1]
    """
    return vocab_size * hidden_size


def unread_lookup_params(
    vocab_size: Array, hidden_size: Array, tied: Array, tokens: Array
) -> Array:
    """Parameters of the input table a step of ``T`` tokens never reads: ``(V - min(T, V)) h_m``.

    The gather reads one row a token, at most the whole table; 0 for a tied model (its matrix
    is read whole as the lm_head) and for ``V = 0``.

    Parameters
    ----------
    vocab_size : Vocabulary, ``V`` (0 when unknown) [token]
    hidden_size : Model width, ``h_m`` [1]
    tied : True (or 1) where input embedding and lm_head share one matrix [bool]
    tokens : Tokens in the step: ``B`` for decode, ``B N`` for prefill [token]

    Returns
    -------
    Parameters not read [1]
    """
    rows = vocab_size - np.minimum(tokens, vocab_size)
    return lookup_params(rows, hidden_size, tied)


def weights_read_with_gather(
    weights_read: Array,
    vocab_size: Array,
    hidden_size: Array,
    tied: Array,
    bytes_per_param: Array,
    tokens: Array,
) -> Array:
    """Weight bytes a step reads when the input embedding is a gather.

    ``W_read - (V - min(T, V)) h_m wb``: for an untied model in decode (``T = B``) this is the
    cost model's ``W_read(B) - V h_m wb + B h_m wb``; tied models and ``V = 0`` keep ``W_read``
    exactly. The memory wall still holds every weight: use this for traffic, not capacity.

    Parameters
    ----------
    weights_read : Weight bytes read when every weight is read [byte]
    vocab_size : Vocabulary, ``V`` (0 when unknown) [token]
    hidden_size : Model width, ``h_m`` [1]
    tied : True (or 1) where input embedding and lm_head share one matrix [bool]
    bytes_per_param : Bytes per weight, group-scale overhead included [byte]
    tokens : Tokens in the step: ``B`` for decode, ``B N`` for prefill [token]

    Returns
    -------
    Weight bytes read [byte]
    """
    unread = unread_lookup_params(vocab_size, hidden_size, tied, tokens)
    return weights_read - unread * bytes_per_param


def fixed_weights_read(
    weights_read: Array, vocab_size: Array, hidden_size: Array, tied: Array, bytes_per_param: Array
) -> Array:
    """Weight bytes of a decode step apart from the rows it gathers, ``W_read - V h_m wb``.

    With ``gather_bytes_per_sequence`` a decode step reads ``fixed + B (KV_seq + gather)`` for
    ``B <= V``: the shape ``W + B KV_seq`` that the ceiling, knee, ridge batch and fraction of
    ``sweeps.physics.decode`` take (pass ``fixed`` as the weights, ``KV_seq + gather`` as the
    cache). Tied models and ``V = 0`` keep ``W_read``.

    Parameters
    ----------
    weights_read : Weight bytes read when every weight is read [byte]
    vocab_size : Vocabulary, ``V`` (0 when unknown) [token]
    hidden_size : Model width, ``h_m`` [1]
    tied : True (or 1) where input embedding and lm_head share one matrix [bool]
    bytes_per_param : Bytes per weight [byte]

    Returns
    -------
    Batch-independent weight bytes [byte]
    """
    return weights_read - lookup_params(vocab_size, hidden_size, tied) * bytes_per_param


def gather_bytes_per_sequence(
    vocab_size: Array, hidden_size: Array, tied: Array, bytes_per_param: Array
) -> Array:
    """Bytes one sequence's lookup reads in a decode step, ``h_m wb`` (0 if tied or ``V = 0``).

    Parameters
    ----------
    vocab_size : Vocabulary, ``V`` (0 when unknown) [token]
    hidden_size : Model width, ``h_m`` [1]
    tied : True (or 1) where input embedding and lm_head share one matrix [bool]
    bytes_per_param : Bytes per weight [byte]

    Returns
    -------
    Gathered bytes per sequence [byte]
    """
    return lookup_params(np.minimum(vocab_size, 1), hidden_size, tied) * bytes_per_param
