"""The serving study: requests of I prompt and O output tokens, served at a rate or by closed-loop
clients (``[serving]``), or a production trace's (``[workload]``, ``trace``): the serving, pools
and simulated tables (docs/serving.md, docs/workloads.md).

``STUDY`` is the one face the core sees; the schedulers are records in ``schedulers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sweeps.schedulers import CHUNKED, SCHEDULERS
from sweeps.studies.base import Study
from sweeps.studies.serving.pools import POOLS
from sweeps.studies.serving.serving import SERVING
from sweeps.studies.serving.simulated import STEP
from sweeps.studies.serving.table import MORE_AXES, ServingTable
from sweeps.studies.serving.trace import workload_records


def _check_serving(table: Any, axes: Mapping[str, Sequence[Any]]) -> list[tuple[str, str]]:
    """A chunked step carries one decode token per sequence: its budget exceeds every batch;
    a chunked scheduler asked for by name needs a budget."""
    chunk, batch = table.chunk_tokens, axes.get("batch", ())
    named = "schedulers" in table.model_fields_set
    chunked = [name for name in table.schedulers if name in CHUNKED]
    if named and chunked and not chunk:
        return [
            (
                "schedulers",
                f"{chunked} need a token budget, and chunk_tokens is 0 (off); allowed "
                f"without one: {[s for s in SCHEDULERS if s not in CHUNKED]}, or set "
                "chunk_tokens",
            )
        ]
    if not (chunk and batch and chunk <= max(batch)):
        return []
    default = "" if "chunk_tokens" in table.model_fields_set else " (the default)"
    return [
        (
            "chunk_tokens",
            f"{chunk}{default} is not larger than the largest batch, {max(batch)}: a chunked "
            "step carries one decode token per sequence plus prompt tokens; allowed: 0 (off) "
            f"or more than {max(batch)}",
        )
    ]


STUDY = Study(
    name="serving",
    table="serving",
    keys=ServingTable,
    more_axes=MORE_AXES,
    attrs=("ttft_slo_s", "tpot_slo_s"),
    defaults={"concurrency": ()},
    settings=lambda table: table.objectives(),
    check=_check_serving,
    records=workload_records,
    analyses=(SERVING, POOLS),
    post_steps=(STEP,),
    description="Requests of I prompt and O output tokens: the serving and pools tables",
)
