"""Options shared by several commands, declared once, and the parsing of their values.

Only the CLI names its flags: a size the user wrote for ``--memory-budget`` is checked here,
with a message naming the flag, then handed to the library as a number of bytes. The value
types complete on the shell (catalog ids, config files) and refuse what the library cannot use
(a peak of ``inf``) before any work.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from click.shell_completion import CompletionItem

from sweeps.cli.errors import BadArguments, RunFailed
from sweeps.errors import ConfigError
from sweeps.pipeline.distributed import CLUSTER_TIMEOUT

F = TypeVar("F", bound=Callable[..., Any])

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


_LARGEST = float(2**62)

MAX_WORKERS = 4 * (os.cpu_count() or 1)
"""Most ``--workers`` of a local cluster [process]: four per core (each worker is a process
of its own, about 100 MB before any work; a billion of them grew until the kernel killed the
run)."""


MAX_BENCH_RUNS = 100
"""Most cold runs ``sweeps bench --runs`` takes: each is a full run-path grid (seconds), so
a hundred already take minutes; a billion would never end."""


def parse_size(text: str) -> int:
    """``"2GiB"``, ``"512MB"``, ``"1.5e9"`` as a number of bytes [byte], for ``--memory-budget``.

    At least what a run holds before any grid (``sweeps.grid.memory.BASE_BYTES``).
    """
    from sweeps.grid.memory import BASE_BYTES, base_holds

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in _UNITS:
        msg = (
            f"--memory-budget: cannot read {text!r} as a size; write e.g. 2GiB, 512MB or "
            f"1e9 (units: {', '.join(u for u in _UNITS if u)})"
        )
        raise ConfigError(msg)
    value = float(match.group(1)) * _UNITS[match.group(2)]
    if not value < _LARGEST:  # 1e999 is inf; no machine has 2**62 bytes
        msg = f"--memory-budget: {text!r} is larger than any machine; allowed: at most 4 EiB"
        raise ConfigError(msg)
    size = int(value)
    if size < BASE_BYTES:
        msg = (
            f"--memory-budget: {text!r} is less than a run holds before any grid "
            f"({base_holds()}); allowed: at least {BASE_BYTES // 2**20}MiB"
        )
        raise ConfigError(msg)
    return size


def memory_budget_option(help_text: str) -> Callable[[F], F]:
    """The ``--memory-budget SIZE`` option, with the command's own ``help_text``; the command
    reads it with ``budget`` (inside its error handling)."""
    return click.option("--memory-budget", default=None, metavar="SIZE", help=help_text)


def budget(text: str | None) -> int | None:
    """The ``--memory-budget`` given, in bytes, or None when it is not given (an empty value
    is a mistake, not the default: ``parse_size`` says so)."""
    return None if text is None else parse_size(text)


class PositiveFinite(click.ParamType):
    """A finite number > 0 (``inf``, ``nan``, ``0`` and negatives are refused, exit 2)."""

    name = "number"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"{value!r} must be a finite number > 0", param, ctx)
        return number


POSITIVE = PositiveFinite()


class Bounded(PositiveFinite):
    """A finite number in ``[low, high]``: what keeps a single point's arithmetic finite (no
    ``inf`` FLOPs, no ``nan`` ratio)."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        number = super().convert(value, param, ctx)
        if not self.low <= number <= self.high:
            self.fail(
                f"{value!r} is out of range; allowed: {self.low:g} to {self.high:g}", param, ctx
            )
        return number


def limited_int(limit: str) -> click.IntRange:
    """Integers from 1 to the config's limit ``limit`` (``sweeps.limits``, by name)."""
    from sweeps import limits

    return click.IntRange(min=1, max=int(getattr(limits, limit)))


