"""What a config may ask for: sweep names that cannot escape, sizes the engine can hold.

Every bound here is a module constant, stated in the messages that enforce it and in the JSON
Schema. The integer caps keep the engine's int64 arithmetic exact: the largest product of
inputs it forms, ``batch * context * layers * heads``, is at most
``2**18 * 2**24 * 2**10 * 2**10 = 2**62`` (below ``2**63``). Imports nothing heavy.
"""

from __future__ import annotations

import re

from sweeps.errors import ConfigError

SWEEP_NAME_MAX = 100
"""Longest sweep name [character]; the output folder is named after it."""

SWEEP_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
"""A sweep name: a letter or digit first, then letters, digits, ``.``, ``_`` or ``-``."""

RESERVED_MARKERS = (".tmp-", ".old-")
"""Substrings of the package's own staging and backup folder names, never in a sweep name."""

_SWEEP_NAME = re.compile(SWEEP_NAME_PATTERN)

_MARKERS = " or ".join(map(repr, RESERVED_MARKERS))
SWEEP_NAME_RULE = (
    f"a name starts with a-z or 0-9, holds only a-z, 0-9, '.', '_', '-', is at most "
    f"{SWEEP_NAME_MAX} characters long and never contains {_MARKERS}"
)
"""The rule of ``check_name`` in words, for messages and the JSON Schema."""

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

MAX_PROBLEMS = 50
"""Most problem lines one ``ConfigError`` lists; the rest are counted."""


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid sweep name, or None when it is one."""
    if len(name) > SWEEP_NAME_MAX:
        return f"{len(name)} characters is too long; {SWEEP_NAME_RULE}"
    if not _SWEEP_NAME.match(name):
        return SWEEP_NAME_RULE
    for marker in RESERVED_MARKERS:
        if marker in name:
            return f"{marker!r} marks the package's staging and backup folders; {SWEEP_NAME_RULE}"
    return None


def check_name(name: str, key: str = "sweep.name") -> None:
    """Raise ``ConfigError`` (naming ``key``, the name and the rule) unless ``name`` is valid.

    A valid name is a folder name that stays inside the output folder and cannot be taken for
    one of the package's staging or backup folders: ``SWEEP_NAME_PATTERN`` (so never ``.`` or
    ``..`` and never hidden), at most ``SWEEP_NAME_MAX`` characters, no ``RESERVED_MARKERS``.
    """
    problem = name_problem(name)
    if problem is not None:
        shown = name if len(name) <= 60 else name[:57] + "..."
        msg = f"{key}: {shown!r} is not a valid name: {problem}"
        raise ConfigError(msg)
