"""The cheapest serving plans of a run (``sweeps.cheapest_plans``) as a terminal table."""

from __future__ import annotations

from typing import Any

from sweeps.cli.numbers import grouped as _grouped

PLAN_ROWS = 40
"""Plans a terminal shows at most; ``pools.parquet`` has every one."""


def grouped(value: float) -> str:
    """A whole count with thousands separators (``12,345``)."""
    return _grouped(value, 0)


def _money(value: Any) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1e3:,.0f}"


def _pool(row: dict[str, Any], side: str) -> str:
    count = row[f"{side}_replicas"]
    replicas = "" if count is None else f"{grouped(count)} x "
    layout = f"tp{row[f'{side}_tp']}"
    if (row.get("ep") or 1) > 1:  # the parallel axes: a replica of tp x ep x pp devices
        layout += f" ep{row['ep']}" + ("+dp" if str(row.get("dp_attention")) == "true" else "")
    if (row.get("pp") or 1) > 1:
        layout += f" pp{row['pp']}"
    return f"{replicas}{row[f'{side}_hardware']} {layout}"


def _techniques(row: dict[str, Any]) -> list[str]:
    """A plan's speculation (``k``, the draft, at the acceptance) and prefix cache (the hit
    rate, the tier), where the run has their axes: the draft is ``-`` at ``k = 0`` and the
    tier at ``h = 0`` (neither is in the plan)."""
    cells = []
    if "spec_tokens" in row:
        k = row["spec_tokens"]
        cells += [
            "-" if k is None else grouped(k),
            "-" if not k else str(row["spec_draft"]),
            "-" if row["spec_acceptance"] is None else f"{row['spec_acceptance']:g}",
        ]
    if "prefix_hit_rate" in row:
        hit = row["prefix_hit_rate"]  # null: prefix_hit_rate = "trace", a rate at each device
        cells += [
            "trace" if hit is None else f"{hit:.0%}",
            "-" if hit is not None and not hit else str(row["kv_tier"]),
        ]
    return cells


def _expected(devices: dict[str, Any]) -> str:
    """The devices a plan needs by expectation, per engine (``vllm 2, trtllm 3``)."""
    cells = [f"{engine} {'-' if n is None else grouped(n)}" for engine, n in devices.items()]
    return ", ".join(cells) or "-"


def plans_table(rows: list[dict[str, Any]], title: str) -> Any:
    """The cheapest plan that meets the objectives per model, weights, workload and rate;
    with speculation or a prefix cache in the run, which ``k``, draft and tier it takes."""
    from rich.text import Text

    from sweeps.cli.console import table as new_table

    notes = [
        "cost per million output tokens with idle capacity paid for, at the devices' dated "
        "prices (pools.parquet: prefill_price_as_of, decode_price_as_of)"
    ]
    if len(rows) > PLAN_ROWS:
        notes.append(f"first {PLAN_ROWS} of {len(rows):,} plans")
        rows = rows[:PLAN_ROWS]
    first = rows[0] if rows else {}
    if "expected" in first:
        notes.append(
            "expected devices: the fewest any plan is expected to need on the engine's "
            "measured kernels (pools_expected.parquet: each scheduler on one pool, and "
            "disaggregated pools on one device and tp); the plan's devices are sized on "
            "roofline steps"
        )
    table = new_table(f"{title}: cheapest serving plans", "; ".join(notes))
    closed = "concurrency" in first
    heads = ["model", "weights", "I", "O", "clients" if closed else "req/s", "plan"]
    heads += ["prefill", "decode", "devices"]
    heads += ["k", "draft", "accept"] if "spec_tokens" in first else []
    heads += ["hit", "tier"] if "prefix_hit_rate" in first else []
    heads += ["$/M tok", "TTFT ms", "TPOT ms", "decode share"]
    expected = "expected" in first
    heads += ["expected devices"] if expected else []
    for head in heads:
        table.add_column(Text(head), no_wrap=True, overflow="ellipsis")
    for row in rows:
        found = row["reason"] is None
        table.add_row(
            str(row["model"]),
            str(row["weight_dtype"]),
            grouped(row["prompt_tokens"]),
            grouped(row["output_tokens"]),
            grouped(row["concurrency"]) if closed else f"{row['arrival_rate']:g}",
            str(row["pool_mode"]) if found else str(row["reason"]),
            _pool(row, "prefill") if found else "",
            _pool(row, "decode") if found else "",
            grouped(row["devices"]) if found and row["devices"] is not None else "",
            *_techniques(row),
            _money(row["cost_per_million_output_tokens_usd"]),
            _ms(row["ttft_s"]),
            _ms(row["tpot_s"]),
            "-" if row["decode_time_share"] is None else f"{row['decode_time_share']:.0%}",
            *([_expected(row["expected"])] if expected else []),
        )
    return table
