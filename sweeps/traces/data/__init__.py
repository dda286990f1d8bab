"""The trace slices shipped with the package (README.md beside them: sources, licences,
citations)."""

from __future__ import annotations

from pathlib import Path

from sweeps.errors import TraceError

SLICES: tuple[str, ...] = ("azure-conv-2023.csv", "mooncake-conversation.jsonl")
"""The shipped slices, by file name."""


def shipped(name: str) -> Path:
    """The path of the shipped slice ``name`` (one of ``SLICES``)."""
    if name not in SLICES:
        msg = f"{name!r} is no shipped trace (allowed: {', '.join(SLICES)})"
        raise TraceError(msg)
    return Path(__file__).parent / name
