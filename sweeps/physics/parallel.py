"""Per-rank terms of a replica of ``tp x ep x pp`` devices (beyond-the-step.md section 3).

A replica runs ``pp`` pipeline stages of ``L / pp`` layers; a stage is ``ep`` expert-parallel
ranks of ``tp`` devices each. The routed experts are split over the ``ep`` ranks (``1 / ep``
each, then ``tp`` ways within a rank). With data-parallel attention (``dp = 1``) every rank
holds the attention, the shared experts, the dense layers and the embeddings whole (split
``tp`` ways) and decodes its own ``B / ep`` sequences, holding only their caches; without it
(``dp = 0``) those are tensor-parallel over all ``tp ep`` devices of the stage and every
device sees all ``B`` sequences. At ``ep = pp = 1``, ``dp = 0`` every function here gives
today's tensor-parallel terms bit for bit (a factor of 1 multiplies or divides exactly).

``dp`` is a 0/1 number, so that no function branches on it. ``B`` is the replica's batch:
the sequences it decodes, every rank's together.
"""

from __future__ import annotations

import numpy as np

from sweeps.physics._array import Array, where


def dense_shards(tp: Array, ep: Array, dp: Array) -> Array:
    """Devices that split the attention, dense layers, shared experts and embeddings, ``d``.

    Parameters
    ----------
    tp : Tensor-parallel degree within a rank [1]
    ep : Expert-parallel ranks of a stage [1]
    dp : 1 with data-parallel attention, 0 without [1]

    Returns
    -------
    ``tp`` with data-parallel attention, ``tp ep`` without [1]
    """
    return tp * (dp + (1 - dp) * ep)


def attention_replicas(ep: Array, dp: Array) -> Array:
    """Copies of the attention in a stage, ``r``: each decodes ``B / r`` of the sequences.

    Parameters
    ----------
    ep : Expert-parallel ranks of a stage [1]
    dp : 1 with data-parallel attention, 0 without [1]

    Returns
    -------
    ``ep`` with data-parallel attention, 1 without [1]
    """
    return dp * ep + (1 - dp)


def replica_devices(tp: Array, ep: Array, pp: Array) -> Array:
    """Devices of one replica, ``tp ep pp`` [device]."""
    return tp * ep * pp


def routed_params(
    params: Array, active_params: Array, experts: Array, experts_per_token: Array
) -> Array:
    """Parameters of every routed expert of every MoE layer, ``R = E (P - P_act) / (E - k)``.

    ``P - P_act`` is exactly ``E - k`` experts per MoE layer (``sweeps.physics.params_read``),
    so one expert of every layer has ``(P - P_act) / (E - k)`` parameters. Zero for a dense
    model (``E = k``).

    Parameters
    ----------
    params : All parameters [1]
    active_params : Parameters used per token [1]
    experts : Routed experts per MoE layer, ``E`` (1 for dense) [1]
    experts_per_token : Experts per token, ``k`` (1 for dense) [1]

    Returns
    -------
    Routed-expert parameters [1]
    """
    spare = experts - experts_per_token
    return where(spare > 0, experts * (params - active_params) / where(spare > 0, spare, 1), 0.0)


def rank_share(total: Array, routed: Array, tp: Array, ep: Array, dp: Array) -> Array:
    """One device's share of a stage's ``total`` of which ``routed`` is routed experts.

    ``(total - routed) / d + routed / (tp ep)``, written as ``(total - routed (1 - d / (tp
    ep))) / d`` so that at ``ep = 1`` it is ``total / tp`` exactly.

    Parameters
    ----------
    total : Everything the stage holds or reads (bytes or parameters) [any unit]
    routed : The routed experts' part of it [the unit of ``total``]
    tp, ep, dp : Tensor-parallel degree, expert-parallel ranks, data-parallel attention [1]

    Returns
    -------
    Per-device share [the unit of ``total``]
    """
    d = dense_shards(tp, ep, dp)
    return (total - routed * (1 - d / (tp * ep))) / d


def experts_touched_per_rank(
    experts: Array, experts_per_token: Array, tokens: Array, ep: Array
) -> Array:
    """Expected distinct experts of one rank's own ``E / ep`` that ``tokens`` touch, per layer.

    Every token of the whole batch is routed (uniformly) to ``k`` of all ``E`` experts, so a
    rank's experts see the global batch's routing: ``E (1 - (1 - k / E)^T) / ep``.

    Parameters
    ----------
    experts : Routed experts per MoE layer, ``E`` [1]
    experts_per_token : Experts per token, ``k`` [1]
    tokens : Tokens of the whole batch in the step, ``T`` [token]
    ep : Expert-parallel ranks [1]

    Returns
    -------
    Expected distinct experts touched among the rank's own [1]
    """
    return experts * (1 - (1 - experts_per_token / experts) ** tokens) / ep


def routed_params_read(
    params: Array, active_params: Array, experts: Array, experts_per_token: Array, tokens: Array
) -> Array:
    """Routed-expert parameters a step of ``tokens`` tokens reads, the whole stage together.

    ``touched (P - P_act) / (E - k)``: each expert touched, in every MoE layer; 0 for dense.

    Parameters
    ----------
    params, active_params : All parameters, those used per token [1]
    experts, experts_per_token : ``E`` and ``k`` (1, 1 for dense) [1]
    tokens : Tokens of the whole batch in the step [token]

    Returns
    -------
    Routed parameters read [1]
    """
    touched = experts_touched_per_rank(experts, experts_per_token, tokens, 1)
    return routed_params(params, active_params, experts, experts_per_token) * touched / experts


