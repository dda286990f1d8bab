"""The ``manifest.json`` of a result folder: what was run, from what, and what was written."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata

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


def manifest(
    sweep: Sweep,
    rows: Mapping[str, int],
    columns: Mapping[str, object],
    timings: Mapping[str, float],
    files: list[str],
    layout: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """The manifest of a result folder, as a JSON-ready dict.

    ``layout`` says how the tables are stored: ``{"kind": "single"}`` (``decode.parquet``) or
    ``{"kind": "partitioned", "partitioning": "hive", "by": ["model"], "chunks": n, ...}``.
    """
    return {
        "package": "sweeps",
        "version": version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "sweep": {"name": sweep.name, "title": sweep.title},
        "config": {"path": sweep.path, "sha256": sweep.sha256, "text": sweep.text},
        "axes": {dim: AXIS[dim].labels(sweep) for dim in active_dims(sweep)},
        "options": vars(sweep.options),
        "rows": dict(rows),
        "columns": dict(columns),
        "timings_s": dict(timings),
        "files": files,
        "layout": dict(layout or {"kind": "single"}),
    }
