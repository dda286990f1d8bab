"""The command line: argument parsing, progress, tables, exit codes. No formulas.

Importing it gives the process the settings of ``PROCESS_ENV`` (where the environment does
not set them already): the command owns its process, so it may, where a library imported into
someone else's process may not.
"""

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

for _name, _value in PROCESS_ENV.items():
    os.environ.setdefault(_name, _value)


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
