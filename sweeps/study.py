"""The studies of a sweep, declared once: a config table, the axes it adds, its objectives.

A *study* is an optional part of a sweep that a config turns on with a table of its own (or
with keys of ``[axes]``): ``[serving]`` turns on the serving and pools analyses. A ``Study``
declares, in one place, what the generic code needs to know about it:

- ``table``: the config table that holds its keys (``"serving"``; ``"axes"`` for a study whose
  axes sit among the grid's own, turned on when any of them is given);
- ``axes``: the dims of ``sweeps.axes.AXES`` whose values are keys of that table (each expanded
  like any axis, ranges included, and stored on the ``Sweep`` under the axis's field);
- ``attrs``: the settings recorded in the grid's attrs (the objectives the charts read);
- ``settings``: how the resolved settings are made from the validated table (what the
  analyses of the study read as ``Inputs.settings``);
- ``check``: cross-checks of the table against the rest of the sweep, as (key, message) pairs.

An analysis names its study (``Analysis.study``); it then runs only when the sweep has it, and
its compute reads the study's settings. Config resolution, the points cap, the unknown-key
messages, the grid's attrs and the scalar loop all read this table: nothing of a study is
threaded by hand through generic code. To add a study, see CONTRIBUTING.md.

Imports nothing heavy, so ``sweeps validate`` and ``sweeps --help`` stay fast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Records = Callable[
    [Mapping[str, tuple[Any, ...]], Mapping[str, Any], Mapping[str, Any]],
    tuple[dict[str, tuple[Any, ...]], list[tuple[str, str]]],
]
"""Labels of a study's axes turned into records: from its axes' values by dim, the sweep's
resolved axes by field (``models``, ``hardware``, ...) and the sources (``models``: the custom
model records, ``catalog``, ``config``: the validated file), the records by dim and the
problems found, each a key (relative to the table) and a message."""

Check = Callable[[Any, Mapping[str, Sequence[Any]]], list[tuple[str, str]]]
"""Cross-checks of a study's validated table against the sweep's resolved axes (by field):
the problems found, each a key (relative to the table) and a message."""


@dataclass(frozen=True, slots=True)
class Study:
    """One optional part of a sweep, turned on by a config table.

    name : Its name: the key of ``Sweep.studies`` and of ``Analysis.study``
    table : The config table holding its keys (``serving``, or ``axes`` when its axes sit
        among the grid's own)
    axes : Dims of ``sweeps.axes.AXES`` whose values are keys of ``table``
    attrs : Settings recorded in the grid's attrs (objectives, by key)
    settings : The resolved settings from the validated table (None: the table itself)
    check : Cross-checks of the table against the sweep's other axes (see ``Check``)
    description : One line, what it adds
    defaults : Values of its axes that the table leaves out (a study on ``[axes]`` is on when
        any of its axes is given; the others take these)
    records : Turns the labels of axes that name things (drafts, tiers) into records (see
        ``Records``); None: the values are the labels
    """

    name: str
    table: str
    axes: tuple[str, ...]
    attrs: tuple[str, ...] = ()
    settings: Callable[[Any], Any] | None = None
    check: Check | None = None
    description: str = ""
    defaults: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    records: Records | None = None

    def given(self, table: Any, dim: str) -> Any:
        """The value of axis ``dim`` in the validated ``table``, or its default."""
        value = getattr(table, dim, None)
        return self.defaults.get(dim) if value is None else value

    def present(self, table: Any) -> bool:
        """Whether a config whose ``table`` (the validated table, or None) turns the study on."""
        if table is None:
            return False
        if self.table != "axes":
            return True
        return any(getattr(table, dim, None) is not None for dim in self.axes)

    def resolve(self, table: Any) -> Any:
        """The study's resolved settings from its validated table."""
        return self.settings(table) if self.settings is not None else table


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


SERVING = Study(
    name="serving",
    table="serving",
    axes=("prompt_tokens", "output_tokens", "arrival_rate", "concurrency"),
    attrs=("ttft_slo_s", "tpot_slo_s"),
    defaults={"concurrency": ()},
    settings=lambda table: table.objectives(),
    check=_check_serving,
    description="Requests of I prompt and O output tokens: the serving and pools tables",
)


def _draft_records(*args: Any) -> tuple[dict[str, tuple[Any, ...]], list[tuple[str, str]]]:
    from sweeps.config.techniques import draft_records  # the catalog's records: not at import

    return draft_records(*args)


def _tier_records(*args: Any) -> tuple[dict[str, tuple[Any, ...]], list[tuple[str, str]]]:
    from sweeps.config.techniques import tier_records

    return tier_records(*args)


SPECULATIVE = Study(
    name="speculative",
    table="axes",
    axes=("spec_tokens", "spec_acceptance", "spec_draft"),
    description="Speculative decoding, k x alpha x draft over the decode grid: speculative.parquet",
    defaults={
        "spec_tokens": (0, 2, 4),
        "spec_acceptance": (0.6, 0.8),
        "spec_draft": ("ngram",),
    },
    records=_draft_records,
)

PREFIX = Study(
    name="prefix",
    table="axes",
    axes=("prefix_hit_rate", "kv_tier"),
    description="Prefix caching, hit rate x KV tier over the prefill grid: prefix.parquet",
    defaults={"prefix_hit_rate": (0.0, 0.5, 0.9), "kv_tier": ("hbm",)},
    records=_tier_records,
)


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
        "ep": _listed(PARALLEL.given(table, "ep")),
        "tp": list(axes.get("tp", ())),
        "pp": _listed(PARALLEL.given(table, "pp")),
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


PARALLEL = Study(
    name="parallel",
    table="axes",
    axes=("ep", "dp_attention", "pp"),
    check=_check_parallel,
    description="Expert parallelism with data-parallel attention, pipeline stages: "
    "parallel.parquet, every table per rank of a tp x ep x pp replica",
    defaults={"ep": (1,), "dp_attention": (False,), "pp": (1,)},
)


def _engine_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[tuple[str, str]]]:
    from sweeps.measured.database import choices  # the package's files: not at import

    engines, problems = choices(tuple(values["engine"]), tuple(axes.get("hardware", ())))
    return {"engine": engines}, problems


