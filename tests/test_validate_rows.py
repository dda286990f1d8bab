"""``sweeps validate`` counts the rows the run writes, for every table of every shipped config
(the pools table leaves out the one-pool plans on two devices: issue 19 found 27,648 rows
counted where 14,688 were written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import sweeps
from sweeps.cli.main import cli

CONFIGS = sorted((Path(__file__).parent.parent / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_validate_counts_the_rows_the_run_writes(path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", "--json", str(path)])
    assert result.exit_code == 0, result.output
    (found,) = json.loads(result.stdout)["configs"]
    frames = sweeps.export.frames(sweeps.run(path))
    # every table of the grid's points (the catalog's models and hardware are not counted)
    written = {n: f.height for n, f in frames.items() if n not in ("models", "hardware")}
    assert found["rows"] == written
