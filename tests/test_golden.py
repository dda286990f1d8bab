"""The Parquet tables of every shipped config, pinned: schema, units metadata and each column's bits.

A refactor must leave them bit-identical. When a change is meant to move numbers (a corrected
bound), regenerate the fingerprints with ``python tests/test_golden.py`` and say why in the
CHANGELOG; the diff of ``tests/fixtures/golden/*.json`` then shows which columns moved.

The bits are those of the machine that wrote the fingerprints (``machine``: numpy's version and
the SIMD features it dispatches on). numpy picks its ``exp``, ``log`` and ``power`` loops by CPU,
and AVX-512's differ from AVX2's in the last bit (measured 4 December: five shipped configs'
MoE knee, speculative and serving columns on an AVX2-only machine against fingerprints written
with AVX-512). Elsewhere a column whose bits differ is held by its moments instead
(``_moments``: its null, NaN, infinite, zero and negative counts exactly, and a weighted sum
of ``log|x|`` within a tolerance scaled by the rows and the sum of ``|log|x||``), which still
catches any value moved by a part in a million.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "fixtures" / "golden"
CONFIGS = sorted((ROOT / "configs").glob("*.toml"))


def _column_digest(series: pl.Series) -> str:
    if series.dtype in (pl.String, pl.Categorical) or isinstance(series.dtype, pl.Enum):
        data = "\x00".join("\x01" if v is None else v for v in series.cast(pl.String).to_list())
        payload = data.encode("utf-8")
    else:
        nulls = series.is_null().to_numpy()
        values = series.to_numpy()
        if values.dtype == object:  # a column with nulls: nulls are marked, values kept as floats
            values = series.fill_null(0).to_numpy()
        payload = np.ascontiguousarray(values).tobytes() + np.packbits(nulls).tobytes()
    return hashlib.sha256(payload).hexdigest()


def _machine() -> dict[str, object]:
    """What a float's last bit depends on here: numpy's version and the SIMD features found."""
    import importlib

    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # numpy 1.x
        umath = importlib.import_module("numpy.core._multiarray_umath")
    found = getattr(umath, "__cpu_features__", {})
    return {"numpy": np.__version__, "simd": sorted(k for k, on in found.items() if on)}


def _moments(series: pl.Series) -> list[float]:
    """A numeric column's null, NaN, +inf, -inf, zero and negative counts, then two sums over
    its finite non-zero values of ``log|x|``: weighted by ``1 + (row % 97) / 97`` (a value
    moved, or two swapped, moves it) and of its magnitude (the scale of the tolerance)."""
    nulls = series.is_null().to_numpy()
    values = series.cast(pl.Float64).fill_null(0.0).to_numpy().astype(np.float64)
    finite = np.isfinite(values) & (values != 0) & ~nulls
    rows = np.flatnonzero(finite)
    logs = np.log(np.abs(values[finite]))
    counts = [
        nulls.sum(),
        np.isnan(values).sum(),
        np.isposinf(values).sum(),
        np.isneginf(values).sum(),
        ((values == 0) & ~nulls).sum(),
        (values < 0).sum(),
    ]
    weighted = float(np.sum(logs * (1.0 + (rows % 97) / 97.0)))
    return [float(c) for c in counts] + [weighted, float(np.sum(np.abs(logs)))]


def _same_moments(got: list[float], pinned: list[float], rows: int) -> bool:
    """Counts equal, the weighted sum of ``log|x|`` within 1e-12 of (rows + the sum of
    ``|log|x||``) [1]: a few ulps a value come to far less, a value moved by a part in a
    million moves it by 1e-6 to 2e-6 (the tolerances of the shipped fingerprints are 1e-12 to
    1.6e-7; 3.9e-8 to 1.6e-7 for the largest table, 19,008 rows)."""
    tolerance = 1e-12 * (rows + pinned[7])
    return got[:6] == pinned[:6] and abs(got[6] - pinned[6]) <= tolerance


def _kinds(schema: dict[str, str]) -> list[tuple[str, str]]:
    """A schema with each Enum's categories left out: they are the catalog's every id of the
    kind (``sweeps.export.frame.shared_enum``) and move with the catalog, not with the bounds."""
    return [(name, "Enum" if kind.startswith("Enum(") else kind) for name, kind in schema.items()]


def fingerprint(config: Path, folder: Path) -> dict[str, Any]:
    """The machine, then the schema, column units, per-column SHA-256 and numeric columns'
    moments of every table ``config`` writes."""
    import sweeps
    from sweeps.export import read_units

    ds = sweeps.run(config)
    sweeps.to_parquet(ds, folder)
    tables: dict[str, object] = {}
    for path in sorted(folder.glob("*.parquet")):
        frame = pl.read_parquet(path)
        tables[path.stem] = {
            "rows": frame.height,
            "schema": {name: str(dtype) for name, dtype in frame.schema.items()},
            "units": read_units(path),
            "columns": {name: _column_digest(frame[name]) for name in frame.columns},
            "moments": {
                name: _moments(frame[name])
                for name in frame.columns
                if frame[name].dtype.is_numeric()
            },
        }
    return {"machine": _machine(), "tables": tables}


def _moved(got: dict[str, Any], pinned: dict[str, Any], exact: bool) -> list[str]:
    """The columns of a table whose bits differ from the pinned ones and, unless ``exact``
    (the fingerprints' own machine), whose moments differ too."""
    moved = [c for c, h in pinned["columns"].items() if got["columns"].get(c) != h]
    if exact:
        return moved
    moments, rows = pinned["moments"], pinned["rows"]
    return [
        c
        for c in moved
        if c not in moments or not _same_moments(got["moments"][c], moments[c], rows)
    ]


def dumps(document: dict[str, Any]) -> str:
    """The fingerprint as JSON, one line per column (a column's moments on its line)."""
    text = json.dumps(document, indent=1)
    return re.sub(r"\[\n\s*([^\[\]{}\"]*?)\n\s*\]", _one_line, text) + "\n"


def _one_line(match: re.Match[str]) -> str:
    return "[" + ", ".join(part.strip() for part in match.group(1).split(",")) + "]"


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_shipped_config_tables_are_unchanged(config: Path, tmp_path: Path) -> None:
    from .times import folder_bad_times  # here: the module also runs as a script

    expected = json.loads((GOLDEN / f"{config.stem}.json").read_text("utf-8"))
    actual = fingerprint(config, tmp_path)
    assert not folder_bad_times(tmp_path)  # every time positive and finite, or null
    exact = expected["machine"] == actual["machine"]
    assert sorted(actual["tables"]) == sorted(expected["tables"])
    for table, pinned in expected["tables"].items():
        got = actual["tables"][table]
        assert _kinds(got["schema"]) == _kinds(pinned["schema"]), table
        assert got["units"] == pinned["units"], table
        assert got["rows"] == pinned["rows"], table
        moved = _moved(got, pinned, exact)
        assert not moved, f"{table}: columns changed: {moved}"


def test_moments_hold_ulps_and_catch_a_moved_value() -> None:
    rng = np.random.default_rng(4)
    values = np.concatenate([10.0 ** rng.uniform(-9, 15, 19_000), [0.0, -3.0, np.inf, np.nan]])
    series = pl.Series(values).extend(pl.Series([None], dtype=pl.Float64))
    pinned, rows = _moments(series), len(series)
    ulps = values * (1 + rng.choice([-4, -1, 0, 1, 4], values.size) * np.finfo(float).eps)
    bumped = pl.Series(ulps).extend(pl.Series([None], dtype=pl.Float64))
    assert _column_digest(bumped) != _column_digest(series)
    assert _same_moments(_moments(bumped), pinned, rows)  # a few ulps everywhere: held
    for change in ("part in a million", "swap", "sign", "null"):
        moved = values.copy()
        if change == "part in a million":
            moved[1234] *= 1 + 1e-6
        elif change == "swap":
            moved[[10, 20]] = moved[[20, 10]]
        elif change == "sign":
            moved[7] = -moved[7]
        else:
            moved[8] = np.nan
        other = pl.Series(moved).extend(pl.Series([None], dtype=pl.Float64))
        assert not _same_moments(_moments(other), pinned, rows), change


if __name__ == "__main__":  # regenerate the fingerprints
    import tempfile

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for config in CONFIGS if len(sys.argv) < 2 else [Path(a) for a in sys.argv[1:]]:
        with tempfile.TemporaryDirectory() as tmp:
            document = fingerprint(config, Path(tmp))
        (GOLDEN / f"{config.stem}.json").write_text(dumps(document))
        print(config.stem)
