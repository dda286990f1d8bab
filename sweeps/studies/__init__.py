"""The studies: each an optional part of a sweep, a folder that declares itself once.

A study (``serving``, ``speculative``, ``prefix``, ``parallel``) is turned on by a config
table; its folder (``sweeps.studies.<name>``) declares its ``STUDY`` (``base.Study``) and the
records of its axes (the serving study's schedulers, the speculative drafts, the prefix
tiers). ``STUDIES`` is the one registry of studies the core iterates (config resolution, the
unknown-key messages, the grid's attrs, the scalar loop). The shipped example configs are
``sweeps/examples``, not studies. Imports nothing heavy.
"""

from __future__ import annotations

from sweeps.studies import parallel, prefix, serving, speculative
from sweeps.studies.base import Study

STUDIES: tuple[Study, ...] = (serving.STUDY, speculative.STUDY, prefix.STUDY, parallel.STUDY)
"""Every study, in the order their tables are resolved."""

BY_NAME: dict[str, Study] = {study.name: study for study in STUDIES}
"""Every study by its name."""

__all__ = ["BY_NAME", "STUDIES", "Study"]
