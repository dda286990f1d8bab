"""Reading a measurements file: published or one's own results, each row checked at the door.

Columns (docs/calibration.md lists them with units): ``model, hardware, tp, weight_dtype,
kv_dtype, compute_dtype, batch, prompt_tokens, output_tokens, metric, value, basis, source``
(``per`` is the older name of ``basis``), and optionally ``gpus, parallel, load, concurrency``;
any other column is kept, unless it is one ``sweeps calibrate`` writes (``bound``, ``status``,
...), which is refused. Every problem names the file, the line and the column.
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
    "basis",
    "source",
)
"""The columns every measurements file has, in this order in the shipped one."""

OPTIONAL = ("gpus", "parallel", "load", "concurrency")
"""Columns a file may leave out (or leave empty): ``gpus`` defaults to ``tp``, ``parallel`` to
``tp``, ``load`` to unstated and ``concurrency`` to none (a static or max-throughput run)."""

ALIASES = {"per": "basis"}
"""Older column names, read as the current one (a file may not hold both with different values)."""

METRICS = {
    "output_tokens_per_s": "token/s",
    "ttft_s": "s",
    "itl_s": "s",
    "request_latency_s": "s",
}
"""The measured metrics and their units; throughputs are bounded above, latencies below."""

BASES = ("device", "replica", "system")
"""What a throughput is per: one device, one replica of ``tp`` devices, or all ``gpus``."""

PARALLEL = ("tp", "ep+dp", "pp")
"""How the ``gpus`` were used: tensor parallel, attention data parallel with experts split over
the GPUs, or pipeline stages."""

LOADS = ("idle", "under-load")
"""For latencies: measured alone (or as one static batch), or while other requests were served."""

MAX_CONFIGURATIONS = 200
"""Most distinct configurations (model, device, tp, dtypes) in one measurements file [1]:
each is one grid of bounds (about 0.1 s each), so a file's cost is known before any is
built."""

MAX_WORKLOAD_POINTS = 10**6
"""Most points of one configuration's grid of bounds [1]: its distinct batches x contexts x
prompts (x prompt and output lengths of the rows the serving table bounds: request latencies
and closed-loop throughputs)."""

LIMITS = {"tp": "MAX_COUNT", "batch": "MAX_BATCH"}
"""Integer columns held to a config's limit (``sweeps.limits``, by name); the others
(tokens, gpus, concurrency) to ``MAX_TOKENS``: each row's bound is a sweep of its values."""

MAX_BATCH = "max"
"""``batch = max``: the best batch that fits (the memory wall, with no reserve)."""

FILE_LIMIT = 512 * 2**20
"""The largest measurements file read [byte]: 48,000 rows of a few hundred bytes fit easily."""

SHOWN = 40
"""Characters of a cell a message quotes; a longer one is cut (a 200 KB cell stays readable)."""


@dataclass(frozen=True)
class Measurement:
    """One measured result, validated. ``batch`` is ``None`` for ``max``.

    basis : ``device``, ``replica`` or ``system`` (what a throughput is per)
    gpus : GPUs the measured run used [device]
    parallel : ``tp``, ``ep+dp`` or ``pp``
    load : ``idle``, ``under-load`` or ``""`` (not stated)
    concurrency : Closed-loop clients [request]; ``None`` where the run was not closed-loop
    path : The measurements file the row comes from
    """

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
    basis: str
    source: str
    extra: dict[str, str]
    gpus: int = 1
    parallel: str = "tp"
    load: str = ""
    concurrency: int | None = None
    path: str = "<measurements>"

    @property
    def per(self) -> str:
        """The older name of ``basis``."""
        return self.basis


def _shown(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[:SHOWN] + "...")


