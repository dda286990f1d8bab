"""A request trace as arrays: arrival times, lengths and, where the source has them, each
prompt's prefix-block hashes; with what was dropped on the way in, counted."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Trace:
    """Requests in arrival order.

    arrival : Arrival times, seconds from the first request (the ``sweeps`` format: as
        written) [s]
    prompt, output : Tokens of each request, each at least 1 [token]
    hashes : Every request's prefix-block hashes, one after another (None: the source has
        none); request ``i``'s are ``hashes[offsets[i]:offsets[i + 1]]``, its first block first
    offsets : Where each request's hashes start, ``n + 1`` of them (None with ``hashes``)
    block_tokens : Tokens a prefix block holds (0: no hashes) [token]
    format : The format read (``sweeps.traces.formats``)
    source : The file read (or what the trace was made from)
    rows : Rows (records) the file holds [1]
    dropped : Rows left out, by why (``failed``, ``zero-length``), as the format documents [1]
    """

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    hashes: np.ndarray | None = None
    offsets: np.ndarray | None = None
    block_tokens: int = 0
    format: str = "sweeps"
    source: str = "trace"
    rows: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        """Requests kept [1]."""
        return int(self.prompt.size)

    @property
    def has_hashes(self) -> bool:
        """Whether the trace says which prefix blocks each prompt holds."""
        return self.hashes is not None and self.offsets is not None

    def block_tokens_of(self) -> np.ndarray:
        """Tokens of each hashed block, in ``hashes``' order: ``block_tokens`` but the last
        block of a prompt, which holds the rest (``min(b, I - j b)``, at least 0) [token]."""
        if self.hashes is None or self.offsets is None:
            return np.zeros(0, np.int64)
        counts = np.diff(self.offsets)
        owner = np.repeat(np.arange(counts.size), counts)
        position = np.arange(self.hashes.size) - self.offsets[owner]
        rest = self.prompt[owner] - position * self.block_tokens
        return np.clip(rest, 0, self.block_tokens).astype(np.int64)
