"""The expected study's key of ``[axes]``, ``engine`` (its ``Axis`` row beside it:
``sweeps.engine.axis.key_axis``), and ``OPERATION``, the axis of a step's operations that it
adds."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sweeps.engine.axis import Axis, key_axis
from sweeps.fields import NameAxis, Strict
from sweeps.measured.database import OPERATIONS


class ExpectedKeys(Strict):
    """``[axes] engine``: turns the study on."""

    engine: Annotated[
        NameAxis | None,
        key_axis(
            "name",
            "-",
            "Serving engine whose measured kernels give the expected times: trtllm, vllm or "
            "sglang (engine-version pins a version; default: the database's current one; "
            "sglang_deepep: SGLang with DeepEP, the wide-EP layout)",
            "engine",
        ),
    ] = Field(
        default=None,
        description="Engines whose measured kernels give expected times: 'trtllm', 'vllm', "
        "'sglang', or 'engine-version' (vllm-0.24.0); 'sglang_deepep' reads SGLang's wide-EP "
        "(DeepEP) tables; needs the measured extra; turns on expected.parquet",
    )


OPERATION = Axis(
    "operation",
    "engine",
    "name",
    "-",
    "Operation of a step: " + ", ".join(OPERATIONS),
    "operation",
    derive=lambda sweep: OPERATIONS if sweep.engine else (),
    most=len(OPERATIONS),
)
"""The operations of a step, on the expected pass's kernels table."""
