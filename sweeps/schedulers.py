"""The serving table's modes, each declared once: a ``Scheduler`` record.

A mode of the serving table is the bound over every scheduler, a static batch, or a named
scheduler (docs/serving.md section 3). Everything that lists, checks, prices or simulates a mode
derives from its record here: the config's allowed names and their default
(``[serving] schedulers``), the ``mode`` and ``pool_mode`` axes and their description, the
closed form that prices it (``Scheduler.closed_form``, a function of
``sweeps.studies.serving.closed_forms``: ``PRICED``), the simulator's code
(``sweeps.studies.serving.simulate.kernel``), which need a token budget, the first round's aliases.

To add a named scheduler: its record in ``MODES`` (and its closed form, if it is new, in
``sweeps.studies.serving.closed_forms``; a simulated schedule, if it is new, in the kernel under a
new code). Imports nothing: ``sweeps validate`` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STATIC, SERIAL, BATCHED, PACED, GREEDY, HELD = 0, 1, 2, 3, 4, 5
"""The simulator's scheduler codes (``simulate.kernel``): ``HELD`` is ``chunked-paced`` where
random verify steps free its slots at random, chosen by the simulator, not by name."""


@dataclass(frozen=True, slots=True)
class Scheduler:
    """One mode of the serving table.

    name : Its name: a label of the ``mode`` axis, a value of ``[serving] schedulers``
    doc : One line, what it schedules
    closed_form : The function of ``sweeps.studies.serving.closed_forms`` that prices it
    code : The simulator's code (None: not a schedule the simulator runs, the bound)
    chunked : Whether each step mixes decodes and prompt chunks under a token budget (it needs
        ``chunk_tokens > 0``)
    named : Whether a config names it in ``[serving] schedulers`` (False: always there, and
        not a plan of the pools table: bound and static)
    aliases : The first round's names for it, still read where users wrote them
    """

    name: str
    doc: str
    closed_form: str
    code: int | None
    chunked: bool = False
    named: bool = True
    aliases: tuple[str, ...] = ()


MODES: tuple[Scheduler, ...] = (
    Scheduler(
        "bound",
        "no scheduler does better: every step's work at the best rate",
        "bound",
        None,
        named=False,
    ),
    Scheduler(
        "static",
        "a batch of B prompts prefilled together, then decoded until every one is done",
        "static",
        STATIC,
        named=False,
    ),
    Scheduler(
        "serial-prefill",
        "continuous batching, each prompt prefilled alone as its own step when a slot frees",
        "serial_prefill",
        SERIAL,
        aliases=("colocated",),
    ),
    Scheduler(
        "batched-prefill",
        "continuous batching, the waiting prompts with a free slot prefilled together",
        "batched_prefill",
        BATCHED,
    ),
    Scheduler(
        "chunked-paced",
        "every decode and a paced share of the budget's prompt tokens in each step",
        "chunked_paced",
        PACED,
        chunked=True,
        aliases=("chunked",),
    ),
    Scheduler(
        "chunked-greedy",
        "every decode, then the whole leftover budget to the waiting prompts (vLLM V1)",
        "chunked_greedy",
        GREEDY,
        chunked=True,
    ),
)
"""Every mode of the serving table, in the order of its ``mode`` axis."""

BY_NAME: dict[str, Scheduler] = {mode.name: mode for mode in MODES}
"""Every mode by its name."""

SCHEDULERS: tuple[str, ...] = tuple(mode.name for mode in MODES if mode.named)
"""The named schedulers, the values (and default) of ``[serving] schedulers``."""
CHUNKED: tuple[str, ...] = tuple(mode.name for mode in MODES if mode.chunked)
"""The schedulers that need a token budget (``chunk_tokens > 0``)."""
MODE_ALIASES: dict[str, str] = {alias: mode.name for mode in MODES for alias in mode.aliases}
"""The first round's mode names, still read where users wrote them."""
SERVING_MODES: tuple[str, ...] = tuple(mode.name for mode in MODES)
"""The modes of the serving table: the bound over every scheduler, a static batch, the named
schedulers; the chunked ones only with a token budget."""
POOL_MODES: tuple[str, ...] = (*SCHEDULERS, "disaggregated")
"""The plans of the pools table: one pool run by a named scheduler, or two pools."""
SCHEDULER_CODES: dict[str, int] = {m.name: m.code for m in MODES if m.code is not None}
"""The schedules the simulator runs, by name: their codes."""


def check_name(name: str) -> str:
    """``name`` if it is a named scheduler of ``[serving] schedulers`` (or a first round's
    alias), else a ``ValueError`` that lists the allowed names."""
    if name not in SCHEDULERS and name not in MODE_ALIASES:
        listed = ", ".join(repr(n) for n in (*SCHEDULERS, *MODE_ALIASES))
        msg = f"{name!r} is not a named scheduler; allowed: {listed}"
        raise ValueError(msg)
    return name


def canonical(names: list[str]) -> list[str]:
    """``names`` of ``[serving] schedulers`` as this round's, each once, in ``MODES``' order."""
    wanted = {MODE_ALIASES.get(name, name) for name in names}
    return [name for name in SCHEDULERS if name in wanted]


SCHEDULERS_DOC = (
    "Named schedulers of the serving and pools tables, besides bound and static (always "
    f"there): {', '.join(SCHEDULERS)} (the chunked ones need chunk_tokens > 0); the first "
    f"round's {' and '.join(MODE_ALIASES)} mean {' and '.join(MODE_ALIASES.values())}"
)
"""The description of ``[serving] schedulers`` (config reference, JSON Schema)."""

MODE_DOC = (
    "bound (no scheduler does better), static, or a named scheduler (" + ", ".join(SCHEDULERS) + ")"
)
"""The description of the ``mode`` axis."""


def serving_modes(sweep: Any) -> tuple[str, ...]:
    """The modes ``sweep`` asks for: bound, static, and its schedulers (chunked ones only with
    ``chunk_tokens > 0``)."""
    serving = sweep.studies.get("serving")
    if serving is None:
        return ()
    budget = serving.chunk_tokens > 0
    wanted = set(serving.schedulers)
    return tuple(
        mode.name
        for mode in MODES
        if not mode.named or (mode.name in wanted and (budget or not mode.chunked))
    )


def pool_modes(sweep: Any) -> tuple[str, ...]:
    """The plans of the pools table: the sweep's named schedulers, each on one pool, and
    disaggregated."""
    return (*(m for m in serving_modes(sweep) if m in SCHEDULERS), "disaggregated")
