"""``sweeps.traces``: production request traces read, and what they say about a workload.

Readers for the public formats (``read``, ``formats``), the trace as arrays (``trace``), the
exact LRU hit curve of its prefix blocks (``reuse``) and its workload described (``summary``).
Pure data: no physics, no grid. The names below load their module (and Polars) when first
used, so that ``sweeps --help`` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_NAMES = {
    "FORMATS": "formats",
    "NAMES": "formats",
    "Format": "formats",
    "Trace": "trace",
    "read_trace": "read",
    "HitCurve": "reuse",
    "hit_curve": "reuse",
    "describe": "summary",
}
"""Each public name and the module that declares it."""

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        msg = f"module 'sweeps.traces' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(import_module(f"sweeps.traces.{_NAMES[name]}"), name)


def __dir__() -> list[str]:
    return __all__
