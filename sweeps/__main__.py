"""``python -m sweeps``: the same as the ``sweeps`` command."""

from sweeps.cli.main import main

main()
