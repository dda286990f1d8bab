"""The compiled roofline loop where no cache folder is writable (issue 15, item 6)."""

from __future__ import annotations

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
