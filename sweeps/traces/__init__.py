"""``sweeps.traces``: production request traces read, and what they say about a workload.

Readers for the public formats (``read``, ``formats``), the trace as arrays (``trace``).
Pure data: no physics, no grid.
"""

from sweeps.traces.formats import FORMATS, NAMES, Format
from sweeps.traces.read import read_trace
from sweeps.traces.trace import Trace

__all__ = ["FORMATS", "NAMES", "Format", "Trace", "read_trace"]
