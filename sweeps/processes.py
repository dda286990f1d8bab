"""The command's own process: the environment it runs under and what it does as it starts and
ends. The ``sweeps`` command (``sweeps.cli``) and the bench's cold runs (``sweeps.bench``) call
these; a library imported into someone else's process does not, as the process is not its own.

Imports nothing but the standard library, so that ``set_environment`` can run before numpy.
"""

from __future__ import annotations

import os

PROCESS_ENV = {"NUMPY_MADVISE_HUGEPAGE": "0"}
"""Environment the ``sweeps`` command runs under (each read by its library at import, so set
before numpy is imported; ``sweeps bench`` runs its cold runs and the libraries' writes beside
them under the same). ``NUMPY_MADVISE_HUGEPAGE=0`` is numpy's own switch for its advice to the
kernel to back every array of 4 MiB or more with transparent huge pages: a run computing its
grid model by model allocates and frees such arrays by the thousand, and each first touch of
a huge page may wait for the kernel to compact memory. Measured on issue 14's 16.8 M-point
run, five alternating cold runs each (2 December, idle two cores): 14.05-15.04 s and
5.6-6.5 s of system time with the advice, 12.38-13.11 s and 2.5-3.2 s without; the
libraries' own writes of the same outputs took the same time either way (7.6-7.7 s)."""


def set_environment() -> None:
    """``PROCESS_ENV``'s settings, each unless the environment sets it: called before numpy is
    imported (``sweeps.cli`` calls it as it is imported)."""
    for name, value in PROCESS_ENV.items():
        os.environ.setdefault(name, value)


PROCESS_MALLOC = (
    ("MALLOC_ARENA_MAX", -8, 1),
    ("MALLOC_MMAP_THRESHOLD_", -3, 32 << 20),
    ("MALLOC_TRIM_THRESHOLD_", -1, 1 << 30),
)
"""glibc's allocator settings for the command's process, each as (the variable by which a
user sets it at start-up, ``mallopt``'s number for it, the value): one arena for every
thread, blocks up to 32 MiB [byte] from the heap rather than from a mapping of their own,
and free memory kept unless 1 GiB [byte] of it lies at the heap's top. A run computes its
grid model by model on one thread while others write the last model's: each model's arrays
(16.8 MB each in issue 14's grid) were mapped afresh and returned to the system when freed,
in the arena of whichever thread freed them, so every model first-touched its memory anew,
a page fault per 4 KiB. With these settings, a model's arrays reuse the last one's memory.
Measured on issue 14's 16.8 M-point run, four alternating cold runs each (3 December, two
cores): page faults 826-873 k -> 614-641 k, system time 6.1-9.7 -> 4.1-5.4 s, CPU time
30.9-32.9 -> 28.8-30.6 s, wall time 17.4-18.7 -> 16.2-17.4 s, peak RSS 2.50-2.61 ->
2.33-2.41 GB. A setting the user gives (its variable, or ``GLIBC_TUNABLES`` naming
``glibc.malloc``) is kept."""


def escape_unencodable() -> None:
    """stdout and stderr write a character their encoding cannot hold as an escape
    (``\\xe9``) instead of raising: a title in UTF-8 on a stream opened as ASCII
    (``PYTHONIOENCODING=ascii``, a C locale) ended in a traceback after the result was
    written. A stream that is not a text file of the interpreter's (a test's capture) is
    left as it is."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            reconfigure(errors="backslashreplace")


def start_process() -> None:
    """What the command does as it starts: unencodable characters escaped on its streams
    (``escape_unencodable``); ``PROCESS_MALLOC``'s settings, where the C library is glibc
    (elsewhere, nothing), each unless the environment sets it."""
    escape_unencodable()
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""  # glibc's own name for itself
    except (ValueError, OSError, AttributeError):  # no such name here (not glibc, not Unix)
        libc = ""
    if not libc.startswith("glibc") or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return
    import ctypes

    mallopt = ctypes.CDLL(None).mallopt
    for variable, parameter, value in PROCESS_MALLOC:
        if variable not in os.environ:
            mallopt(parameter, value)


def end_process() -> None:
    """What the command does as it ends, once its outputs are written and closed:
    ``gc.freeze()``, so that the interpreter's shutdown skips its last full collection.

    Every object left then (the imported libraries', the last result's) dies with the
    process, whose memory the system reclaims whole; the collection only spent time finding
    the cycles among them. Measured on issue 14's 16.8 M-point run (2 December, idle two
    cores): from the end of the run to the process's exit 0.75-1.03 s without, 0.20-0.22 s
    with. Modules are still cleared and files still closed at shutdown as before: only
    garbage inside reference cycles is left to the system.
    """
    import gc

    gc.freeze()
