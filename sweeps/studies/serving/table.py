"""The ``[serving]`` table of a sweep config, the serving study's keys: its workload axes
(each field's ``Axis`` row beside it) and its objectives; ``MORE_AXES``, the axes of its
plans that are no key (the scheduler, the pools' devices and plan)."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator, model_validator

from sweeps import limits, schedulers
from sweeps.engine.axis import Axis, key_axis
from sweeps.fields import (
    AXIS_LENGTH,
    Bandwidth,
    BatchAxis,
    PositiveFloat,
    Rate,
    Strict,
    TokenAxis,
    TokensOrNone,
)
from sweeps.traces import formats as trace_formats

SchedulerName = Annotated[
    str,
    AfterValidator(schedulers.check_name),
    WithJsonSchema({"enum": [*schedulers.SCHEDULERS, *schedulers.MODE_ALIASES], "type": "string"}),
]
"""A named scheduler of ``[serving] schedulers`` (or a first round's alias), checked against
the registry (``sweeps.schedulers``)."""


class SimulatedLengths(Strict):
    """``[serving] lengths`` as a table: a lognormal of a CV, or an empirical CSV."""

    kind: Literal["lognormal", "uniform", "fixed"] | None = Field(
        default=None, description="Length distribution (lognormal needs cv)"
    )
    cv: PositiveFloat | None = Field(
        default=None, description="Coefficient of variation of a lognormal's lengths"
    )
    csv: str | None = Field(
        default=None, description="CSV of (prompt_tokens, output_tokens) pairs, drawn from"
    )

    @model_validator(mode="before")
    @classmethod
    def _named(cls, value: object) -> object:
        """``"fixed"`` or ``"uniform"`` stands for ``{ kind = ... }``."""
        if isinstance(value, str):
            if value not in ("fixed", "uniform"):
                msg = (
                    f'{value!r} is not a length distribution; allowed: "fixed", "uniform", '
                    '{ kind = "lognormal", cv = ... }, { csv = "lengths.csv" }'
                )
                raise ValueError(msg)
            return {"kind": value}
        return value

    @model_validator(mode="after")
    def _one_source(self) -> SimulatedLengths:
        if (self.kind is None) == (self.csv is None):
            msg = 'give either kind (with cv for "lognormal") or csv, not both or neither'
            raise ValueError(msg)
        if self.kind == "lognormal" and self.cv is None:
            msg = 'kind = "lognormal" needs cv (a number > 0)'
            raise ValueError(msg)
        if self.cv is not None and self.kind != "lognormal":
            msg = 'cv is the lognormal\'s: set kind = "lognormal"'
            raise ValueError(msg)
        return self


class Serving(Strict):
    """The objectives and links of ``[serving]``; also ``Sweep.studies["serving"]`` (one
    declaration: ``sweeps.studies.serving.STUDY`` makes it from the table)."""

    ttft_slo_s: PositiveFloat = Field(default=2.0, description="Time-to-first-token objective [s]")
    tpot_slo_s: PositiveFloat = Field(
        default=0.05, description="Time-per-output-token objective [s]"
    )
    chunk_tokens: TokensOrNone = Field(
        default=2048,
        description="Token budget of a chunked-prefill step [token]; 0 turns chunking off; "
        "else larger than the largest batch",
    )
    kv_link_bandwidth: Bandwidth = Field(
        default=50e9,
        description="KV hand-off bandwidth per device between pools [byte/s], at least "
        f"{limits.MIN_BANDWIDTH:g} (limits.MIN_BANDWIDTH)",
    )
    simulate: Annotated[int, Field(ge=0, le=10_000_000)] = Field(
        default=0,
        description="Requests simulated per cheapest plan (the serving study's simulator; "
        "simulated.parquet); 0: off",
    )
    lengths: SimulatedLengths = Field(
        default=SimulatedLengths(kind="fixed"),
        description='Request lengths of the simulations: "fixed" (I and O), "uniform" (on '
        '[1, 2m - 1]), { kind = "lognormal", cv = ... } or { csv = "lengths.csv" } (columns '
        "prompt_tokens, output_tokens; relative to the config file)",
    )
    slo_quantile: float = Field(
        default=0.9,
        gt=0,
        lt=1,
        description="The quantile at which the TTFT objective holds under load (0.5: the "
        "median; the means are reported beside), strictly between 0 and 1",
    )
    schedulers: list[SchedulerName] = Field(
        default=list(schedulers.SCHEDULERS), description=schedulers.SCHEDULERS_DOC
    )

    @field_validator("schedulers", mode="after")
    @classmethod
    def _canonical(cls, names: list[str]) -> list[str]:
        """The first round's names as this round's, each once, in the table's order."""
        return schedulers.canonical(names)


class ServingTable(Serving):
    """The ``[serving]`` table: the workload axes plus the objectives."""

    prompt_tokens: Annotated[
        TokenAxis, key_axis("size", "token", "Prompt tokens per request, I", "I")
    ] = Field(default=[512, 2048], description="Prompt tokens per request")
    output_tokens: Annotated[
        TokenAxis, key_axis("size", "token", "Output tokens per request, O", "O")
    ] = Field(default=[128, 512], description="Output tokens per request (>= 1)")
    arrival_rate: Annotated[
        Annotated[list[Rate], AXIS_LENGTH],
        key_axis("value", "request/s", "Requests arriving per second (Poisson)", "rate"),
    ] = Field(
        default=[1.0, 10.0],
        description=f"Poisson arrival rates [request/s], at least {limits.MIN_RATE:g} "
        "(limits.MIN_RATE); the default where concurrency "
        "is not given either",
    )
    concurrency: Annotated[
        BatchAxis | None,
        key_axis(
            "size",
            "request",
            "Closed-loop clients, each sending its next request when its last one ends",
            "clients",
        ),
    ] = Field(
        default=None,
        description="Closed-loop clients (each sends its next request when its last one ends, "
        "no think time), an alternative to arrival_rate: give one of the two",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_load(cls, value: object) -> object:
        """``arrival_rate`` or ``concurrency``, not both."""
        if isinstance(value, dict) and "arrival_rate" in value and "concurrency" in value:
            msg = (
                "give either arrival_rate (Poisson arrivals) or concurrency (closed-loop "
                "clients), not both"
            )
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _closed_loop(self) -> ServingTable:
        """With ``concurrency`` the load is closed-loop: no arrival-rate axis. A simulation's
        span, ``simulate`` requests at the slowest rate, within ``MAX_SIMULATED_SPAN_S``."""
        if self.concurrency is not None:
            object.__setattr__(self, "arrival_rate", [])
        slowest = min(self.arrival_rate, default=math.inf)
        if self.simulate / slowest > limits.MAX_SIMULATED_SPAN_S:
            msg = (
                f"simulate = {self.simulate:,} requests at arrival_rate {slowest:g} request/s "
                f"span {self.simulate / slowest:.3g} s; allowed: at most "
                f"{limits.MAX_SIMULATED_SPAN_S:g} s (limits.MAX_SIMULATED_SPAN_S): simulate "
                f"fewer requests or at a rate of at least "
                f"{self.simulate / limits.MAX_SIMULATED_SPAN_S:g} request/s"
            )
            raise ValueError(msg)
        return self

    def objectives(self) -> Serving:
        """The resolved settings of the study (``Sweep.studies["serving"]``): the table without its
        axes."""
        return Serving(**{name: getattr(self, name) for name in Serving.model_fields})


def _trace_format(name: str) -> str:
    """``name`` if ``sweeps.traces`` reads a format of that name, else a ``ValueError`` that
    lists the allowed names."""
    if name not in trace_formats.NAMES:
        listed = ", ".join(repr(n) for n in trace_formats.NAMES)
        msg = f"{name!r} is no trace format; allowed: {listed}"
        raise ValueError(msg)
    return name


TraceFormat = Annotated[
    str,
    AfterValidator(_trace_format),
    WithJsonSchema({"enum": list(trace_formats.NAMES), "type": "string"}),
]
"""A format ``sweeps.traces`` reads (``[workload] format``)."""


class WorkloadTable(Strict):
    """The ``[workload]`` table: a trace whose requests are the serving study's workload
    (``sweeps.studies.serving.trace``; docs/workloads.md)."""

    trace: str = Field(
        description="Trace file (any format sweeps workload reads): a path relative to the "
        "config file, inside its folder, or a shipped slice's name; its mean rate and lengths "
        "are the serving axes, its requests the simulations'"
    )
    format: TraceFormat | None = Field(
        default=None, description="The trace's format (default: recognised by its columns)"
    )
    rate_scale: Annotated[list[PositiveFloat], AXIS_LENGTH] = Field(
        default=[1.0],
        description="Multiples of the trace's load (its times divided by each): the arrival "
        "rates of the serving axis, and the replays' time scales",
    )


MODE = Axis(
    "mode",
    "studies",
    "name",
    "-",
    schedulers.MODE_DOC,
    "mode",
    derive=schedulers.serving_modes,
    most=len(schedulers.SERVING_MODES),
)
"""The serving table's scheduler (and bound) rows."""

POOL_MODE = Axis(
    "pool_mode",
    "studies",
    "name",
    "-",
    "colocated (one pool does both phases) or disaggregated (a prefill and a decode pool)",
    "plan",
    derive=schedulers.pool_modes,
    most=len(schedulers.POOL_MODES),
)
"""The pools table's plans: one pool per named scheduler, or disaggregated."""

MORE_AXES: tuple[Axis, ...] = (
    MODE,
    Axis(
        "prefill_hardware",
        "hardware",
        "name",
        "-",
        "Device of the prefill pool (the same as decode when colocated)",
        "prefill on",
    ),
    Axis(
        "prefill_tp", "tp", "size", "device", "Tensor-parallel degree of a prefill replica", "tp_p"
    ),
    Axis(
        "decode_hardware",
        "hardware",
        "name",
        "-",
        "Device of the decode pool (the same as prefill when colocated)",
        "decode on",
    ),
    Axis("decode_tp", "tp", "size", "device", "Tensor-parallel degree of a decode replica", "tp_d"),
    POOL_MODE,
)
"""The serving study's axes that are no key of ``[serving]``, after its keys'."""
