"""The parallel study's keys of ``[axes]``: expert parallelism, data-parallel attention,
pipeline stages, each field's ``Axis`` row beside it (``sweeps.engine.axis.key_axis``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sweeps.engine.axis import key_axis
from sweeps.fields import AXIS_LENGTH, CountAxis, Strict


class ParallelKeys(Strict):
    """``[axes] ep``, ``dp_attention``, ``pp``: any of them turns the study on."""

    ep: Annotated[
        CountAxis | None,
        key_axis(
            "size",
            "device",
            "Expert-parallel ranks: the routed experts split over them (a replica is tp x ep x pp)",
            "ep",
        ),
    ] = Field(
        default=None,
        description="Expert-parallel ranks (MoE; each must divide every model's routed "
        "experts); turns on parallel.parquet, a replica is tp x ep x pp devices",
    )
    dp_attention: Annotated[
        Annotated[list[bool], AXIS_LENGTH] | None,
        key_axis(
            "name",
            "-",
            "Attention data-parallel: each ep rank holds it whole and decodes its own sequences",
            "dp attention",
        ),
    ] = Field(
        default=None,
        description="Attention data-parallel over the ep ranks (each its own sequences' "
        "cache) or tensor-parallel over all tp x ep devices (false, the default)",
    )
    pp: Annotated[
        CountAxis | None,
        key_axis("size", "device", "Pipeline stages of L / pp layers each", "pp"),
    ] = Field(default=None, description="Pipeline stages (each must divide every model's layers)")
