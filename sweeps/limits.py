"""What a config and a catalog may hold: names that cannot escape, sizes the engine can hold.

Every bound here is a module constant, stated in the messages that enforce it and in the JSON
Schema. The integer caps keep the engine's int64 arithmetic exact: the largest product of
inputs it forms, ``batch * context * layers * heads``, is at most
``2**18 * 2**24 * 2**10 * 2**10 = 2**62`` (below ``2**63``). Imports nothing heavy.
"""

from __future__ import annotations

import re

from sweeps.errors import ConfigError

NAME_MAX = 100
"""Longest name that becomes a file or folder [character]: a sweep (its result folder), a
model (its partition file), a device, a dtype. Well under a file system's 255 bytes, with the
package's own prefixes and suffixes (``model=``, ``.tmp-<pid>-<random>``) around it."""

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
"""Every such name, as the JSON Schema writes it: a letter or digit first, then letters,
digits, ``.``, ``_`` or ``-`` (so never ``.``, ``..``, hidden, or a path)."""

SWEEP_NAME_MAX = NAME_MAX
SWEEP_NAME_PATTERN = NAME_PATTERN
"""The sweep name's rule is the rule of every name (kept under its first spelling)."""

RESERVED_MARKERS = (".tmp-", ".old-")
"""Substrings of the package's own staging and backup folder names, never in a name."""

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
"""``NAME_PATTERN`` for Python, matched whole (``fullmatch``: a trailing newline, which
``$`` lets through, is refused); the length is checked on its own, with its own message."""

_MARKERS = " or ".join(map(repr, RESERVED_MARKERS))
NAME_RULE = (
    f"a name starts with a-z or 0-9, holds only a-z, 0-9, '.', '_', '-', is at most "
    f"{NAME_MAX} characters long and never contains {_MARKERS}"
)
"""The rule of ``check_name`` in words, for messages and the JSON Schema."""
SWEEP_NAME_RULE = NAME_RULE

MAX_AXIS_VALUES = 10**6
"""Most values one axis may hold, ranges included; checked before a range is expanded [1]."""

MAX_POINTS = 10**12
"""Most points of any one grid of a sweep (decode, prefill, serving, pools) [1]."""

MAX_SPEC_TOKENS = 64
"""Most draft tokens per verification step [token]; engines draft a handful (2-8)."""

MAX_BATCH = 2**18
"""Largest batch [sequence] (262,144)."""

MAX_TOKENS = 2**24
"""Largest token count: context, prompt, window, output, chunk budget [token] (16,777,216)."""

MAX_COUNT = 2**10
"""Largest layer, head, KV-head, tensor-parallel and experts-per-token count [1] (1,024)."""

MAX_EXPERTS = 2**16
"""Largest routed-expert count of a MoE layer [1] (65,536)."""

MAX_WIDTH = 2**20
"""Largest width: head dim, hidden size, latent ranks, group size [1] (1,048,576)."""

MAX_VOCAB = 2**24
"""Largest vocabulary [token] (16,777,216)."""

MAX_PARAMS = 1e15
"""Largest parameter count [1]."""

MAX_BYTES = 2**53
"""Largest memory capacity [byte] (8 PiB): byte counts stay exact in float64, and the memory
wall's batch (capacity over the smallest cache a sequence can hold) stays within int64."""

MIN_RATE = 1e-6
"""Slowest arrival rate [request/s] (one request in 11.6 days): a rate of 1e-300 made every
figure divided by it (a cost per token, a simulated span) overflow or lose its steps."""

MIN_BANDWIDTH = 1e3
"""Slowest bandwidth of a device, a tier or a link [byte/s] (1 kB/s): a byte count over
1e-300 byte/s is ``inf`` seconds (a TTFT, a reload time); at 1 kB/s the largest byte count
(``MAX_BYTES``) takes 9e12 s, finite, and so does everything derived from it."""

MIN_FLOPS = 1e3
"""Slowest peak of a device [FLOP/s]: as ``MIN_BANDWIDTH``, every time stays finite."""

MAX_SIMULATED_SPAN_S = 1e9
"""Longest simulated span [s], ``[serving] simulate`` requests over the slowest rate (about 32
years): float64 times there are 1.2e-7 s apart, so a step of a millisecond keeps four digits;
at 1e300 s a step vanished and every TTFT, TPOT and latency came out exactly 0."""

