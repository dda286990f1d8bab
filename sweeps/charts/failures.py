"""A chart that fails never costs the run: its figure is skipped with the one line saying which
and why, and the tables, the grid file, the other figures and the report are written.

A chart can fail while its spec is built (a builder meets a grid it was not written for) or
while it is drawn (vl-convert's JavaScript engine runs out of stack on a spec too big for it).
``built`` guards the first, ``failed`` turns either into a figure that is not drawn; the run's
status lines are ``skipped_line`` of each (``sweeps.pipeline.RunResult.notes``). A wrong
``[outputs.figures]`` setting is the user's input, not a chart's failure: it is raised as it
was (``ConfigError``), and the CLI exits 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sweeps.errors import ConfigError

from .report import Figure

REASON_CHARS = 240
"""The longest reason a status line and the report quote [character]."""


ROWS_ADVICE = (
    "too many points to draw even at two batches ({rows}); fewer values on the config's "
    "other axes (devices, tp, context, [serving] workloads) draw it, and the Parquet files "
    "have every point"
)
"""What a user can do about a chart over Altair's row limit (never Altair's own advice)."""


def why(error: BaseException) -> str:
    """``error`` in one line: its type and the first line of its message, shortened [-];
    Altair's row limit in words a command-line user can act on."""
    if type(error).__name__ == "MaxRowsError":
        found = re.search(r"\((\d+)\)", str(error))
        rows = f"{int(found.group(1)):,} rows" if found else "over the row limit"
        return ROWS_ADVICE.format(rows=rows)
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    # vl-convert's messages wrap the engine's: its first line says "conversion failed", the
    # JavaScript error (RangeError: Maximum call stack size exceeded) comes next
    text = "; ".join(lines[:2]) if lines else "no message"
    text = f"{type(error).__name__}: {text}"
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def failed(figure: Figure, error: BaseException | str) -> Figure:
    """``figure`` not drawn because of ``error``: no spec, the reason naming the chart."""
    reason = error if isinstance(error, str) else why(error)
    return replace(figure, spec=None, reason=f"chart {figure.stem} failed: {reason}", failed=True)


def built(
    stem: str,
    kind: str,
    model: str,
    hardware: str | None,
    build: Callable[..., dict[str, Any]],
    *args: Any,
    **kwargs: Any,
) -> Figure:
    """The figure whose spec ``build(*args, **kwargs)`` makes, or, where that raises, the
    figure not drawn saying why (a ``ConfigError`` is the user's and is raised)."""
    figure = Figure(stem, kind, model, hardware, None)
    try:
        return replace(figure, spec=build(*args, **kwargs))
    except ConfigError:
        raise
    except Exception as error:  # any failure of one chart: the run and the others go on
        return failed(figure, error)


def skipped_line(figure: Figure) -> str:
    """The run's status line of a figure that failed [-]."""
    return f"{figure.reason}; skipped (the tables and the other figures are written)"