class CatalogId(click.ParamType):
    """An id of the shipped catalog (``hardware`` or ``model``); completes on the shell.

    The value is checked where it is used, so a mistyped id gets the catalog's suggestion.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = f"{kind} id"

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        from sweeps.catalog import load_catalog, unique

        catalog = load_catalog()
        table = catalog.hardware if self.kind == "hardware" else catalog.models
        ids = [record.id for record in unique(table)]
        return [CompletionItem(i) for i in ids if i.startswith(incomplete)]


class ConfigPath(click.Path):
    """A config file: completes on ``*.toml`` files and on folders."""

    def __init__(self) -> None:
        super().__init__(path_type=Path)

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        folder, _, stem = incomplete.rpartition("/")
        base = Path(folder or ".")
        if not base.is_dir():
            return []
        items = []
        for path in sorted(base.iterdir()):
            if not path.name.startswith(stem) or path.name.startswith("."):
                continue
            shown = f"{folder}/{path.name}" if folder else path.name
            if path.is_dir():
                items.append(CompletionItem(shown + "/", type="dir"))
            elif path.suffix == ".toml":
                items.append(CompletionItem(shown, type="file"))
        return items


def configs_argument(function: F) -> F:
    """The ``CONFIGS...`` argument of ``run`` and ``validate``."""
    return click.argument("configs", nargs=-1, required=True, type=ConfigPath())(function)


def output_options(function: F) -> F:
    """``--json``, ``--quiet``/``-q`` and ``--verbose``/``-v``; the command gets ``output``."""
    from sweeps.cli.console import Output

    options = (
        click.option(
            "--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead."
        ),
        click.option("--quiet", "-q", is_flag=True, help="Print the results only, no status."),
        click.option("--verbose", "-v", count=True, help="Say more: timings, the plan."),
    )

    def wrapper(*args: Any, as_json: bool, quiet: bool, verbose: int, **kwargs: Any) -> Any:
        return function(*args, output=Output(as_json, quiet, verbose), **kwargs)

    return _stacked(functools.update_wrapper(wrapper, function), options)  # type: ignore[return-value]


def _stacked(function: F, options: Sequence[Callable[[F], F]]) -> F:
    """``function`` under every decorator of ``options``, the first listed first in ``--help``."""
    for option in reversed(options):
        function = option(function)
    return function


def _bench_lines(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--only``'s letters checked (``sweeps.bench.chosen``): an unknown one is a usage
    error naming it and the allowed ones."""
    from sweeps.bench import chosen

    try:
        chosen(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    return value


def bench_options(function: F) -> F:
    """``sweeps bench``'s options: ``--quick``, ``--json``, ``--e2e-budget``, ``--runs`` and
    ``--only``."""
    options = (
        click.option(
            "--quick",
            is_flag=True,
            help="Smaller grids (about a minute on 2 cores), for smoke checks.",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON."),
        click.option(
            "--e2e-budget",
            default="2GiB",
            show_default=True,
            metavar="SIZE",
            help="Memory budget of the end-to-end run.",
        ),
        click.option(
            "--runs",
            default=1,
            show_default=True,
            type=click.IntRange(min=1, max=MAX_BENCH_RUNS),
            help="Cold runs of each run-path grid (f), for the spread of their ratios.",
        ),
        click.option(
            "--only",
            default=None,
            metavar="LETTERS",
            callback=_bench_lines,
            help="Measure only these lines, by the letters the bench prints, e.g. 'em'.",
        ),
    )
    return _stacked(function, options)


def cluster_options(function: F) -> F:
    """``--scheduler ADDRESS`` and ``--workers N`` (they exclude each other), and
    ``--cluster-timeout SECONDS``."""
    options = (
        click.option(
            "--scheduler",
            default=None,
            metavar="ADDRESS",
            help="Evaluate on this dask.distributed scheduler (needs the dask extra).",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=1, max=MAX_WORKERS),
            default=None,
            help=f"Evaluate on a local dask cluster of N workers, 1 to {MAX_WORKERS} "
            "(needs the dask extra).",
        ),
        click.option(
            "--cluster-timeout",
            type=click.FloatRange(min=1.0),
            default=CLUSTER_TIMEOUT,
            show_default=True,
            metavar="SECONDS",
            help="Fail (exit 1) once the cluster has had no worker, or its scheduler has not "
            "answered, for this long.",
        ),
    )
    return _stacked(function, options)


def out_options(receives: str) -> Callable[[F], F]:
    """``--out DIR`` and ``--force``: where a result goes (``DIR/<receives>``: a local
    folder, a ``file://`` URL or a URL of an installed fsspec protocol) and whether it may
    replace one."""

    def decorate(function: F) -> F:
        function = click.option("--force", is_flag=True, help="Replace an existing result.")(
            function
        )
        return click.option(
            "--out",
            type=str,
            default="outputs",
            show_default=True,
            callback=url_callback,
            help=f"Folder that receives {receives} (a local folder, a file:// URL or a URL of "
            "an installed fsspec protocol).",
        )(function)

    return decorate


out_option = out_options("<sweep name>/")
"""``--out`` and ``--force`` of ``sweeps run``: a folder or a URL."""


def url_callback(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> Path | str | None:
    """``out_place`` (``None`` where the option is not given), its refusal as click's (exit
    2, before the command starts)."""
    from sweeps.errors import SweepsError

    if value is None:
        return None
    try:
        return out_place(value)
    except SweepsError as error:
        raise click.BadParameter(str(error)) from None


def out_place(text: str) -> Path | str:
    """``--out`` of a command that writes a result folder: a local folder (a path, or a
    ``file://`` URL's path), or the URL of another installed fsspec protocol, checked
    (``sweeps.pipeline.remote.open_url``: fsspec missing, a protocol that does not open, a
    path that climbs) and returned as given. A path like ``memory://x`` is never taken as
    the local folder ``memory:/x``."""
    from urllib.parse import unquote, urlsplit

    if "://" not in text:
        return Path(text)
    parts = urlsplit(text)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(unquote(parts.path))
    if parts.scheme == "file":
        msg = (
            f"{text}: a file:// URL of another host ({parts.netloc}); allowed: a local "
            "folder, a file:// URL (file:///abs/path) or a URL of an installed fsspec protocol"
        )
        raise BadArguments(msg)
    from sweeps.pipeline.remote import open_url

    open_url(text, "--out")
    return text


def writable(folder: Path) -> bool:
    """Whether this process may create files in ``folder``."""
    return os.access(folder, os.W_OK | os.X_OK)


def check_out(out: Path) -> None:
    """``--out`` must be a folder (or not exist yet) that this process can write."""
    if out.exists() and not out.is_dir():
        msg = (
            f"--out {out}: a file is there, not a folder; name a folder (it is created if missing)"
        )
        raise BadArguments(msg)
    existing = next((p for p in (out, *out.absolute().parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():  # a file where a folder must go
        msg = (
            f"--out {out}: {existing} is a file, not a folder, so no folder can be made "
            "under it; name a folder (it is created if missing)"
        )
        raise BadArguments(msg)
    if existing is not None and not writable(existing):
        msg = (
            f"--out {out}: {existing} cannot be written (read-only or no permission); "
            "choose a writable folder"
        )
        raise RunFailed(msg)


attention_option = click.option(
    "--attention-dtype",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "gemm", "bf16", "fp8", "int8", "fp4", "fp32"]),
    help="Peak that runs attention FLOPs: auto (the KV format's), gemm (the GEMMs' own) or one.",
)
"""``sweeps calibrate --attention-dtype``: the FP4 split's attention format."""

engine_option = click.option(
    "--engine",
    default=None,
    type=click.Choice(["source", "trtllm", "vllm", "sglang"]),
    help="Also the expected value of each row from measured kernels (the measured extra): "
    "source (the row's engine column, else the engine its source names) or the engine of "
    "rows that name none. Default: no expectation.",
)
"""``sweeps calibrate --engine``: expected values and their error beside the bounds."""
