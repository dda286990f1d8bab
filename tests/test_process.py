"""``sweeps.process``: the settings of a process the ``sweeps`` command owns."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sweeps.process import ENVIRONMENT, tune_environment

PROBE = """
import sys
sys.argv = ["sweeps", "--version"]
from sweeps.cli.main import main
try:
    main()
except SystemExit:
    pass
import numpy
print(numpy._core.multiarray._get_madvise_hugepage())
"""


def test_unset_variables_are_set_and_the_users_own_are_kept() -> None:
    assert tune_environment({}) == ENVIRONMENT
    mine = {"NUMPY_MADVISE_HUGEPAGE": "1", "OTHER": "x"}
    assert tune_environment(mine) == {"NUMPY_MADVISE_HUGEPAGE": "1", "OTHER": "x"}


@pytest.mark.parametrize(("given", "advised"), [(None, "False"), ("1", "True")])
def test_the_command_turns_numpys_huge_page_advice_off_unless_the_user_set_it(
    given: str | None, advised: str
) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if given is not None:
        environ["NUMPY_MADVISE_HUGEPAGE"] = given
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=environ, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == advised
