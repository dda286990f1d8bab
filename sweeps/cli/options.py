"""Options shared by several commands, declared once, and the parsing of their values.

Only the CLI names its flags: a size the user wrote for ``--memory-budget`` is checked here,
with a message naming the flag, then handed to the library as a number of bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from sweeps.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(text: str) -> int:
    """``"2GiB"``, ``"512MB"``, ``"1.5e9"`` as a number of bytes [byte], for ``--memory-budget``.

    At least what a run holds before any grid (``sweeps.grid.memory.BASE_BYTES``).
    """
    from sweeps.grid.memory import BASE_BYTES

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in _UNITS:
        msg = (
            f"--memory-budget: cannot read {text!r} as a size; write e.g. 2GiB, 512MB or "
            f"1e9 (units: {', '.join(u for u in _UNITS if u)})"
        )
        raise ConfigError(msg)
    size = int(float(match.group(1)) * _UNITS[match.group(2)])
    if size < BASE_BYTES:
        msg = (
            f"--memory-budget: {text!r} is less than a run holds before any grid "
            f"({BASE_BYTES // 2**20} MiB: Python, numpy, xarray, Polars, numba); "
            f"allowed: at least {BASE_BYTES // 2**20}MiB"
        )
        raise ConfigError(msg)
    return size


def memory_budget_option(help_text: str) -> Callable[[F], F]:
    """The ``--memory-budget SIZE`` option, with the command's own ``help_text``."""
    return click.option("--memory-budget", default=None, metavar="SIZE", help=help_text)
