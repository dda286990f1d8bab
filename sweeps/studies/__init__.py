"""The studies: each an optional part of a sweep, a folder that declares itself once.

A study (``serving``, ``speculative``, ``prefix``, ``parallel``) is turned on by a config
table; its folder (``sweeps.studies.<name>``) declares its ``STUDY`` (``base.Study``) and the
records of its axes (the serving study's schedulers, the speculative drafts, the prefix
tiers). ``STUDIES`` is the one registry of studies the core iterates (config resolution, the
unknown-key messages, the grid's attrs, the scalar loop). The shipped example configs are
``sweeps/examples``, not studies. Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

from sweeps.engine.axis import GRID_AXES, Axis
from sweeps.engine.decode import DECODE
from sweeps.engine.model import MODEL
from sweeps.engine.prefill import PREFILL
from sweeps.studies import expected, parallel, prefix, serving, speculative
from sweeps.studies.base import Study

STUDIES: tuple[Study, ...] = (
    serving.STUDY,
    speculative.STUDY,
    prefix.STUDY,
    parallel.STUDY,
    expected.STUDY,
)
"""Every study, in the order their tables are resolved."""

BY_NAME: dict[str, Study] = {study.name: study for study in STUDIES}
"""Every study by its name."""

CORE: tuple[Any, ...] = (MODEL, DECODE, PREFILL)
"""The analyses of every sweep (``sweeps.engine``)."""

ANALYSES: tuple[Any, ...] = (
    *CORE,
    *parallel.STUDY.analyses,
    *speculative.STUDY.analyses,
    *prefix.STUDY.analyses,
    *serving.STUDY.analyses,
    *expected.STUDY.analyses,
)
"""Every analysis, each after those it needs: the core's, then each study's (the serving
study's last: it reads the speculative, prefix and parallel terms). The one registry of
analyses the grid iterates (``sweeps.grid.analyses``)."""

STUDY_ORDER: tuple[str, ...] = ("expected", "speculative", "prefix", "parallel", "serving")
"""The studies whose axes follow the grid's own, in this order (the tables' columns and the
grid's dims follow it; the goldens hold it); a study not named here comes after them, in the
order of ``STUDIES``."""


def _studies_in_order() -> list[Any]:
    rank = {name: index for index, name in enumerate(STUDY_ORDER)}
    return sorted(STUDIES, key=lambda study: rank.get(study.name, len(rank)))


AXES: tuple[Axis, ...] = (
    *GRID_AXES,
    *(row for study in _studies_in_order() for row in study.axis_rows),
)
"""Every axis, in the canonical order: the grid's own, then each study's (its keys', then
those it adds); ``sweeps.axes`` derives the rest from it."""

DIMS: tuple[str, ...] = tuple(axis.dim for axis in AXES)
"""Every dim, in the canonical order (``Analysis.dims_over`` takes it)."""

__all__ = ["ANALYSES", "AXES", "BY_NAME", "CORE", "DIMS", "STUDIES", "Study"]
