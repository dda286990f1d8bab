"""The dask cluster of ``--scheduler`` / ``--workers``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sweeps.cli.errors import BadArguments, RunFailed

CONNECT_TIMEOUT = 10.0
"""Seconds a scheduler has to answer before the run is reported as failed [s]."""


SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
"""Schemes a remote dask scheduler is reached by (``inproc://`` is in-process only)."""


def scheduler_address(text: str) -> str:
    """``--scheduler``'s address, checked before any connection: ``[scheme://]host:port``
    with a scheme of ``SCHEMES``; the dashboard's URL a user copies (``http://host:8787/...``)
    is refused with the scheduler's usual address, ``tcp://host:8786``."""
    from urllib.parse import urlsplit

    shown = repr(text)
    allowed = (
        "allowed: [tcp|tls|ws|wss|ucx://]host:port, e.g. tcp://10.0.0.5:8786 or tcp://[::1]:8786"
    )
    spelled = text if "://" in text else f"tcp://{text}"
    try:
        parts = urlsplit(spelled)
        port = parts.port
    except ValueError as error:
        msg = f"--scheduler {shown}: not an address ({error}); {allowed}"
        raise BadArguments(msg) from None
    if parts.scheme in ("http", "https"):
        host = parts.hostname or "host"
        msg = (
            f"--scheduler {shown}: a web address (the dashboard's?); the scheduler itself "
            f"listens on tcp://{host}:8786 by default; {allowed}"
        )
        raise BadArguments(msg)
    if (
        parts.scheme not in SCHEMES
        or not parts.hostname
        or port is None
        or parts.path
        not in (
            "",
            "/",
        )
    ):
        msg = f"--scheduler {shown}: not a scheduler address; {allowed}"
        raise BadArguments(msg)
    return spelled.rstrip("/")


QUIET = ("distributed", "tornado", "asyncio")
"""Loggers quieted while a run uses a cluster (dask's, and its event loop's ``Task exception
was never retrieved`` for a gather cut short): a lost scheduler or worker is said in one line
(``sweeps.pipeline.distributed.ClusterLost``), not dask's log of reconnection attempts."""


@contextmanager
def _quiet(timeout: float) -> Iterator[None]:
    """dask's loggers at CRITICAL and ``sweeps.cluster-timeout`` set inside; as before after."""
    import logging

    import dask

    known = list(logging.root.manager.loggerDict)
    loggers = [logging.getLogger(name) for name in known if name.split(".")[0] in QUIET] + [
        logging.getLogger(name) for name in QUIET
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        with dask.config.set({"sweeps.cluster-timeout": timeout}):
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@contextmanager
def cluster(
    scheduler: str | None, workers: int | None, timeout: float | None = None
) -> Iterator[Any]:
    """A dask ``Client`` for ``--scheduler`` or ``--workers``, else ``None``; inside, dask's
    log is quiet and a run waits ``timeout`` [s] for a cluster without workers
    (``--cluster-timeout``)."""
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
        msg = "--scheduler/--workers need the dask extra: pip install 'roofline-sweeps[dask]'"
        raise BadArguments(msg) from None
    from sweeps.pipeline.distributed import CLUSTER_TIMEOUT

    with _quiet(CLUSTER_TIMEOUT if timeout is None else timeout):
        yield from _client(scheduler, workers, Client, LocalCluster)


def _client(
    scheduler: str | None, workers: int | None, client_type: Any, local: Any
) -> Iterator[Any]:
    """The client of ``cluster`` (a generator: the caller's ``with`` spans its use)."""
    Client, LocalCluster = client_type, local
    if scheduler is not None:
        address = scheduler_address(scheduler)
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError, TypeError) as error:
            msg = (
                f"--scheduler {scheduler}: no answer within {CONNECT_TIMEOUT:g} s ({error}); "
                "check the address and that the scheduler is running"
            )
            raise RunFailed(msg) from None
        with client:
            _warm(client)
            yield client
        return
    with (
        _local(LocalCluster, workers) as local,
        Client(local) as client,
    ):
        _warm(client)
        yield client


def _warm(client: Any) -> None:
    """Have every worker import what its tasks run now, while this process imports its own
    (``sweeps.pipeline.distributed.warm``); not waited for."""
    from sweeps.pipeline.distributed import warm

    client.run(warm, wait=False)


UNSAMPLED = {"distributed.worker.profile.enabled": False}
"""dask config of a local cluster's workers: no statistical profiler (a stack sampled every
10 ms, for a dashboard a local cluster does not start): 12 % of the workers' CPU in a
9.4 M-row run, 11.8-12.7 CPU-s of tasks against 13.8-14.1 with it."""


@contextmanager
def _local(local: Any, workers: int | None) -> Iterator[Any]:
    """A local cluster of ``workers`` processes, a thread each, their config ``UNSAMPLED``:
    set for the cluster's life, as a nanny hands a worker it restarts the config it shares
    with this process."""
    import dask

    with (
        dask.config.set(UNSAMPLED),
        local(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster,
    ):
        yield cluster
