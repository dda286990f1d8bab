"""Reading a measurements file: published or one's own results, each row checked at the door.

Columns (docs/calibration.md lists them with units): ``model, hardware, tp, weight_dtype,
kv_dtype, compute_dtype, batch, prompt_tokens, output_tokens, metric, value, per, source``;
any other column is kept. Every problem names the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.catalog import COMPUTE_DTYPES, Catalog, load_catalog
from sweeps.errors import CatalogError, MeasurementsError
from sweeps.files import read_text

COLUMNS = (
    "model",
    "hardware",
    "tp",
    "weight_dtype",
    "kv_dtype",
    "compute_dtype",
    "batch",
    "prompt_tokens",
    "output_tokens",
    "metric",
    "value",
    "per",
    "source",
)
"""The columns every measurements file has, in this order in the shipped one."""

METRICS = {
    "output_tokens_per_s": "token/s",
    "ttft_s": "s",
    "itl_s": "s",
    "request_latency_s": "s",
}
"""The measured metrics and their units; throughputs are bounded above, latencies below."""

PER = ("device", "replica")
MAX_BATCH = "max"
"""``batch = max``: the best batch that fits (the memory wall, with no reserve)."""


@dataclass(frozen=True)
class Measurement:
    """One measured result, validated. ``batch`` is ``None`` for ``max``."""

    line: int
    model: str
    hardware: str
    tp: int
    weight_dtype: str
    kv_dtype: str
    compute_dtype: str
    batch: int | None
    prompt_tokens: int
    output_tokens: int
    metric: str
    value: float
    per: str
    source: str
    extra: dict[str, str]


class _Row:
    """Typed access to one CSV row with messages that name the file, line and column."""

    def __init__(self, path: str, line: int, row: dict[str, str]) -> None:
        self.path, self.line, self.row = path, line, row

    def fail(self, column: str, problem: str) -> MeasurementsError:
        return MeasurementsError(f"{self.path}: line {self.line}: column {column!r}: {problem}")

    def text(self, column: str) -> str:
        value = (self.row.get(column) or "").strip()
        if not value:
            raise self.fail(column, "is empty")
        return value

    def integer(self, column: str) -> int:
        text = self.text(column)
        try:
            value = int(text)
        except ValueError:
            raise self.fail(column, f"{text!r} is not a whole number") from None
        if not 1 <= value <= 2**40:
            raise self.fail(column, f"{value} is out of range; allowed: 1 to {2**40:,}")
        return value

    def number(self, column: str) -> float:
        text = self.text(column)
        try:
            value = float(text)
        except ValueError:
            raise self.fail(column, f"{text!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise self.fail(column, f"{text!r} must be a finite number > 0")
        return value

    def choice(self, column: str, allowed: tuple[str, ...]) -> str:
        value = self.text(column)
        if value not in allowed:
            raise self.fail(column, f"unknown {value!r}; allowed: {', '.join(allowed)}")
        return value

    def lookup(self, column: str, find: Any) -> str:
        value = self.text(column)
        try:
            record = find(value)
        except CatalogError as error:
            raise self.fail(column, str(error)) from None
        return str(getattr(record, "id", None) or record.name)


def _measurement(row: _Row, catalog: Catalog) -> Measurement:
    batch_text = row.text("batch")
    return Measurement(
        line=row.line,
        model=row.lookup("model", catalog.lookup_model),
        hardware=row.lookup("hardware", catalog.lookup_hardware),
        tp=row.integer("tp"),
        weight_dtype=row.lookup("weight_dtype", catalog.lookup_dtype),
        kv_dtype=row.lookup("kv_dtype", catalog.lookup_dtype),
        compute_dtype=row.choice("compute_dtype", ("auto", *COMPUTE_DTYPES)),
        batch=None if batch_text == MAX_BATCH else row.integer("batch"),
        prompt_tokens=row.integer("prompt_tokens"),
        output_tokens=row.integer("output_tokens"),
        metric=row.choice("metric", tuple(METRICS)),
        value=row.number("value"),
        per=row.choice("per", PER),
        source=row.text("source"),
        extra={k: v for k, v in row.row.items() if k not in COLUMNS and k is not None},
    )


def parse_measurements(text: str, path: str = "<measurements>") -> list[Measurement]:
    """Every row of a measurements CSV ``text``, validated against the catalog."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        msg = (
            f"{path}: line 1: missing column(s) {', '.join(map(repr, missing))}; "
            f"a measurements file has {', '.join(COLUMNS)}"
        )
        raise MeasurementsError(msg)
    catalog = load_catalog()
    rows = [_measurement(_Row(path, reader.line_num, row), catalog) for row in reader]
    if not rows:
        msg = f"{path}: no measurements (only a header)"
        raise MeasurementsError(msg)
    return rows


def load_measurements(path: str | Path) -> list[Measurement]:
    """The measurements of the CSV file at ``path`` (see ``parse_measurements``)."""
    return parse_measurements(read_text(path, MeasurementsError, "measurements file"), str(path))


def shipped_measurements() -> Path:
    """The package's own file of published measurements, each row cited."""
    from importlib import resources

    return Path(str(resources.files("sweeps.calibrate").joinpath("data", "measurements.csv")))
