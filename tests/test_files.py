"""Bounded, non-blocking reads of user input files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sweeps.errors import ConfigError
from sweeps.files import read_text


def test_reads_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text("x = 1\n", "utf-8")
    assert read_text(path, ConfigError, "config") == "x = 1\n"


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: no such config"):
        read_text(tmp_path / "nope.toml", ConfigError, "config")


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="a folder; the config must be a regular file"):
        read_text(tmp_path, ConfigError, "config")


def test_dev_zero_is_refused_at_once() -> None:
    with pytest.raises(ConfigError, match="/dev/zero: not a regular file"):
        read_text("/dev/zero", ConfigError, "config")


def test_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="pipe: not a regular file"):
        read_text(fifo, ConfigError, "config")


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * (2 * 2**20 + 1))
    with pytest.raises(ConfigError, match="larger than 2 MiB"):
        read_text(path, ConfigError, "config", limit=2 * 2**20)
    path.write_bytes(b"#" * (2 * 2**20))
    assert len(read_text(path, ConfigError, "config", limit=2 * 2**20)) == 2 * 2**20


def test_binary_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bin.toml"
    path.write_bytes(b"ok\xff\xfe")
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 2\)"):
        read_text(path, ConfigError, "config")
