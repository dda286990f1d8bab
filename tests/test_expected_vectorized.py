"""The expected pass over arrays of shapes (issue 43's speed) gives, bit for bit, what the
per-shape pass gave: the oracle tests/data/expected_oracle.npz was written by the pass that
looked up and composed one shape at a time (scripts/expected_oracle.py regenerates it).

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.catalog import load_catalog
from sweeps.measured.database import OPERATIONS, parse
from sweeps.measured.kernels import _SHIFT, NAMES, _distinct_keys, kernels
from sweeps.studies.expected.step import Config, compose, step, step_at

pytest.importorskip("aiconfigurator_core")

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "tests" / "data" / "expected_oracle.npz"


def _script() -> object:
    spec = importlib.util.spec_from_file_location(
        "expected_oracle", ROOT / "scripts" / "expected_oracle.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def oracle() -> dict[str, np.ndarray]:
    with np.load(ORACLE) as saved:
        held = {name: saved[name] for name in saved.files}
    if str(held["database"]) != version("aiconfigurator-core"):
        pytest.skip(f"the oracle was read from aiconfigurator-core {held['database']}")
    return held


def test_the_vectorized_pass_equals_the_per_shape_oracle_bit_for_bit(
    oracle: dict[str, np.ndarray],
) -> None:
    script = _script()
    got = script.results(str(oracle["config"]))  # type: ignore[attr-defined]
    assert set(got) == set(script.VARIABLES)  # type: ignore[attr-defined]
    for name, values in got.items():
        held = oracle[name]
        if name.startswith("kernel_"):  # the operations appended since, then the oracle's
            values = _appended(name, values, held.shape[-1], got["kernel_basis"])
        assert values.shape == held.shape, name
        if values.dtype.kind == "f":
            same = (values == held) | (np.isnan(values) & np.isnan(held))
            assert same.all(), (name, int((~same).sum()))
        else:
            assert (values == held).all(), name


HELD = OPERATIONS[:10]
"""The operations the oracle was written with: ``dispatch`` and ``handoff`` were appended
since (expert parallelism and pipeline stages, which its grid has none of)."""


def _appended(name: str, values: np.ndarray, held: int, basis: np.ndarray) -> np.ndarray:
    """``values`` of a kernel variable (the operation its last axis) at the oracle's
    operations, once its appended ones are held to what a grid without ``ep`` or ``pp`` gives
    them: 0 s (and 0 / 0, NaN, their share), ``measured`` as for any operation a model lacks,
    null with the rest of the step where it has no data."""
    assert OPERATIONS[:held] == HELD
    new, none = values[..., held:], basis[..., held:] == ""
    assert new.shape[-1] == len(OPERATIONS) - held == 2
    if name == "kernel_basis":
        assert (none | (new == "measured")).all()
        assert (none == (basis[..., :1] == "")).all()  # no data: the whole step's null
    elif name == "kernel_roofline_share":
        assert np.isnan(new).all()
    else:
        assert (np.where(none, np.isnan(new), new == 0.0)).all(), name
    return values[..., :held]


def test_the_oracle_holds_every_basis_and_every_kind_of_null(
    oracle: dict[str, np.ndarray],
) -> None:
    """The oracle is a test only if it reaches every branch: measured, interpolated and
    extrapolated kernels, a device and a model without data, a missing operation."""
    assert set(np.unique(oracle["kernel_basis"])) == {
        "",
        "measured",
        "interpolated",
        "extrapolated",
    }
    reasons = " ".join(np.unique(oracle["expected_reason"]))
    assert "not in the database" in reasons
    assert "experts: no reading" in reasons  # a missing operation: a bf16 DeepSeek's experts
    # no MLA null is left in the grid: SGLang's block is composed from its granular tables
    # (an MLA block without tables is null by the path of a device without data, its reason
    # held in tests/test_expected.py)
    assert "MLA attention" not in reasons
    assert np.isfinite(oracle["expected_token_time_wall_s"]).any()
    assert np.isnan(oracle["expected_token_time_wall_s"]).any()


CATALOG = load_catalog()


def _config(model: str, device: str, tp: int, engine: str = "vllm") -> Config:
    m, d = CATALOG.models[model], CATALOG.hardware[device]
    peak = d.peak_flops["bf16"]
    if m.is_mla:  # DeepSeek at its checkpoint's FP8 (the database's experts are FP8 only)
        fp8 = d.peak_flops["fp8"]
        return Config(m, d, tp, m.kv_heads, "fp8", "fp8", 1.0, 1.0, fp8, peak, parse(engine))
    return Config(m, d, tp, m.kv_heads, "bf16", "bf16", 2.0, 2.0, peak, peak, parse(engine))


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen3-235b-a22b", "deepseek-v3"])
@pytest.mark.parametrize("prefill", [False, True])
def test_a_grid_equals_its_points_one_at_a_time(model: str, prefill: bool) -> None:
    """An adversary the oracle does not hold: random shapes, each composed alone (a one-point
    step, the per-shape path's own arithmetic) against the whole grid at once."""
    rng = np.random.default_rng(43)
    config = _config(model, "h100-sxm", 1 if "llama" in model else 8)
    batch = np.unique(rng.integers(1, 3000, 12))
    length = np.unique(rng.integers(2, 200_000 if not prefill else 40_000, 9))
    grid = step(config, batch, length, prefill)
    for i, b in enumerate(batch):
        for j, n in enumerate(length):
            one = step(config, np.array([b]), np.array([n]), prefill)
            for op in grid.expected:
                for got, alone in ((grid.expected, one.expected), (grid.bound, one.bound)):
                    assert got[op][i, j] == alone[op][0, 0] or np.isnan(alone[op][0, 0]), op
                assert grid.basis[op][i, j] == one.basis[op][0, 0]
    pairs = step_at(config, np.repeat(batch, len(length)), np.tile(length, len(batch)), prefill)
    singles = [step(config, np.array([b]), np.array([n]), prefill).total()[0, 0]
               for b in batch for n in length]  # fmt: skip
    assert (pairs.point_totals() == np.array(singles)).all()


def test_each_distinct_shape_is_asked_of_the_database_once() -> None:
    k = kernels("h100_sxm", "vllm", "0.24.0")
    asked: list[tuple[int, int]] = []
    handle = k._handle[1]

    class Counting:
        def evaluate_ops_json(self, spec: str, **kw: int) -> object:
            asked.append((kw["batch_size"], kw["s"]))
            return handle.evaluate_ops_json(spec, **kw)

    k.__dict__["_handle"] = (k._handle[0], Counting())
    memo = dict(k._memo)
    k._memo.clear()
    try:
        batch = np.array([[1, 7, 7], [7, 1, 99]])
        got = k.gemm_many(batch, 4096, 4096, "bf16")
        assert sorted(asked) == [(1, 1), (7, 1), (99, 1)]
        assert got.latency_s.shape == batch.shape
        assert got.latency_s[0, 1] == got.latency_s[0, 2] == got.latency_s[1, 0]
        k.gemm_many(np.array([99, 1]), 4096, 4096, "bf16")
        assert len(asked) == 3  # memoized for the process
    finally:
        k.__dict__["_handle"] = (k._handle[0], handle)
        k._memo.update(memo)


def test_the_database_is_not_imported_without_an_engine(tmp_path: Path) -> None:
    """A run with no engine neither imports aiconfigurator-core nor finds or reads its tables
    (the study's own modules may load: they import the database only when asked); with an
    engine, the same run does (the check can fail)."""
    seed = (ROOT / "sweeps/examples/seed-llama3-8b-h100.toml").read_text()
    probe = (
        "import sys\n"
        "from sweeps.config import load_config\n"
        "from sweeps.grid import build_grid\n"
        "build_grid(load_config(sys.argv[1]))\n"
        "from sweeps.measured import database, kernels\n"
        "print(any(m.startswith('aiconfigurator') for m in sys.modules),"
        " database.systems_root.cache_info().currsize, len(kernels.loaded()))\n"
    )

    def run(text: str) -> str:
        config = tmp_path / "seed.toml"
        config.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-c", probe, str(config)], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    assert run(seed) == "False 0 0"
    with_engine = seed.replace(
        'weight_dtype = ["bf16"]', 'weight_dtype = ["bf16"]\nengine = ["vllm"]'
    )
    assert run(with_engine) == "True 1 1"


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=12),
    st.lists(st.integers(0, 40), min_size=1, max_size=12),
    st.booleans(),
)
def test_a_grids_distinct_shapes_are_what_a_sort_gives(
    batches: list[int], lengths: list[int], grid: bool
) -> None:
    """``_distinct_keys`` skips the sort of a grid (its batches by its lengths) and of a
    sorted array; against ``np.unique`` of the broadcast keys, on sorted and unsorted axes
    with runs (a clamp's), as a grid and as pairs."""
    b, s = np.array(sorted(batches) if grid else batches), np.array(lengths)
    if grid:
        b, s = b[:, None], s[None, :]
    else:
        b, s = np.resize(b, max(b.size, s.size)), np.resize(s, max(b.size, s.size))
    distinct, where = _distinct_keys(b, s)
    sizes, lengths_ = np.broadcast_arrays(b, s)
    keys = (sizes.astype(np.int64) << _SHIFT) | lengths_.astype(np.int64)
    want, at = np.unique(keys, return_inverse=True)
    assert (distinct == want).all()
    assert where.shape == keys.shape
    assert (distinct[where] == keys).all()
    assert (where == at.reshape(keys.shape)).all()


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bit for bit where a number, NaN where NaN (broadcast to ``want``'s shape)."""
    got = np.broadcast_to(got, want.shape)
    return bool(((got == want) | (np.isnan(got) & np.isnan(want))).all())


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen3-235b-a22b"])
def test_a_configurations_pass_is_its_four_steps_bit_for_bit(model: str) -> None:
    """``compose`` (each operation once over the four steps' token counts, attention over the
    grid) against ``step`` and ``step_at`` of each step alone: decode grid, batch 1, the wall
    (summed as one-point steps) and the prefill grid, each operation, bound and basis."""
    rng = np.random.default_rng(7)
    config = _config(model, "h100-sxm", 1 if "llama" in model else 8)
    batch = np.unique(rng.integers(1, 600, 7))
    context = np.unique(rng.integers(2, 60_000, 5))
    wall = rng.integers(1, 900, context.size)
    done = compose(config, batch, context, wall, context)
    assert not isinstance(done, str)
    decode = step(config, batch, context)
    for op in decode.expected:
        if op not in done.expected:  # an operation the model lacks: zero
            assert (decode.expected[op] == 0).all()
            continue
        assert _same(done.expected[op], decode.expected[op]), op
        assert _same(done.bound[op], decode.bound[op]), op
        assert (np.broadcast_to(done.basis[op], decode.basis[op].shape) == decode.basis[op]).all()
    assert _same(done.step, decode.total())
    assert (NAMES[done.step_basis] == decode.step_basis()).all()
    assert _same(done.ttft, step(config, batch, context, prefill=True).total())
    assert _same(done.b1, step(config, np.array([1]), context).total()[0])
    assert _same(done.wall, step_at(config, wall, context).point_totals())
