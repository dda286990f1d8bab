"""The prefix study: prefix caching, hit rate x KV tier over the prefill grid
(``[axes] prefix_hit_rate``, ``kv_tier``; docs/speculative.md).

``STUDY`` is the one face the core sees; the tiers are records in ``tiers``.
"""

from __future__ import annotations

from sweeps.studies.base import Study
from sweeps.studies.prefix.prefix import PREFIX
from sweeps.studies.prefix.tiers import tier_records

STUDY = Study(
    name="prefix",
    table="axes",
    axes=("prefix_hit_rate", "kv_tier"),
    description="Prefix caching, hit rate x KV tier over the prefill grid: prefix.parquet",
    defaults={"prefix_hit_rate": (0.0, 0.5, 0.9), "kv_tier": ("hbm",)},
    records=tier_records,
    analyses=(PREFIX,),
)
