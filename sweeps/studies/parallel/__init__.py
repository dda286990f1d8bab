"""The parallel study: expert parallelism with data-parallel attention, pipeline stages
(``[axes] ep``, ``dp_attention``, ``pp``; docs/parallel.md).

``STUDY`` is the one face the core sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sweeps.studies.base import Study
from sweeps.studies.parallel.parallel import PARALLEL
from sweeps.studies.parallel.table import ParallelKeys


def _listed(value: Any) -> list[Any]:
    """An axis's values, a range expanded."""
    return list(value.values()) if hasattr(value, "values") else list(value)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _check_parallel(table: Any, axes: Mapping[str, Sequence[Any]]) -> list[tuple[str, str]]:
    """What must divide: every model's routed experts by each ``ep`` (a dense model takes only
    ``ep = 1``), its query heads by each ``tp``, its layers by each ``pp``."""
    problems: list[tuple[str, str]] = []
    models = axes.get("models", ())
    wanted = {
        "ep": _listed(STUDY.given(table, "ep")),
        "tp": list(axes.get("tp", ())),
        "pp": _listed(STUDY.given(table, "pp")),
    }
    for key, values in wanted.items():
        for model in models:
            whole = {
                "ep": model.experts if model.is_moe else 1,
                "tp": model.heads,
                "pp": model.layers,
            }[key]
            what = {"ep": "routed experts", "tp": "query heads", "pp": "layers"}[key]
            bad = [v for v in values if whole % v]
            if bad:
                dense = key == "ep" and not model.is_moe
                what += " (a dense model: no experts to split)" if dense else ""
                problems.append(
                    (
                        key,
                        f"{bad} do not divide the {whole} {what} of model {model.id!r}; "
                        f"allowed: {_divisors(whole)}",
                    )
                )
    return problems


STUDY = Study(
    name="parallel",
    table="axes",
    keys=ParallelKeys,
    check=_check_parallel,
    analyses=(PARALLEL,),
    description="Expert parallelism with data-parallel attention, pipeline stages: "
    "parallel.parquet, every table per rank of a tp x ep x pp replica",
    defaults={"ep": (1,), "dp_attention": (False,), "pp": (1,)},
)
