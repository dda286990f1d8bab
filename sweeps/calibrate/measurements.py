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

MAX_CONFIGURATIONS = 200
"""Most distinct configurations (model, device, tp, dtypes) in one measurements file [1]:
each is one grid of bounds (about 0.1 s each), so a file's cost is known before any is
built."""

MAX_WORKLOAD_POINTS = 10**6
"""Most points of one configuration's grid of bounds [1]: its distinct batches x contexts x
prompts (x prompt and output lengths of the request-latency rows)."""

LIMITS = {"tp": "MAX_COUNT", "batch": "MAX_BATCH", "prompt_tokens": "MAX_TOKENS"}
"""The integer columns held to a config's limit (``sweeps.config.limits``, by name): each
row's bound is a sweep of those values. ``output_tokens``: ``MAX_TOKENS`` too."""

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
        from sweeps.config import limits

        top = int(getattr(limits, LIMITS.get(column, "MAX_TOKENS")))
        if not 1 <= value <= top:
            raise self.fail(column, f"{value} is out of range; allowed: 1 to {top:,}")
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
    try:
        return _parse(csv.DictReader(io.StringIO(text, newline="")), path)
    except csv.Error as error:  # a stray quote or carriage return: the reader's own words
        msg = f"{path}: not a readable CSV file: {error}"
        raise MeasurementsError(msg) from None


def _parse(reader: csv.DictReader[str], path: str) -> list[Measurement]:
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
    _check_size(rows, path)
    return rows


def _check_size(rows: list[Measurement], path: str) -> None:
    """The file's configurations and each one's grid of bounds, against their caps, from the
    distinct values alone (one pass): before any grid is built."""
    from sweeps.config.limits import MAX_TOKENS

    groups: dict[tuple[Any, ...], list[set[int]]] = {}
    first: dict[tuple[Any, ...], int] = {}
    for m in rows:
        key = (m.model, m.hardware, m.tp, m.weight_dtype, m.kv_dtype, m.compute_dtype)
        if m.prompt_tokens + m.output_tokens // 2 > MAX_TOKENS:
            msg = (
                f"{path}: line {m.line}: prompt_tokens + output_tokens / 2 = "
                f"{m.prompt_tokens + m.output_tokens // 2:,} is a longer context than "
                f"{MAX_TOKENS:,}; allowed: at most {MAX_TOKENS:,}"
            )
            raise MeasurementsError(msg)
        values = groups.setdefault(key, [set(), set(), set(), set(), set()])
        first.setdefault(key, m.line)
        if len(groups) > MAX_CONFIGURATIONS:
            msg = (
                f"{path}: line {m.line}: more than {MAX_CONFIGURATIONS} distinct configurations "
                "(model, hardware, tp, weight_dtype, kv_dtype, compute_dtype); allowed: at most "
                f"{MAX_CONFIGURATIONS} in one file: split it"
            )
            raise MeasurementsError(msg)
        for index, value in enumerate(
            (m.batch or 0, m.prompt_tokens + m.output_tokens // 2, m.prompt_tokens)
        ):
            values[index].add(value)
        if m.metric == "request_latency_s":
            values[3].add(m.prompt_tokens)
            values[4].add(m.output_tokens)
    for key, values in groups.items():
        points = math.prod(max(1, len(v)) for v in values)
        if points > MAX_WORKLOAD_POINTS:
            msg = (
                f"{path}: line {first[key]}: the workloads of {key[0]} on {key[1]} (tp {key[2]}) "
                f"make a grid of {points:,} bounds (distinct batches x contexts x prompts); "
                f"allowed: at most {MAX_WORKLOAD_POINTS:,}: split the file"
            )
            raise MeasurementsError(msg)


def load_measurements(path: str | Path) -> list[Measurement]:
    """The measurements of the CSV file at ``path`` (see ``parse_measurements``)."""
    return parse_measurements(read_text(path, MeasurementsError, "measurements file"), str(path))


def shipped_measurements() -> Path:
    """The package's own file of published measurements, each row cited."""
    from importlib import resources

    return Path(str(resources.files("sweeps.calibrate").joinpath("data", "measurements.csv")))
