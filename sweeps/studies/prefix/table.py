"""The prefix study's keys of ``[axes]``: hit rate x KV tier, each field's ``Axis`` row beside
it (``sweeps.engine.axis.key_axis``), and the trace a ``"trace"`` hit rate reads."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from sweeps.engine.axis import key_axis
from sweeps.fields import AXIS_LENGTH, NameAxis, Probability, Strict


class PrefixKeys(Strict):
    """``[axes] prefix_hit_rate``, ``kv_tier`` (either turns the study on), ``prefix_trace``."""

    prefix_hit_rate: Annotated[
        Annotated[list[Probability | Literal["trace"]], AXIS_LENGTH] | Literal["trace"] | None,
        key_axis(
            "value",
            "1",
            "Share of the prompt's tokens whose KV cache is already held, h",
            "hit rate",
        ),
    ] = Field(
        default=None,
        description="Share of prompt tokens whose cache is held [0, 1], or 'trace': the LRU "
        "hit rate of prefix_trace at each point's own cache (the memory the weights leave); "
        "turns on prefix.parquet",
    )
    prefix_trace: str | None = Field(
        default=None,
        description="Trace with prefix-block hashes (mooncake JSONL) whose LRU hit rate "
        "prefix_hit_rate = 'trace' takes: a path relative to the config file, inside its "
        "folder, or a shipped slice's name",
    )
    kv_tier: Annotated[
        NameAxis | None,
        key_axis(
            "name",
            "-",
            "Where a cached prefix lives: hbm, host, nvme or a [kv_tiers.*] table",
            "tier",
        ),
    ] = Field(
        default=None,
        description="Where a cached prefix lives: 'hbm', 'host' (the device's host link), "
        "'nvme', or a [kv_tiers.*] name",
    )

    @model_validator(mode="after")
    def _trace_alone(self) -> PrefixKeys:
        """``prefix_hit_rate = "trace"`` stands for ``["trace"]``."""
        if self.prefix_hit_rate == "trace":
            object.__setattr__(self, "prefix_hit_rate", ["trace"])
        return self