EXPECTED = Study(
    name="expected",
    table="axes",
    axes=("engine",),
    description="Expected step times from measured kernels (the measured extra), engine by "
    "engine: expected.parquet and kernels.parquet",
    records=_engine_records,
)

OPERATIONS: tuple[str, ...] = (
    "embedding",
    "qkv",
    "attention",
    "o_proj",
    "ffn_up",
    "ffn_down",
    "router",
    "experts",
    "allreduce",
    "lm_head",
)
"""The operations of a step the expected pass reads from measured kernels, in the order they
run (``sweeps.grid.expected``): the labels of the ``operation`` axis of kernels.parquet."""

STUDIES: tuple[Study, ...] = (SERVING, SPECULATIVE, PREFIX, PARALLEL, EXPECTED)
"""Every study, in the order their tables are resolved."""

BY_NAME: dict[str, Study] = {study.name: study for study in STUDIES}
"""Every study by its name."""

SCHEDULERS = ("serial-prefill", "batched-prefill", "chunked-paced", "chunked-greedy")
"""The named schedulers (docs/serving.md section 3), the values of ``[serving] schedulers``."""
CHUNKED = ("chunked-paced", "chunked-greedy")
"""The schedulers that need a token budget (``chunk_tokens > 0``)."""
MODE_ALIASES = {"colocated": "serial-prefill", "chunked": "chunked-paced"}
"""The first round's mode names, still read where users wrote them."""
SERVING_MODES = ("bound", "static", *SCHEDULERS)
"""The modes of the serving table: the bound over every scheduler, a static batch, the named
schedulers; the chunked ones only with a token budget."""
POOL_MODES = (*SCHEDULERS, "disaggregated")
"""The plans of the pools table: one pool run by a named scheduler, or two pools."""


def serving_modes(sweep: Any) -> tuple[str, ...]:
    """The modes ``sweep`` asks for: bound, static, and its schedulers (chunked ones only with
    ``chunk_tokens > 0``)."""
    serving = sweep.studies.get("serving")
    if serving is None:
        return ()
    budget = serving.chunk_tokens > 0
    wanted = set(serving.schedulers)
    return tuple(
        mode
        for mode in SERVING_MODES
        if mode in ("bound", "static") or (mode in wanted and (budget or mode not in CHUNKED))
    )


def pool_modes(sweep: Any) -> tuple[str, ...]:
    """The plans of the pools table: the sweep's named schedulers, each on one pool, and
    disaggregated."""
    return (*(m for m in serving_modes(sweep) if m in SCHEDULERS), "disaggregated")