def all_to_all_bytes(
    batch: Array,
    experts_per_token: Array,
    hidden_size: Array,
    activation_bytes: Array,
    moe_layers: Array,
    tp: Array,
    ep: Array,
) -> Array:
    """Bytes one device sends over the scale-up link in a step for the expert all-to-all.

    Per MoE layer each of a rank's ``B / ep`` tokens sends its hidden state to its ``k``
    experts and takes the results back; ``(ep - 1) / ep`` of them live on other ranks:
    ``2 (B / ep) k h a (ep - 1) / ep`` bytes a rank, split over its ``tp`` devices. Zero at
    ``ep = 1``.

    Parameters
    ----------
    batch : Tokens of the replica in the step, ``B`` [token]
    experts_per_token : Experts per token, ``k`` [1]
    hidden_size : Model width, ``h`` [1]
    activation_bytes : Bytes per activation element, ``a`` [byte]
    moe_layers : MoE layers the device's stage runs [1]
    tp, ep : Tensor-parallel degree within a rank, expert-parallel ranks [1]

    Returns
    -------
    All-to-all bytes per device per step [byte]
    """
    per_layer = 2 * (batch / ep) * experts_per_token * hidden_size * activation_bytes
    return per_layer * (ep - 1) / ep * moe_layers / tp


def handoff_bytes(
    batch: Array, hidden_size: Array, activation_bytes: Array, tp: Array, ep: Array, pp: Array
) -> Array:
    """Bytes one device sends to the next stage for one micro-batch of ``B / pp`` tokens.

    Each token's hidden state, ``h a`` bytes, split over the stage's ``tp ep`` devices.

    Parameters
    ----------
    batch : Tokens of the replica in the step, ``B`` [token]
    hidden_size : Model width, ``h`` [1]
    activation_bytes : Bytes per activation element, ``a`` [byte]
    tp, ep, pp : Tensor-parallel degree, expert-parallel ranks, pipeline stages [1]

    Returns
    -------
    Hand-off bytes per device per micro-batch [byte]
    """
    return (batch / pp) * hidden_size * activation_bytes / (tp * ep)


def link_time(nbytes: Array, link_bandwidth: Array) -> Array:
    """Time to move ``nbytes`` over the link; 0 where nothing moves, NaN where the link is
    unknown and something does.

    Parameters
    ----------
    nbytes : Bytes per device [byte]
    link_bandwidth : Link bandwidth per device and direction, NaN if unknown [byte/s]

    Returns
    -------
    Link time [s]
    """
    return where(nbytes > 0, nbytes / link_bandwidth, 0.0)


def known(time: Array) -> Array:
    """``time`` with an unknown (NaN) link time as 0: a link the catalog does not know bounds
    nothing, so the step's lower bound stands without it [s]."""
    return where(np.isnan(time), 0.0, time)


def step_bound(roof_time: Array, link: Array) -> Array:
    """The step's lower bound with the link in it, ``max(compute, memory, link)`` (full
    overlap): ``roof_time`` is already ``max(compute, memory)`` [s]."""
    return np.maximum(roof_time, link)


def pipeline_latency(round_time: Array, handoff: Array, pp: Array) -> Array:
    """Time of one token across every stage, ``pp tau + (pp - 1) t_h``.

    ``round_time`` is a device's time for its stage on all ``pp`` micro-batches, ``pp tau``:
    the stages run one after another for a token, each ``tau``, with a hand-off between two.

    Parameters
    ----------
    round_time : ``pp`` stage steps of one device, ``pp tau`` [s]
    handoff : One hand-off's time [s]
    pp : Pipeline stages [1]

    Returns
    -------
    Latency of one token [s]
    """
    return round_time + (pp - 1) * handoff


def pipeline_prefill_time(stage_time: Array, handoff: Array, pp: Array) -> Array:
    """Time of a prefill across every stage, one after another: ``pp tau + (pp - 1) t_h``.

    Parameters
    ----------
    stage_time : One stage's time for the whole prefill, ``tau`` [s]
    handoff : One hand-off's time [s]
    pp : Pipeline stages [1]

    Returns
    -------
    Prefill latency [s]
    """
    return pp * stage_time + (pp - 1) * handoff


def pipeline_fill(sequences: Array, pp: Array) -> Array:
    """How much longer a step of whole sequences takes than its device's work, ``pp / m``.

    A step of ``B`` sequences over ``pp`` stages runs ``m = min(B, pp)`` micro-batches of
    ``B / m`` whole sequences (a sequence is never split): at ``B >= pp`` every stage is busy
    all the step (1), below it a token still crosses every stage in turn while a device
    works on only ``m`` of the ``pp`` micro-batch slots, so the step takes ``pp / B`` times the
    device's work (a lone sequence pays every stage, ``pp`` of them). A fluid step of under
    one sequence is one micro-batch (``pp``); 1 at ``pp = 1``.

    Parameters
    ----------
    sequences : Whole sequences in the step, ``B`` [sequence]
    pp : Pipeline stages [1]

    Returns
    -------
    ``pp / min(max(B, 1), pp)`` [1]
    """
    return pp / micro_batches(sequences, pp)


def micro_batches(sequences: Array, pp: Array) -> Array:
    """Micro-batches of whole sequences a step of ``B`` sequences runs over ``pp`` stages,
    ``m = min(max(B, 1), pp)`` (a fluid step of under one sequence is one micro-batch); a
    device reads its stage's weights once for each [1].

    Parameters
    ----------
    sequences : Whole sequences (or tokens) in the step, ``B`` [sequence]
    pp : Pipeline stages [1]

    Returns
    -------
    ``m`` [1]
    """
    return np.minimum(np.maximum(sequences, 1.0), pp)
