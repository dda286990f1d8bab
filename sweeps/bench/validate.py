"""(g) validating a config whose range has 1e5 values: in process and as a cold command.

``sweeps validate`` must answer in well under a second however long an axis is (the checks are
linear in the config's size and capped before anything is expanded). Measured twice: the
library's ``parse_config`` (best of three) and a cold ``sweeps validate`` in a subprocess, as a
user runs it (interpreter start and imports included).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sweeps.bench.timing import timed

CONFIG = """
[sweep]
name = "long-range"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1]
context = {{ start = 1, stop = {values} }}
"""


def measure_validate(values: int = 100_000) -> dict[str, Any]:
    """Seconds to validate a config with a ``values``-value context range [s]."""
    from sweeps.config import parse_config

    text = CONFIG.format(values=values)
    best = min(timed(lambda: parse_config(text, "<bench>"))[0] for _ in range(3))
    with tempfile.TemporaryDirectory(prefix="sweeps-validate-") as tmp:
        path = Path(tmp) / "long-range.toml"
        path.write_text(text, encoding="utf-8")
        command = [sys.executable, "-c", "from sweeps.cli.main import main; main()"]
        start = time.perf_counter()
        done = subprocess.run(
            [*command, "validate", str(path)], capture_output=True, text=True, check=False
        )
        cold = time.perf_counter() - start
    if done.returncode != 0:
        msg = f"sweeps validate failed: {done.stderr.strip()[-500:]}"
        raise RuntimeError(msg)
    return {"values": values, "parse_seconds": best, "command_seconds": cold}
