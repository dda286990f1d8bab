"""``sweeps --help`` and ``sweeps validate`` load neither xarray, pandas nor altair (issue 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("xarray", "pandas", "altair", "polars", "dask", "distributed")
PROBE = """
import json, sys
from sweeps.cli.main import cli
try:
    cli(sys.argv[1:], standalone_mode=False)
finally:
    print("MODULES " + json.dumps(sorted(m for m in sys.modules if "." not in m)))
"""
CONFIG = Path(__file__).resolve().parent.parent / "configs" / "seed-llama3-8b-h100.toml"


def loaded(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


@pytest.mark.parametrize(
    "args", [("--help",), ("run", "--help"), ("bench", "--help"), ("validate", str(CONFIG))]
)
def test_light_commands_skip_heavy_imports(args):
    modules = loaded(*args)
    assert "sweeps" in modules
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_validate_with_budget_plans_chunks_without_heavy_imports():
    modules = loaded(
        "validate", str(CONFIG), "--memory-budget", "449MiB"
    )  # the least that holds it
    assert not modules & set(HEAVY)


def test_the_probe_can_fail():
    """The probe sees a heavy import when one happens (so the tests above can fail)."""
    modules = loaded("list", "dtypes")
    assert "sweeps" in modules
    done = subprocess.run(
        [sys.executable, "-c", "import sweeps.grid.build, sys; print('xarray' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "True"


def test_dir_shows_the_public_api_and_all_matches_the_lazy_names():
    import sweeps

    names = dir(sweeps)
    for builder in ("ceiling_chart", "bottleneck_chart", "ai_vs_batch_chart", "roofline_chart"):
        assert builder in names
        assert builder in sweeps.__all__
    assert {"run", "to_parquet", "summarize", "__version__", "export", "grid"} <= set(names)
    assert sweeps.__all__ == sorted(sweeps.__all__)
    with pytest.raises(AttributeError, match="module 'sweeps' has no attribute 'nope'"):
        _ = sweeps.nope


BARE = """
import json, sys
import sweeps
names = dir(sweeps)
light = sorted(m for m in sys.modules if "." not in m)
writer = sweeps.export.to_parquet
print("RESULT " + json.dumps([light, writer.__module__, "ceiling_chart" in names]))
"""


def test_a_bare_import_reaches_the_layers_and_stays_light():
    """``import sweeps`` then ``sweeps.export...`` works in a fresh interpreter; neither the
    import nor ``dir`` loads a heavy library."""
    done = subprocess.run([sys.executable, "-c", BARE], capture_output=True, text=True, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    light, module, listed = json.loads(line.removeprefix("RESULT "))
    assert not set(light) & set(HEAVY), sorted(set(light) & set(HEAVY))
    assert module.startswith("sweeps.export")
    assert listed


def test_a_run_of_a_bad_config_fails_before_any_heavy_import(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(CONFIG.read_text("utf-8").replace("[axes]", "[axes]\nbacth = [1]"), "utf-8")
    code = PROBE.replace("cli(sys.argv[1:], standalone_mode=False)", "cli(sys.argv[1:])")
    done = subprocess.run(
        [sys.executable, "-c", code, "run", str(bad), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "axes.bacth" in done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES "))
    modules = set(json.loads(line.removeprefix("MODULES ")))
    assert not modules & {*HEAVY, "numba", "zarr", "pyarrow"}, sorted(modules & set(HEAVY))


def test_the_simulator_imports_numba_only_to_compile_its_loop():
    """The output hooks load ``sweeps.studies.serving.simulate`` on every run; numba (the ``fast`` extra) waits
    for a simulation's first compiled loop."""
    probe = (
        "import sys, sweeps.studies.serving.simulate, sweeps.charts.output; before = 'numba' in sys.modules; "
        "from sweeps.studies.serving.simulate.kernel import compiled; compiled(); "
        "print(before, 'numba' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


def test_run_hooks_import_altair_only_when_they_draw(tmp_path):
    """A run's hooks are made before its grid (``output_hooks``) but import Altair only when
    called, on the hooks' thread beside the writers: not on the way to the first model's
    grid. Called, they do import it (so the first half can fail)."""
    probe = (
        "import sys\n"
        "from sweeps.config import load_config\n"
        "from sweeps.charts import output_hooks\n"
        "from sweeps.pipeline import run_to_folder\n"
        f"sweep = load_config({str(CONFIG)!r})\n"
        "hooks = output_hooks(sweep)\n"
        "print('altair' in sys.modules)\n"
        f"run_to_folder(sweep, {str(tmp_path)!r}, hooks=hooks)\n"
        "print('altair' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-2:] == ["False", "True"]
