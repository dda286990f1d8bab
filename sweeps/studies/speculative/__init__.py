"""The speculative study: speculative decoding, k x alpha x draft over the decode grid
(``[axes] spec_tokens``, ``spec_acceptance``, ``spec_draft``; docs/speculative.md).

``STUDY`` is the one face the core sees; the drafts are records in ``drafts``.
"""

from __future__ import annotations

from sweeps.studies.base import Study
from sweeps.studies.speculative.drafts import draft_records
from sweeps.studies.speculative.speculative import SPECULATIVE
from sweeps.studies.speculative.table import SpeculativeKeys

STUDY = Study(
    name="speculative",
    table="axes",
    keys=SpeculativeKeys,
    description="Speculative decoding, k x alpha x draft over the decode grid: speculative.parquet",
    defaults={
        "spec_tokens": (0, 2, 4),
        "spec_acceptance": (0.6, 0.8),
        "spec_draft": ("ngram",),
    },
    records=draft_records,
    analyses=(SPECULATIVE,),
)
