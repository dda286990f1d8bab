"""Charts drawn in worker processes, side by side, while the caller builds the next specs.

vl-convert holds the GIL for the whole of a conversion (Vega-Lite to SVG on its JavaScript
engine, SVG to PNG or PDF with resvg), so in one process a run's charts are drawn one at a time
and stall the Python that builds the next one. Here each spec is drawn, in every format it is
asked in, by one of ``WORKERS`` processes of its own: each a bare interpreter that imports
vl-convert alone, starts its engine as soon as it is started (``start`` starts them before a
run imports its modules and computes its grid), and answers requests over its pipes. They are
started with ``subprocess``, not ``multiprocessing``: nothing of the caller's ``__main__`` is run
again, so an unguarded user script is safe. A worker that cannot be started or stops answering is no
error: that chart is drawn in the caller (``sweeps.charts.rendering.render_spec``).
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from sweeps.signals import STOPPING, check

WORKERS = min(2, os.cpu_count() or 1)
"""Drawing processes: one per core, at most two (a slice has four charts; the caller builds
specs on a core too)."""

Request = tuple[dict[str, Any], tuple[str, ...], str | None, float]
"""A chart to draw: its spec, the formats (of ``svg``, ``png``, ``pdf``), the Vega-Lite
version, the PNG scale."""

WORKER = r"""
import os, pickle, sys, threading, time

def orphaned(parent=os.getppid()):  # the caller gone (even SIGKILLed): end, whatever runs
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(1)

threading.Thread(target=orphaned, daemon=True).start()
import vl_convert as vlc

def draw(spec, formats, vl_version, scale):
    svg = vlc.vegalite_to_svg(spec, vl_version=vl_version, allowed_base_urls=[])
    out = {"svg": svg.encode("utf-8")}
    if "png" in formats:
        out["png"] = bytes(vlc.svg_to_png(svg, scale=scale))
    if "pdf" in formats:
        out["pdf"] = bytes(vlc.svg_to_pdf(svg))
    return {f: out[f] for f in formats}

warm = {"data": {"values": [{"x": 1}]}, "mark": "point",
        "encoding": {"x": {"field": "x", "type": "quantitative"}}}
vlc.vegalite_to_svg(warm)  # start the engine before the first chart (another version: +30 ms)
read, write = sys.stdin.buffer, sys.stdout.buffer
while True:
    try:
        request = pickle.load(read)
    except EOFError:
        break
    try:
        answer = (True, draw(*request))
    except Exception as error:  # handed back and raised in the caller
        answer = (False, f"{type(error).__name__}: {error}")
    pickle.dump(answer, write, protocol=pickle.HIGHEST_PROTOCOL)
    write.flush()
"""


class _Worker:
    """One drawing process and its two pipes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.stdin: IO[bytes] = self.process.stdin  # type: ignore[assignment]
        self.stdout: IO[bytes] = self.process.stdout  # type: ignore[assignment]

    def draw(self, request: Request) -> dict[str, bytes]:
        pickle.dump(request, self.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.stdin.flush()
        ok, answer = pickle.load(self.stdout)
        if not ok:
            msg = f"charts: drawing a chart: {answer}"
            raise ValueError(msg)
        return dict(answer)

    def close(self) -> None:
        """End the process (its stdin closed, it returns) and close both pipes."""
        try:
            self.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            self.stdout.close()


Fallback = Callable[[Request], dict[str, bytes]]
"""Draws a request in the caller's process, where a worker cannot."""


class Drawers:
    """``WORKERS`` drawing processes; ``submit`` returns a future of ``{format: bytes}``."""

    def __init__(self, workers: int = WORKERS) -> None:
        self.idle: queue.SimpleQueue[_Worker | None] = queue.SimpleQueue()
        self.workers = [_Worker() for _ in range(workers)]
        for worker in self.workers:
            self.idle.put(worker)
        self.threads = ThreadPoolExecutor(workers, thread_name_prefix="sweeps-draw")

    def submit(self, request: Request, fallback: Fallback) -> Future[dict[str, bytes]]:
        """Draw ``request`` in the first idle process (waiting on its pipe releases the GIL),
        or with ``fallback`` where that process has died."""
        return self.threads.submit(self._draw, request, fallback)

    def _draw(self, request: Request, fallback: Fallback) -> dict[str, bytes]:
        """In an idle worker; where it has died, in a new one from then on, and this request
        here (``None`` in the queue: a worker that could not be replaced, draw here)."""
        check()  # the command is stopping: nothing more is drawn, here or there
        worker = self.idle.get()
        if worker is None:
            self.idle.put(None)
            return fallback(request)
        try:
            answer = worker.draw(request)
        except ValueError:  # the chart's own error: the worker is fine
            self.idle.put(worker)
            raise
        except (OSError, EOFError, pickle.PickleError):  # the process is gone
            worker.close()
            check()  # ended by the command's stop: not drawn again, here or in another
            self.idle.put(self._replacement())
            return fallback(request)
        self.idle.put(worker)
        return answer

    def _replacement(self) -> _Worker | None:
        try:
            worker = _Worker()
        except OSError:
            return None
        self.workers.append(worker)
        return worker

    def close(self) -> None:
        """Stop the threads, then the processes (they exit at the end of their input); once
        the command is stopping, the requests not yet drawn are cancelled."""
        self.threads.shutdown(wait=True, cancel_futures=STOPPING.is_set())
        for worker in self.workers:
            worker.close()


DRAWN = ("svg", "png", "pdf")
"""The formats the workers draw (HTML is a page around the spec, written by the caller)."""

_POOL: dict[str, Drawers | None] = {}
_LOCK = threading.Lock()


def drawers() -> Drawers | None:
    """This process's drawing processes, started on first use and stopped at exit; ``None``
    on one core or where they cannot be started (charts are drawn in the caller then)."""
    with _LOCK:
        if "pool" not in _POOL:
            _POOL["pool"] = None
            if WORKERS > 1:
                try:
                    pool = Drawers()
                except OSError:
                    return None
                atexit.register(pool.close)
                _POOL["pool"] = pool
        return _POOL["pool"]


def start(formats: Iterable[str]) -> None:
    """Start the drawing processes now if ``formats`` has one they draw: each takes about
    0.3 s to start its engine, in the background. A run calls this before it imports its
    heavy modules and computes its grid, so that the start-up overlaps them. Light: imports
    nothing but the standard library."""
    if set(DRAWN) & set(formats):
        drawers()
