"""The Parquet tables of every shipped config, pinned: schema, units metadata and each column's bits.

A refactor must leave them bit-identical. When a change is meant to move numbers (a corrected
bound), regenerate the fingerprints with ``python tests/test_golden.py`` and say why in the
CHANGELOG; the diff of ``tests/fixtures/golden/*.json`` then shows which columns moved.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

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


def _kinds(schema: dict[str, str]) -> list[tuple[str, str]]:
    """A schema with each Enum's categories left out: they are the catalog's every id of the
    kind (``sweeps.export.frame.shared_enum``) and move with the catalog, not with the bounds."""
    return [(name, "Enum" if kind.startswith("Enum(") else kind) for name, kind in schema.items()]


def fingerprint(config: Path, folder: Path) -> dict[str, object]:
    """Schema, column units and per-column SHA-256 of every table ``config`` writes."""
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
        }
    return tables


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_shipped_config_tables_are_unchanged(config: Path, tmp_path: Path) -> None:
    expected = json.loads((GOLDEN / f"{config.stem}.json").read_text("utf-8"))
    actual = fingerprint(config, tmp_path)
    assert sorted(actual) == sorted(expected)
    for table, pinned in expected.items():
        got = actual[table]
        assert _kinds(got["schema"]) == _kinds(pinned["schema"]), table
        assert got["units"] == pinned["units"], table
        assert got["rows"] == pinned["rows"], table
        moved = [c for c, h in pinned["columns"].items() if got["columns"].get(c) != h]
        assert not moved, f"{table}: columns changed: {moved}"


if __name__ == "__main__":  # regenerate the fingerprints
    import tempfile

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for config in CONFIGS if len(sys.argv) < 2 else [Path(a) for a in sys.argv[1:]]:
        with tempfile.TemporaryDirectory() as tmp:
            document = fingerprint(config, Path(tmp))
        (GOLDEN / f"{config.stem}.json").write_text(json.dumps(document, indent=1) + "\n")
        print(config.stem)