MIN_BITS = 1.0
"""Fewest bits per element of a number format [bit]; a smaller one lets the memory wall's
batch leave int64 (it overflowed to -9.2e18)."""

MAX_PROBLEMS = 50
"""Most problem lines one ``ConfigError`` lists; the rest are counted."""


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a file or folder of a result, or None when it can.

    The one rule of every name that becomes a file (sweep, model, device, dtype): checked
    when a config is validated, so no run fails on a name after computing.
    """
    if len(name) > NAME_MAX:
        return f"{len(name)} characters is too long; {NAME_RULE}"
    if not _NAME.fullmatch(name):
        return NAME_RULE
    for marker in RESERVED_MARKERS:
        if marker in name:
            return f"{marker!r} marks the package's staging and backup folders; {NAME_RULE}"
    return None


def shown(name: str, limit: int = 60) -> str:
    """``name`` as a message quotes it: ``repr`` (control characters escaped), cut to
    ``limit`` characters."""
    return repr(name if len(name) <= limit else name[: limit - 3] + "...")


def check_name(name: str, key: str = "sweep.name") -> None:
    """Raise ``ConfigError`` (naming ``key``, the name and the rule) unless ``name`` is valid.

    A valid name is a folder or file name that stays inside the output folder and cannot be
    taken for one of the package's staging or backup folders: ``NAME_PATTERN`` (so never
    ``.`` or ``..`` and never hidden), at most ``NAME_MAX`` characters, no
    ``RESERVED_MARKERS``.
    """
    problem = name_problem(name)
    if problem is not None:
        msg = f"{key}: {shown(name)} is not a valid name: {problem}"
        raise ConfigError(msg)


MAX_KEY_PARTS = 16
"""Most parts of one dotted key or table header (``a.b.c`` has 3) [1]: the schema's deepest
key has 3; Python's TOML reader takes time and memory quadratic in a key's parts (a
20,000-part key: 23 s and 2.3 GB), so longer ones are refused before it reads the file."""

MAX_NESTING = 32
"""Deepest nesting of arrays and inline tables in a config [1] (the schema's deepest is 2)."""

_LEXEMES = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # multi-line basic string
    r"|'''(?:[^']|'(?!''))*'''"  # multi-line literal string
    r'|"(?:[^"\\\n]|\\.)*"'  # basic string (a quoted key too)
    r"|'[^'\n]*'"  # literal string
    r"|#[^\n]*"  # comment
    r"|[A-Za-z0-9_+:-]+(?:[ \t]*\.[ \t]*(?:[A-Za-z0-9_+:-]+|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'))*"
    r"|[\[\]{}]",
    re.DOTALL,
)
"""One pass over a TOML text: strings and comments (skipped whole), dotted runs of bare or
quoted words (a key, or a number: ``1.5`` is a run of two), brackets."""


def structure_problem(text: str) -> str | None:
    """Why ``text``'s structure is past ``MAX_KEY_PARTS`` or ``MAX_NESTING``, or None.

    Linear in the text, read before the TOML reader sees it. A run of words joined by dots
    outside strings is a key (a float such as ``1.5`` is a run of two parts, far below the
    limit); brackets outside strings are counted as they open and close.
    """
    depth = 0
    for match in _LEXEMES.finditer(text):
        lexeme = match.group()
        first = lexeme[0]
        if first in "[{":
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, match.start()) + 1
                return (
                    f"line {line}: arrays and tables nested too deeply "
                    f"(past {MAX_NESTING} levels); allowed: at most {MAX_NESTING} "
                    "(limits.MAX_NESTING)"
                )
        elif first in "]}":
            depth = max(0, depth - 1)
        elif first not in "\"'#":
            parts = lexeme.count(".") + 1 if "." in lexeme else 1
            if parts > MAX_KEY_PARTS and _dotted_parts(lexeme) > MAX_KEY_PARTS:
                line = text.count("\n", 0, match.start()) + 1
                return (
                    f"line {line}: a dotted key of {_dotted_parts(lexeme):,} parts "
                    f"({lexeme[:40]}...); allowed: at most {MAX_KEY_PARTS} parts "
                    "(limits.MAX_KEY_PARTS)"
                )
    return None


_PART = re.compile(r"[A-Za-z0-9_+:-]+|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'")


def _dotted_parts(run: str) -> int:
    """Parts of a dotted run (dots inside its quoted parts not counted)."""
    return len(_PART.findall(run))
