"""The measured kernel database: NVIDIA's aiconfigurator-core (Apache-2.0), the ``measured`` extra.

Below the grid, beside the catalog: it reads the package's data and answers latencies of
kernel shapes, with no physics. ``database`` maps the catalog's devices to the database's
systems and lists the engines (``trtllm``, ``vllm``, ``sglang``) and versions it holds;
``kernels`` reads one shape's latency and its basis (``measured``, ``interpolated``,
``extrapolated``). Nothing is imported from the package, nor any table read, until an engine
is asked for.
"""

from sweeps.measured.database import (
    ENGINES,
    PACKAGE,
    SYSTEMS,
    EngineChoice,
    Resolved,
    default_version,
    holdings,
    installed,
    parse,
    require,
    resolve,
    system_of,
    versions,
)

__all__ = [
    "ENGINES",
    "PACKAGE",
    "SYSTEMS",
    "EngineChoice",
    "Resolved",
    "default_version",
    "holdings",
    "installed",
    "parse",
    "require",
    "resolve",
    "system_of",
    "versions",
]
