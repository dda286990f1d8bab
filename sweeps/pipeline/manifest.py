"""The ``manifest.json`` of a result folder: what was run, from what, and what was written."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from sweeps.axes import AXIS
from sweeps.config import Sweep
from sweeps.grid.analyses import active_dims


def version() -> str:
    """The installed package's version (``0+unknown`` when run from an uninstalled tree)."""
    from sweeps.distribution import DISTRIBUTION, FORMER

    for name in (DISTRIBUTION, FORMER):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "0+unknown"


def _labels(dim: str, sweep: Sweep) -> list[object]:
    """An axis's labels for JSON: a null for a NaN label (``prefix_hit_rate = "trace"``: no
    one number), as in the tables."""
    return [None if v != v else v for v in AXIS[dim].labels(sweep)]


def manifest(
    sweep: Sweep,
    rows: Mapping[str, int],
    columns: Mapping[str, object],
    timings: Mapping[str, float],
    files: list[str],
    layout: Mapping[str, object] | None = None,
    expected: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, object]:
    """The manifest of a result folder, as a JSON-ready dict.

    ``layout`` says how the tables are stored: ``{"kind": "single"}`` (``decode.parquet``) or
    ``{"kind": "partitioned", "partitioning": "hive", "by": ["model"], "chunks": n, ...}``.
    ``expected`` (``axes.engine`` only): the counts of ``expected_counts``, each table's under
    its name.
    """
    document: dict[str, object] = {
        "package": "sweeps",
        "version": version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "sweep": {"name": sweep.name, "title": sweep.title},
        "config": {"path": sweep.path, "sha256": sweep.sha256, "text": sweep.text},
        "axes": {dim: _labels(dim, sweep) for dim in active_dims(sweep)},
        "options": vars(sweep.options),
        "rows": dict(rows),
        "columns": dict(columns),
        "timings_s": dict(timings),
        "files": files,
        "layout": dict(layout or {"kind": "single"}),
    }
    document.update({table: dict(counts) for table, counts in (expected or {}).items()})
    return document


EXPECTED_TABLES: dict[str, str] = {
    "expected": "expected_step_time_s",
    "prefix_expected": "expected_hit_prefill_s",
    "speculative_expected": "expected_time_per_output_token_s",
    "serving_expected": "expected_ttft_s",
}
"""The tables of an expectation beside its bound, each with ``below_bound`` and ``basis``, and
the column that is null where there is no expectation: their counts go in the manifest under
the table's name (``expected_counts``)."""


def expected_counts(folder: Path, files: list[str]) -> dict[str, dict[str, int]]:
    """Each written table of ``EXPECTED_TABLES``' counts by its name (``table_counts``)."""
    counted = {table: table_counts(folder, files, table) for table in EXPECTED_TABLES}
    return {table: counts for table, counts in counted.items() if counts is not None}


def _table_of(file: str) -> str:
    """The table a written file belongs to: ``expected.parquet`` (one file), ``expected/...``
    (partitioned by model, or parts by chunk)."""
    return Path(file).parts[0].removesuffix(".parquet")


def table_counts(folder: Path, files: list[str], table: str) -> dict[str, int] | None:
    """Of the rows of the expected table ``table`` (``EXPECTED_TABLES``) in ``folder`` (its
    ``files``): how many there are, how many have an expectation below their bound (flagged,
    never clamped), how many have none (no data) and how many of those with one rest on each
    basis (``measured``, ``interpolated``, ``extrapolated``: with ``without_data`` they add up
    to ``rows``); None where the run wrote no such table."""
    import polars as pl

    from sweeps.measured.kernels import BASES

    paths = [folder / f for f in files if _table_of(f) == table and f.endswith(".parquet")]
    if not paths:
        return None
    counts = (
        pl.scan_parquet(paths)
        .select(
            rows=pl.len(),
            below_bound=pl.col("below_bound").sum(),
            without_data=pl.col(EXPECTED_TABLES[table]).is_null().sum(),
            **{basis: (pl.col("basis") == basis).fill_null(False).sum() for basis in BASES},
        )
        .collect()
        .row(0, named=True)
    )
    return {key: int(value) for key, value in counts.items()}
