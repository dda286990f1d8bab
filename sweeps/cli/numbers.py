"""Numbers as an engineer reads them: whole sequences, thousands separators, unit prefixes.

Units are spelled as the variable registry spells them (``FLOP/byte``, ``byte/s``); nothing here
converts a value, it only writes it.
"""

from __future__ import annotations

import math

_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_COUNT = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))
"""Prefixes of a plain count (parameters): billions are ``B``, as model cards write them."""

_TOLERANCE = 1e-9
"""Relative slack before rounding a batch up: 16.000000000001 sequences is 16, not 17."""


def si(value: float, unit: str) -> str:
    """``989 TFLOP/s``, ``3.35 Tbyte/s``: three significant digits and an SI prefix."""
    for factor, prefix in _SI:
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".rstrip()


def count(value: float) -> str:
    """``13 B``, ``1.5 T``, ``350 M``: a parameter count with a count prefix."""
    for factor, prefix in _COUNT:
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:,.0f}"


def whole_batch(value: float) -> int:
    """The first whole batch that reaches ``value`` sequences [sequence] (rounded up)."""
    return max(1, math.ceil(value * (1 - _TOLERANCE)))


def grouped(value: float, digits: int = 2) -> str:
    """``6,772.87``: thousands separators and ``digits`` decimals."""
    return f"{value:,.{digits}f}"


def binary(value: float, unit: str = "B") -> str:
    """``80.0 GiB``, ``448 MiB``: a size in binary prefixes, as memory is read."""
    for power, prefix in ((40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")):
        if abs(value) >= 2**power:
            return f"{value / 2**power:,.1f} {prefix}{unit}"
    return f"{value:,.0f} {unit}"
