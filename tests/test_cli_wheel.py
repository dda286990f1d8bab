"""What a ``pip install`` of the wheel gives a new user: ``sweeps init`` and ``sweeps run`` from an
empty folder, the shipped examples, the schema, and `mypy --strict` on a user script (issue 16).

The wheel is built from a copy of the tree (pip's own build, as a user's ``pip install .``
would), installed without its dependencies into a fresh venv that has no access to this
checkout; the dependencies come from the running environment's site-packages through a
``.pth`` line, placed after the venv's own, so the ``sweeps`` imported is the wheel's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.wheel


def sh(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(ROOT / "sweeps", source / "sweeps", symlinks=True, ignore=ignore)
    shutil.copytree(ROOT / "configs", source / "configs")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    sh(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "-q",
        "-w",
        root / "dist",
        source,
        cwd=root,
    )
    (wheel,) = (root / "dist").glob("roofline_sweeps-*.whl")
    sh(sys.executable, "-m", "venv", "--without-pip", root / "venv", cwd=root)
    python = root / "venv" / "bin" / "python"
    sh(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "-q",
        wheel,
        cwd=root,
    )
    purelib = sh(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=root
    )
    dependencies = sysconfig.get_paths()["purelib"]
    # the bare core: this environment's packages less those of the extras, seen through links
    core = root / "core"
    core.mkdir()
    for entry in Path(dependencies).iterdir():
        if entry.name.split(".")[0].split("-")[0].lower() not in EXTRAS:
            (core / entry.name).symlink_to(entry)
    (Path(purelib.strip()) / "dependencies.pth").write_text(f"{core}\n", encoding="utf-8")
    return root / "venv"


EXTRAS = (
    *("h5netcdf", "h5py", "duckdb", "dask", "distributed", "mkdocs", "material", "mkdocstrings"),
    *("numba", "llvmlite"),
)
"""The top-level modules of the optional extras (netcdf, duckdb, dask, docs, fast)."""


def test_init_and_run_from_an_empty_folder(venv: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NO_COLOR")}
    env["HOME"] = str(tmp_path)  # nothing of the user's
    where = sh(
        venv / "bin" / "python",
        "-c",
        "import sweeps; print(sweeps.__file__)",
        cwd=tmp_path,
        env=env,
    )
    assert where.strip().startswith(str(venv)), where  # the wheel's sweeps, not this checkout's
    empty = tmp_path / "empty"
    empty.mkdir()
    sweeps = venv / "bin" / "sweeps"
    studies = sh(sweeps, "init", "--list", cwd=empty, env=env)
    assert "seed-llama3-8b-h100" in studies
    sh(
        sweeps,
        "init",
        "mine",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        cwd=empty,
        env=env,
    )
    sh(sweeps, "init", "--example", "llama3-70b-h200-gqa-kv", cwd=empty, env=env)
    assert sorted(p.name for p in empty.iterdir()) == [
        "llama3-70b-h200-gqa-kv.toml",
        "mine.toml",
        "sweeps.schema.json",
    ]
    checked = sh(
        sweeps, "validate", "mine.toml", "llama3-70b-h200-gqa-kv.toml", "--json", cwd=empty, env=env
    )
    assert all(c["ok"] for c in json.loads(checked)["configs"])
    ran = sh(sweeps, "run", "mine.toml", "--quiet", cwd=empty, env=env)
    assert "decode summary" in ran
    manifest = json.loads(
        (empty / "outputs" / "mine" / "manifest.json").read_text(encoding="utf-8")
    )
    assert "report.html" in manifest["files"]
    assert (empty / "outputs" / "mine" / "decode.parquet").is_file()
    schema = json.loads(sh(sweeps, "schema", cwd=empty, env=env))
    assert "axes" in schema["properties"]


def test_the_bare_core_runs_the_seed_example(venv: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NO_COLOR")}
    env["HOME"] = str(tmp_path)
    python = venv / "bin" / "python"
    hidden = subprocess.run(
        [python, "-c", "import duckdb"], capture_output=True, text=True, check=False, env=env
    )
    assert "No module named 'duckdb'" in hidden.stderr  # the extras are out of reach
    compiled = subprocess.run(
        [python, "-c", "import numba"], capture_output=True, text=True, check=False, env=env
    )
    assert "No module named 'numba'" in compiled.stderr  # the fast extra too
    sweeps = venv / "bin" / "sweeps"
    sh(sweeps, "init", "--example", "seed-llama3-8b-h100", cwd=tmp_path, env=env)
    ran = sh(sweeps, "run", "seed-llama3-8b-h100.toml", cwd=tmp_path, env=env)
    assert "decode summary" in ran
    folder = tmp_path / "outputs" / "seed-llama3-8b-h100"
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert {"decode.parquet", "report.html"} <= set(manifest["files"])
    assert (folder / "grid.zarr").is_dir()


USER_SCRIPT = """
import sweeps

ds = sweeps.run({"sweep": {"name": "x"}, "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"]}})
ceiling: float = float(ds["ceiling"].max())
print(ceiling)
"""


def test_a_user_script_type_checks_strictly_against_the_installed_wheel(
    venv: Path, tmp_path: Path
) -> None:
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    python = venv / "bin" / "python"
    args = (
        "-m",
        "mypy",
        "--strict",
        "--python-executable",
        python,
        "--cache-dir",
        tmp_path / "cache",
    )
    checked = sh(sys.executable, *args, script, cwd=tmp_path)
    assert "Success: no issues found in 1 source file" in checked  # the wheel carries py.typed
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    import sweeps  # the checkout's: the wheel, built from it, gives the same number

    config = {"sweep": {"name": "x"}, "axes": {"model": ["llama-3-8b"], "hardware": ["h100-sxm"]}}
    expected = float(sweeps.run(config)["ceiling"].max())
    assert float(sh(python, script, cwd=tmp_path, env=env)) == expected