class _Row:
    """Typed access to one CSV row with messages that name the file, line and column."""

    def __init__(self, path: str, line: int, row: dict[str, str]) -> None:
        self.path, self.line, self.row = path, line, row

    def fail(self, column: str, problem: str) -> MeasurementsError:
        return MeasurementsError(f"{self.path}: line {self.line}: column {column!r}: {problem}")

    def optional(self, column: str) -> str:
        return (self.row.get(column) or "").strip()

    def text(self, column: str) -> str:
        value = self.optional(column)
        if not value:
            raise self.fail(column, "is empty")
        return value

    def _ascii(self, column: str, text: str, what: str) -> None:
        if not text.isascii():
            raise self.fail(column, f"{_shown(text)} is not {what} (ASCII digits only)")

    def integer(self, column: str, default: int | None = None) -> int:
        text = self.optional(column)
        if not text and default is not None:
            return default
        text = self.text(column)
        self._ascii(column, text, "a whole number")
        try:
            value = int(text)
        except ValueError:
            raise self.fail(column, f"{_shown(text)} is not a whole number") from None
        from sweeps import limits

        top = int(getattr(limits, LIMITS.get(column, "MAX_TOKENS")))
        if not 1 <= value <= top:
            raise self.fail(column, f"{value} is out of range; allowed: 1 to {top:,}")
        return value

    def number(self, column: str) -> float:
        text = self.text(column)
        self._ascii(column, text, "a number")
        try:
            value = float(text)
        except ValueError:
            raise self.fail(column, f"{_shown(text)} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise self.fail(column, f"{_shown(text)} must be a finite number > 0")
        return value

    def choice(self, column: str, allowed: tuple[str, ...], default: str | None = None) -> str:
        value = self.optional(column)
        if not value and default is not None:
            return default
        value = self.text(column)
        if value not in allowed:
            raise self.fail(column, f"unknown {_shown(value)}; allowed: {', '.join(allowed)}")
        return value

    def lookup(self, column: str, find: Any) -> str:
        value = self.text(column)
        try:
            record = find(value)
        except CatalogError as error:
            raise self.fail(column, str(error)) from None
        return str(getattr(record, "id", None) or record.name)


def _basis(row: _Row) -> str:
    """``basis``, or its older name ``per``; both given must agree."""
    per = row.optional("per")
    if "basis" in row.row and "per" in row.row and row.optional("basis") != per:
        error = row.fail("per", f"{_shown(per)} disagrees with basis {row.optional('basis')!r}")
        raise error
    return row.choice("basis" if "basis" in row.row else "per", BASES)


def _gpus(row: _Row, tp: int, parallel: str) -> int:
    gpus = row.integer("gpus", default=tp)
    if gpus % tp:
        whole = "replicas" if parallel == "tp" else f"{parallel} ranks or stages"
        error = row.fail("gpus", f"{gpus} GPUs do not make whole {whole} of tp {tp}")
        raise error
    return gpus


def _measurement(row: _Row, catalog: Catalog) -> Measurement:
    batch_text = row.text("batch")
    tp = row.integer("tp")
    parallel = row.choice("parallel", PARALLEL, default="tp")
    concurrency = row.integer("concurrency") if row.optional("concurrency") else None
    return Measurement(
        line=row.line,
        model=row.lookup("model", catalog.lookup_model),
        hardware=row.lookup("hardware", catalog.lookup_hardware),
        tp=tp,
        weight_dtype=row.lookup("weight_dtype", catalog.lookup_dtype),
        kv_dtype=row.lookup("kv_dtype", catalog.lookup_dtype),
        compute_dtype=row.choice("compute_dtype", ("auto", *COMPUTE_DTYPES)),
        batch=None if batch_text == MAX_BATCH else row.integer("batch"),
        prompt_tokens=row.integer("prompt_tokens"),
        output_tokens=row.integer("output_tokens"),
        metric=row.choice("metric", tuple(METRICS)),
        value=row.number("value"),
        basis=_basis(row),
        source=row.text("source"),
        extra={k: v for k, v in row.row.items() if k not in _READ and k is not None},
        gpus=_gpus(row, tp, parallel),
        parallel=parallel,
        load=row.choice("load", LOADS, default=""),
        concurrency=concurrency,
        path=row.path,
    )


_READ = frozenset((*COLUMNS, *OPTIONAL, *ALIASES))

WRITTEN = (
    "line",
    "batch_given",
    "context",
    "unit",
    "bound",
    "ratio",
    "bottleneck",
    "beats_bound",
    "status",
    "reason",
    "in_medians",
)
"""Columns ``sweeps calibrate`` adds to each row: a file's own column of one of these names
would overwrite the verdict, so it is refused."""


def _header(path: str, names: list[str]) -> None:
    """The header's problems: a required column missing, a name given twice, a column that
    ``sweeps calibrate`` writes."""
    have = set(names) | {ALIASES.get(name, name) for name in names}
    missing = [c for c in COLUMNS if c not in have]
    if missing:
        older = {new: old for old, new in ALIASES.items()}
        shown = [f"{c!r} (or {older[c]!r})" if c in older else repr(c) for c in missing]
        msg = (
            f"{path}: line 1: missing column(s) {', '.join(shown)}; "
            f"a measurements file has {', '.join(COLUMNS)}"
        )
        raise MeasurementsError(msg)
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        msg = f"{path}: line 1: column(s) {', '.join(map(repr, twice))} given twice"
        raise MeasurementsError(msg)
    clash = [name for name in names if name in WRITTEN]
    if clash:
        column = names.index(clash[0]) + 1
        msg = (
            f"{path}: line 1, column {column}: {clash[0]!r} is a column sweeps calibrate "
            f"writes (its own verdict); rename or drop it. Written: {', '.join(WRITTEN)}"
        )
        raise MeasurementsError(msg)


def _cells(path: str, line: int, row: dict[Any, Any]) -> dict[str, str]:
    """The row's cells; a NUL or a cell beyond the header is an error naming line and column."""
    if None in row:
        extra = row[None]
        msg = f"{path}: line {line}: {len(extra)} cell(s) more than the header's columns"
        raise MeasurementsError(msg)
    for column, value in row.items():
        if value is not None and "\x00" in value:
            msg = f"{path}: line {line}: column {column!r}: contains a NUL character"
            raise MeasurementsError(msg)
    return row


def _records(text: str, path: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and each row with the line it starts on (a quoted newline spans lines)."""
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))  # no cell is cut short
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        names = list(reader.fieldnames or [])
        _header(path, names)
        rows, start = [], reader.line_num + 1
        for row in reader:
            rows.append((start, _cells(path, start, row)))
            start = reader.line_num + 1
    except csv.Error as error:
        msg = f"{path}: line {reader.line_num}: not a well-formed CSV row: {error}"
        raise MeasurementsError(msg) from None
    return names, rows


def parse_measurements(text: str, path: str = "<measurements>") -> list[Measurement]:
    """Every row of a measurements CSV ``text``, validated against the catalog."""
    _, records = _records(text, path)
    catalog = load_catalog()
    rows = [_measurement(_Row(path, line, row), catalog) for line, row in records]
    if not rows:
        msg = f"{path}: no measurements (only a header)"
        raise MeasurementsError(msg)
    _check_size(rows, path)
    return rows


def _check_size(rows: list[Measurement], path: str) -> None:
    """The file's configurations and each one's grid of bounds against their caps, from the
    distinct values alone (one pass), before any grid is built."""
    from sweeps.limits import MAX_TOKENS

    groups: dict[tuple[Any, ...], tuple[int, list[set[int]]]] = {}
    for m in rows:
        context = m.prompt_tokens + m.output_tokens // 2
        if context > MAX_TOKENS:
            msg = (
                f"{path}: line {m.line}: prompt_tokens + output_tokens / 2 = {context:,} is "
                f"a longer context than {MAX_TOKENS:,}; allowed: at most {MAX_TOKENS:,}"
            )
            raise MeasurementsError(msg)
        key = (m.model, m.hardware, m.tp, m.weight_dtype, m.kv_dtype, m.compute_dtype)
        _, values = groups.setdefault(key, (m.line, [set(), set(), set(), set(), set()]))
        if len(groups) > MAX_CONFIGURATIONS:
            msg = (
                f"{path}: line {m.line}: more than {MAX_CONFIGURATIONS} distinct configurations "
                "(model, hardware, tp, weight_dtype, kv_dtype, compute_dtype); allowed: at most "
                f"{MAX_CONFIGURATIONS} in one file: split it"
            )
            raise MeasurementsError(msg)
        for index, value in enumerate((m.batch or 0, context, m.prompt_tokens)):
            values[index].add(value)
        if needs_serving(m):
            values[3].add(m.prompt_tokens)
            values[4].add(m.output_tokens)
    for key, (line, values) in groups.items():
        points = math.prod(max(1, len(v)) for v in values)
        if points > MAX_WORKLOAD_POINTS:
            msg = (
                f"{path}: line {line}: the workloads of {key[0]} on {key[1]} (tp {key[2]}) "
                f"make a grid of {points:,} bounds (distinct batches x contexts x prompts); "
                f"allowed: at most {MAX_WORKLOAD_POINTS:,}: split the file"
            )
            raise MeasurementsError(msg)


def needs_serving(m: Measurement) -> bool:
    """The row is bounded from the serving table: a request latency (the static mode) or a
    closed-loop throughput (the ``bound`` mode at its concurrency)."""
    return m.metric == "request_latency_s" or (
        m.metric == "output_tokens_per_s" and m.concurrency is not None
    )


def load_measurements(path: str | Path) -> list[Measurement]:
    """The measurements of the CSV file at ``path`` (see ``parse_measurements``)."""
    text = read_text(path, MeasurementsError, "measurements file", limit=FILE_LIMIT)
    return parse_measurements(text, str(path))


def shipped_measurements() -> Path:
    """The package's own file of published measurements, each row cited."""
    from importlib import resources

    return Path(str(resources.files("sweeps.calibrate").joinpath("data", "measurements.csv")))
