"""The compiled roofline loop where no cache folder is writable (issue 15, item 6)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import pytest

from sweeps.config import parse_config
from sweeps.grid import build_grid, roof

CONFIG = """
[sweep]
name = "ro"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm", "b200"]
batch = [1, 64]
context = [1024]
"""


def test_no_writable_cache_falls_back_to_a_temporary_folder_said_once(monkeypatch):
    """A read-only install run by a user without a writable home: numba finds no cache
    locator ("cannot cache function ... no locator available"); the loop is cached in the
    temporary folder instead, with one warning, and gives the numpy path's bits."""
    # only the locator that needs NUMBA_CACHE_DIR, which is not set: none is available
    monkeypatch.setattr(numba.core.config, "CACHE_LOCATOR_CLASSES", "UserProvidedCacheLocator")
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")
    roof._kernel.cache_clear()
    try:
        with pytest.warns(
            RuntimeWarning,
            match=r"no writable place to cache the compiled roofline loop .*; caching it in .*sweeps-numba-",
        ):
            kernel = roof._kernel()
        assert kernel is not None
        folder = Path(numba.core.config.CACHE_DIR)
        sweep = parse_config(CONFIG, "ro.toml")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once: not again for this process
            compiled = build_grid(sweep, use_kernel=True)
            assert roof._kernel() is kernel
        assert any(folder.rglob("*.nbi"))  # the cache index landed there
        plain = build_grid(sweep, use_kernel=False)
        assert compiled["attainable_flops"].equals(plain["attainable_flops"])
    finally:
        roof._kernel.cache_clear()


HITS = """
import sys
from sweeps.config import parse_config
from sweeps.grid import build_grid, roof
build_grid(parse_config(sys.argv[1], "ro.toml"), use_kernel=True)
stats = roof._kernel().stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def test_a_second_process_loads_the_loop_from_the_cache(tmp_path):
    """numba's own cache key hashes the closure's dispatchers, which pickle differently in
    every process, so every cold run compiled the loop again; keyed by code and physics
    sources, the second process loads it."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", HITS, CONFIG],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs == [["0", "1"], ["1", "0"]]


def test_without_numba_the_grid_is_the_same_and_numba_is_never_imported() -> None:
    """numba is optional: a Python that cannot import it computes the same grid, even where
    the compiled pass is asked for, and a small run never imports it (0.4 s of a cold run)."""
    code = (
        "import sys, json\n"
        "from sweeps.config import parse_config\n"
        "from sweeps.grid import build_grid\n"
        f"sweep = parse_config({CONFIG!r})\n"
        "small = build_grid(sweep)\n"
        "print('numba' in sys.modules)\n"
        "sys.modules['numba'] = None  # import numba raises ImportError from here on\n"
        "from sweeps.grid import roof\n"
        "roof._kernel.cache_clear()\n"
        "forced = build_grid(sweep, use_kernel=True)\n"
        "print(forced.identical(small))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_a_loop_that_fails_to_compile_falls_back_to_numpy(monkeypatch) -> None:
    sweep = parse_config(CONFIG)
    expected = build_grid(sweep, use_kernel=False)

    def broken(*args):
        msg = "no such loop here"
        raise numba.core.errors.TypingError(msg)

    monkeypatch.setattr(roof, "_kernel", lambda: broken)
    monkeypatch.setattr(roof, "_FAILED", [])
    with pytest.warns(RuntimeWarning, match=r"compiled roofline loop failed \(TypingError"):
        got = build_grid(sweep, use_kernel=True)
    assert got.identical(expected)
