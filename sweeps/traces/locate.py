"""Where a trace a config names lives: a path relative to the config file, inside its folder,
or the name of a shipped slice (``sweeps.traces.data``), so that a shipped example copied by
``sweeps init`` still finds its trace. A path that leads outside the config's folder, or to
no file, is refused with the file, the key, the value and what is allowed."""

from __future__ import annotations

from pathlib import Path

from sweeps.errors import TraceError
from sweeps.traces.data import SLICES, shipped


def locate(value: str, config: str | Path, key: str) -> Path:
    """The trace file ``value`` names in the config file ``config`` under ``key``."""
    base = Path(config).parent.resolve()
    found = (base / value).resolve()
    allowed = f"allowed: a file inside {base} or a shipped slice ({', '.join(SLICES)})"
    if not found.is_relative_to(base):
        msg = f"{config}: {key} = {value!r} leads outside the config's folder; {allowed}"
        raise TraceError(msg)
    if found.is_file():
        return found
    if value in SLICES:
        return shipped(value)
    msg = f"{config}: {key} = {value!r}: no such file ({found}); {allowed}"
    raise TraceError(msg)
