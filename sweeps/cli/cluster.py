"""The dask cluster of ``--scheduler`` / ``--workers``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sweeps.cli.errors import BadArguments, RunFailed

CONNECT_TIMEOUT = 10.0
"""Seconds a scheduler has to answer before the run is reported as failed [s]."""


@contextmanager
def cluster(scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """A dask ``Client`` for ``--scheduler`` or ``--workers``, else ``None``."""
    if scheduler is not None and workers is not None:
        msg = (
            "--workers starts a local cluster and --scheduler names an existing one; "
            "give one of them"
        )
        raise BadArguments(msg)
    if scheduler is None and workers is None:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        msg = "--scheduler/--workers need the dask extra: pip install 'sweeps[dask]'"
        raise BadArguments(msg) from None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as error:
            msg = (
                f"--scheduler {scheduler}: no answer within {CONNECT_TIMEOUT:g} s ({error}); "
                "check the address and that the scheduler is running"
            )
            raise RunFailed(msg) from None
        with client:
            yield client
        return
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as local,
        Client(local) as client,
    ):
        yield client
