"""The package's exceptions. The CLI maps them to exit codes; the library only raises them."""

from __future__ import annotations


class SweepsError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(SweepsError, ValueError):
    """A config file (or a value passed as one) is wrong: names the file, key and value."""


class CatalogError(SweepsError, LookupError):
    """A catalog id is unknown or a catalog data file is malformed."""


class OutputExistsError(SweepsError, FileExistsError):
    """The output folder exists and replacing it was not asked for (``--force``)."""


class ImportModelError(SweepsError, ValueError):
    """A Hugging Face ``config.json`` cannot be turned into a model spec."""


class MeasurementsError(SweepsError, ValueError):
    """A measurements file for ``calibrate`` is malformed: names the file, line and column."""


class WriteError(SweepsError, OSError):
    """An output file could not be written (a full disk, a writer's own failure): names the
    file; the run failed, its input was fine."""


class MissingExtraError(SweepsError, ImportError):
    """Something asked for needs an optional dependency that is not installed: names what
    asked, the extra and how to install it (a config's own need is a ``ConfigError``)."""


def install_hint(extra: str) -> str:
    """``pip install 'roofline-sweeps[extra]'``: the one spelling of how to get an extra (the
    end of a ``MissingExtraError``'s message; ``sweeps.distribution.install_line``)."""
    from sweeps.distribution import install_line

    return install_line(extra)


class TraceError(ConfigError):
    """A request trace is malformed or unreadable: names the file, the line and the column
    (a ``ConfigError``: a trace is input a config or a command names)."""


class LeaseHeldError(WriteError):
    """Another commit holds the lease of a result on a URL (``sweeps.pipeline.remote``):
    names the result, the holder's run id and the lease's age; nothing was written."""
