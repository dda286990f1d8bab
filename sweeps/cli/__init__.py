"""The command line: argument parsing, progress, tables, exit codes. No formulas.

Importing it gives the process the settings of ``sweeps.processes.PROCESS_ENV`` (where the
environment does not set them already); the command calls ``start_process`` as it starts and
``end_process`` as it ends (``sweeps.processes``). The command owns its process, so it may,
where a library imported into someone else's process may not.
"""

from sweeps.processes import set_environment

set_environment()
