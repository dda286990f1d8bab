"""The prefix study: prefix caching, hit rate x KV tier over the prefill grid
(``[axes] prefix_hit_rate``, ``kv_tier``; docs/speculative.md), the hit rate given or, with
``prefix_hit_rate = "trace"``, a trace's at each point's own cache (docs/workloads.md).

``STUDY`` is the one face the core sees; the tiers are records in ``tiers``, the trace's hit
rate one in ``trace``.
"""

from __future__ import annotations

from sweeps.studies.base import Study
from sweeps.studies.prefix.prefix import PREFIX
from sweeps.studies.prefix.records import prefix_records
from sweeps.studies.prefix.table import PrefixKeys

STUDY = Study(
    name="prefix",
    table="axes",
    keys=PrefixKeys,
    description="Prefix caching, hit rate x KV tier over the prefill grid: prefix.parquet",
    defaults={"prefix_hit_rate": (0.0, 0.5, 0.9), "kv_tier": ("hbm",)},
    records=prefix_records,
    analyses=(PREFIX,),
)
