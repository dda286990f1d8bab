"""The speculative study's keys of ``[axes]``: ``k`` x ``alpha`` x draft, each field's ``Axis``
row beside it (``sweeps.engine.axis.key_axis``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sweeps.engine.axis import key_axis
from sweeps.fields import AXIS_LENGTH, DraftTokens, NameAxis, Probability, Strict
from sweeps.limits import MAX_SPEC_TOKENS


class SpeculativeKeys(Strict):
    """``[axes] spec_tokens``, ``spec_acceptance``, ``spec_draft``: any of them turns the study
    on."""

    spec_tokens: Annotated[
        Annotated[list[DraftTokens], AXIS_LENGTH] | None,
        key_axis("size", "token", "Draft tokens per verification step, k (0: plain decode)", "k"),
    ] = Field(
        default=None,
        description=f"Draft tokens per verification step k (0 to {MAX_SPEC_TOKENS}; 0: none); "
        "turns on speculative.parquet",
    )
    spec_acceptance: Annotated[
        Annotated[list[Probability], AXIS_LENGTH] | None,
        key_axis("value", "1", "Per-token acceptance probability of the draft, alpha", "alpha"),
    ] = Field(default=None, description="Per-token acceptance probability alpha [0, 1]")
    spec_draft: Annotated[
        NameAxis | None,
        key_axis(
            "name",
            "-",
            "Draft: ngram (prompt lookup), mtp (the model's own heads) or a draft model id",
            "draft",
        ),
    ] = Field(
        default=None,
        description="Drafts: 'ngram' (free), 'mtp' (the model's own heads), or a model id or "
        "[models.*] name smaller than every target",
    )
