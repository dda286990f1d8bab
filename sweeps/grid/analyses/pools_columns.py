"""The pools table's variables, declared once (the compute is in ``pools``)."""

from __future__ import annotations

from sweeps.grid.analyses.base import Variable

_V = Variable


def _percentiles(prefix: str, what: str) -> tuple[Variable, ...]:
    return tuple(
        _V(
            f"pools_{prefix}_{name}_s",
            "s",
            f"{what}, its {name} (expected value of the plan's scheduler at roofline step costs)",
            column=f"{prefix}_{name}_s",
            rank="full",
        )
        for name in ("p50", "p90", "p99")
    )


VARIABLES: tuple[Variable, ...] = (
    _V(
        "prefill_replicas",
        "replica",
        "Prefill replicas (colocated: the replicas)",
        "count",
        rank="full",
    ),
    _V(
        "decode_replicas",
        "replica",
        "Decode replicas (colocated: the replicas)",
        "count",
        rank="full",
    ),
    _V("devices", "device", "Devices of the plan, replicas times tp", "count", rank="full"),
    _V(
        "decode_batch",
        "sequence",
        "Batch of the plan: colocated, the one with the fewest devices, then the lowest cost; "
        "disaggregated, the largest that fits and meets the TPOT objective",
        "count",
        rank="full",
    ),
    _V(
        "pools_scheduler",
        "-",
        "The named scheduler the plan runs (disaggregated: its prefill pool's, serial-prefill "
        "or batched-prefill; null: no plan)",
        "str",
        column="scheduler",
        rank="full",
    ),
    _V(
        "pools_request_rate",
        "request/s",
        "Requests per second the plan serves: the arrival rate, or a closed loop's by "
        "Little's law, concurrency / (TTFT + (O - 1) TPOT) at its fixed point",
        column="requests_per_s",
        rank="full",
    ),
    _V(
        "pools_ttft_s",
        "s",
        "Mean time to first token at this rate: the prompt's M/D/1 wait, the mean residual of "
        "the step in flight (colocated) or the KV hand-off (disaggregated), its prefill",
        column="ttft_s",
        rank="full",
    ),
    *_percentiles("ttft", "Time to first token under the load (M/D/1 waits)"),
    _V(
        "pools_tpot_s",
        "s",
        "Time per output token of the plan's batch, saturated (prefill stalls included)",
        column="tpot_s",
        rank="full",
    ),
    *_percentiles(
        "tpot",
        "Time per output token over the requests, saturated: serial- and batched-prefill "
        "spread by a request's place in its slot group (none where B <= O - 1); chunked and "
        "disaggregated decode run one step for every token, so no spread (each equals the mean)",
    ),
    _V(
        "goodput_tokens_per_s_per_device",
        "token/s",
        "Output tokens per second over every device of the plan, at this rate",
        rank="full",
    ),
    _V(
        "pools_cost_per_million_output_tokens_usd",
        "USD",
        "Fleet cost of a million output "
        "tokens at this rate, idle capacity paid for (null: no price)",
        column="cost_per_million_output_tokens_usd",
        rank="full",
    ),
    _V(
        "pools_energy_per_output_token_j",
        "J/token",
        "Estimate: the whole fleet at board power per output token at the arrival rate "
        "(null: a power unknown)",
        "nullable",
        column="energy_per_output_token_j",
        rank="full",
    ),
    _V(
        "decode_time_share",
        "1",
        "Share of device time in decode: disaggregated, the decode pool's share of the "
        "devices; colocated, decode's share of a replica's work",
        rank="full",
    ),
    _V(
        "slot_bound",
        "-",
        "Colocated: the replicas were set by the slots (utilization at most 0.9), not by the "
        "prefill queue; there the M/D/1 figure on the prefill alone understates TTFT",
        "bool",
        rank="full",
    ),
    _V(
        "kv_handoff_s",
        "s",
        "KV hand-off: each decode device's shard of the prompt's cache over its own link "
        "(null: colocated)",
        rank="full",
    ),
    _V(
        "pools_feasible",
        "-",
        "The objectives can be met (a batch fits and meets TPOT, the prefill device "
        "holds the weights and leaves room for TTFT)",
        "bool",
        column="feasible",
        rank="full",
    ),
    _V("prefill_price_as_of", "-", "Date of the prefill device's price (null: none)", "date"),
    _V("decode_price_as_of", "-", "Date of the decode device's price (null: none)", "date"),
    _V(
        "pools_row",
        "-",
        "A plan: disaggregated, or colocated on one device and tp",
        "bool",
        rank="full",
    ),
)
"""Every variable of the pools table, in its column order (``pools_row`` is no column)."""
