"""Settings of a process that ``sweeps`` owns: the command, and the benchmark's cold runs.

A library never changes its host process; the ``sweeps`` command owns its process, so it sets
these before numpy is imported (a setting the user made in the environment wins).

``NUMPY_MADVISE_HUGEPAGE=0``: numpy asks the kernel for transparent huge pages for every array
of 4 MiB or more. Where the kernel defragments on such a request (``defrag`` = ``madvise``, the
common default) and free huge pages are scarce, each first touch waits for compaction: on the
2-core machine of the README's figures, filling 1.2 GB of new arrays took 1.19 s with the
advice and 0.46 s without, and issue 14's 16.8 M-point grid 2.46 s and 1.00 s, the whole run
9.55 s and 7.73 s. A grid is written once in order and read once in order, so huge pages save
it few TLB misses: the advice costs more than it gives.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

ENVIRONMENT = {"NUMPY_MADVISE_HUGEPAGE": "0"}
"""Environment variables of a ``sweeps`` process, where the user has not set them."""


def tune_environment(environ: MutableMapping[str, str] = os.environ) -> MutableMapping[str, str]:
    """Set ``ENVIRONMENT`` in ``environ`` where it is not set already; returns ``environ``.
    Takes effect for numpy only before numpy is imported."""
    for name, value in ENVIRONMENT.items():
        environ.setdefault(name, value)
    return environ
