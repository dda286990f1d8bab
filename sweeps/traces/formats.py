"""The request-trace formats ``sweeps`` reads, each declared once: its columns, its clock and
what its own documentation says about failed and empty requests.

A format is recognised by its columns (a CSV's header, a JSONL file's first record) or named
(``format = "..."``). Every format gives, per request, an arrival time, prompt tokens and
output tokens; Mooncake's adds the prompt's prefix-block hashes.

- ``sweeps``: the package's own CSV, ``arrival_s, prompt_tokens, output_tokens`` (what
  ``simulate.write_trace`` writes). Times are seconds as written (its origin is the
  writer's); every length must be at least 1.
- ``lengths``: the package's CSV of lengths alone, ``prompt_tokens, output_tokens`` (what
  ``simulate.write_lengths`` writes): no times (all 0); every length at least 1.
- ``azure``: Azure LLM inference traces (AzurePublicDataset), ``TIMESTAMP, ContextTokens,
  GeneratedTokens``; the 2023 layout's wall-clock time has 7 decimals, the 2024 layout's
  carries a UTC offset (``+00:00``); both read alike (``azure-2023``, ``azure-2024`` name it
  too). The dataset documents no failed requests; a row of 0 tokens either way is no request
  to serve: dropped and counted.
- ``burstgpt``: BurstGPT, ``Timestamp, Model, Request tokens, Response tokens, Total tokens,
  Log Type``, seconds from the trace's start. Its README counts a request with 0 response
  tokens as failed: dropped and counted as failed; 0 request tokens: dropped and counted.
- ``mooncake``: Mooncake (FAST'25) JSONL, one ``{"timestamp": ms, "input_length",
  "output_length", "hash_ids": [...]}`` a line; ``hash_ids`` are the prompt's 512-token
  prefix blocks (equal ids at the same position: the same prefix). A zero length: dropped and
  counted.

Times become seconds from the first request (``sweeps``: as written).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Clock = Literal["seconds", "milliseconds", "datetime"]
"""How a format writes its times: seconds, integer milliseconds, or wall-clock text."""

ZeroRule = Literal["error", "drop", "failed"]
"""A length of 0: an error, a row dropped (counted as ``zero-length``), or a failed request
(dropped, counted as ``failed``)."""


@dataclass(frozen=True)
class Format:
    """One trace format: the source's names of the three columns and how to read them.

    name : The name ``format = ...`` takes
    time, prompt, output : The source's columns (keys, for JSONL) of the arrival time, the
        prompt tokens and the output tokens
    clock : How the time is written
    zero_prompt, zero_output : What a length of 0 means in this source
    hashes : The key of the prompt's prefix-block hashes (None: the format has none)
    block_tokens : Tokens a prefix block holds [token]
    jsonl : One JSON record a line (else a CSV with a header)
    shift : Times from the first request (False: as written)
    """

    name: str
    time: str | None
    prompt: str
    output: str
    clock: Clock
    zero_prompt: ZeroRule
    zero_output: ZeroRule
    hashes: str | None = None
    block_tokens: int = 0
    jsonl: bool = False
    shift: bool = True

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns (keys) the format needs, the hashes last."""
        time = (self.time,) if self.time else ()
        return (*time, self.prompt, self.output, *((self.hashes,) if self.hashes else ()))

    @property
    def roles(self) -> dict[str, str]:
        """The columns by role: ``time`` (where there is one), ``prompt``, ``output``,
        ``hashes`` (where there are)."""
        named = {"time": self.time, "prompt": self.prompt, "output": self.output}
        return {r: c for r, c in (*named.items(), ("hashes", self.hashes)) if c}


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("sweeps", "arrival_s", "prompt_tokens", "output_tokens", "seconds", "error",
               "error", shift=False),
        Format("lengths", None, "prompt_tokens", "output_tokens", "seconds", "error", "error",
               shift=False),
        Format("azure", "TIMESTAMP", "ContextTokens", "GeneratedTokens", "datetime", "drop",
               "drop"),
        Format("burstgpt", "Timestamp", "Request tokens", "Response tokens", "seconds", "drop",
               "failed"),
        Format("mooncake", "timestamp", "input_length", "output_length", "milliseconds", "drop",
               "drop", hashes="hash_ids", block_tokens=512, jsonl=True),
    )
}  # fmt: skip
"""Every format read, by name."""

ALIASES = {"azure-2023": "azure", "azure-2024": "azure"}
"""Other names of a format (the two Azure layouts read alike)."""

NAMES: tuple[str, ...] = (*FORMATS, *ALIASES)
"""Every name ``format = ...`` takes."""


def named(name: str) -> Format | None:
    """The format called ``name`` (an alias too), or None."""
    return FORMATS.get(ALIASES.get(name, name))


def recognised(columns: list[str], jsonl: bool) -> Format:
    """The format of ``columns``: the first (in ``FORMATS``'s order) whose columns all appear,
    else the one most of whose columns do (to name what is missing)."""
    have = set(columns)
    kinds = [f for f in FORMATS.values() if f.jsonl == jsonl]
    whole = [f for f in kinds if set(f.columns) <= have]
    return whole[0] if whole else max(kinds, key=lambda f: len(set(f.columns) & have))
