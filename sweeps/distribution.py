"""The name the package is installed by: ``roofline-sweeps`` on the package index (``sweeps``
there is another project, a hyperparameter sweeps engine). The import name and the command
stay ``sweeps``."""

VERSION = "0.1.0"
"""The version: written here once (``pyproject.toml`` reads it, ``sweeps.__version__`` is it,
the command prints it)."""

DISTRIBUTION = "roofline-sweeps"
"""The distribution name: ``pip install roofline-sweeps``, ``roofline-sweeps[duckdb]``."""

FORMER = "sweeps"
"""The distribution name of installs made before the rename (an editable checkout)."""


def install_line(extra: str | None = None) -> str:
    """``pip install 'roofline-sweeps[extra]'``: the one spelling of how to get it."""
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install {DISTRIBUTION}"
