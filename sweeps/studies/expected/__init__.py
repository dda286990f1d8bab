"""The expected study: step times from measured kernels beside every bound (``[axes] engine``,
the ``measured`` extra; docs/expected.md).

``STUDY`` is the one face the core sees; ``step`` composes one step from the measured kernels
of the operations the cost model counts, ``expected`` declares the two tables
(expected.parquet, kernels.parquet) beside their compute; ``speculative`` speculative
decoding on those steps (speculative_expected.parquet, where the sweep also speculates);
``steps`` prices any step a scheduler
runs, ``priced`` the named schedulers on those steps and ``served`` their table
(serving_expected.parquet, where the sweep also has ``[serving]``) and ``pools`` the devices a
load needs by expectation (pools_expected.parquet), ``simulated`` those plans replayed by the
simulator on expected step costs (simulated_expected.parquet, with ``[serving] simulate``),
``prefixed`` the hit prefill with its cached tokens skipped (prefix_expected.parquet, where the
sweep also has ``prefix_hit_rate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sweeps.studies.base import Study
from sweeps.studies.expected.expected import EXPECTED, KERNELS
from sweeps.studies.expected.pools import POOLS_EXPECTED
from sweeps.studies.expected.prefixed import PREFIX_EXPECTED
from sweeps.studies.expected.served import SERVING_EXPECTED
from sweeps.studies.expected.simulated import STEP
from sweeps.studies.expected.speculative import SPECULATIVE_EXPECTED
from sweeps.studies.expected.table import OPERATION, ExpectedKeys


def _engine_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[tuple[str, str]]]:
    """The engine labels checked against what the database holds for each device."""
    from sweeps.measured.database import choices  # the package's files: not at import

    engines, problems = choices(tuple(values["engine"]), tuple(axes.get("hardware", ())))
    return {"engine": engines}, problems


STUDY = Study(
    name="expected",
    table="axes",
    keys=ExpectedKeys,
    more_axes=(OPERATION,),
    description="Expected step times from measured kernels (the measured extra), engine by "
    "engine: expected.parquet and kernels.parquet",
    records=_engine_records,
    analyses=(
        EXPECTED,
        KERNELS,
        SPECULATIVE_EXPECTED,
        SERVING_EXPECTED,
        POOLS_EXPECTED,
        PREFIX_EXPECTED,
    ),
    post_steps=(STEP,),
)
