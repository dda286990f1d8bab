"""Reading a request trace with Polars: scanned lazily, streamed, every problem named by file,
line and column.

``read_trace(path, format=None)`` recognises the format by its columns (a CSV's header, a
JSONL file's first record) or takes it by name (``sweeps.traces.formats``). The file is
scanned lazily and collected by Polars' streaming engine, only the needed columns, so a
gigabyte file is never held as text. Each cell is checked: an empty or non-numeric cell, a
negative or fractional length, a time before the row above, a missing column or an empty
file raise ``TraceError`` naming the file, the line (the header is line 1 of a CSV) and the
column; a length of 0 is dropped and counted, or is an error, as the format documents.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sweeps.errors import TraceError
from sweeps.traces.formats import FORMATS, NAMES, Format, named, recognised
from sweeps.traces.trace import Trace

PEEK = 1 << 20
"""Bytes read to see a file's first line (a JSONL record's keys) [byte]."""

SHOWN = 40
"""Characters of a cell a message quotes."""

HASHES = r"^\s*\[\s*(-?\d+\s*(,\s*-?\d+\s*)*)?\]\s*$"
"""A list of whole numbers in JSON: what ``hash_ids`` holds."""

_DATETIME = "%Y-%m-%d %H:%M:%S%.f"


def _fail(path: Path, line: int, column: str, problem: str) -> TraceError:
    return TraceError(f"{path}: line {line}: column {column!r}: {problem}")


def _first_line(path: Path) -> str:
    """The file's first non-blank line; a ``TraceError`` if it is not a readable regular
    file or holds nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        msg = f"{path}: cannot read the trace: {exc.strerror or exc}"
        raise TraceError(msg) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        msg = f"{path}: not a regular file; a trace must be a CSV or JSONL file"
        raise TraceError(msg)
    with os.fdopen(fd, "rb") as handle:
        head = handle.read(PEEK)
    text = head.decode("utf-8", errors="replace").lstrip()
    if not text:
        msg = f"{path}: line 1: the file is empty; a trace needs a header and requests"
        raise TraceError(msg)
    return text.splitlines()[0]


def _columns(path: Path, first: str, jsonl: bool) -> list[str]:
    """The columns of a CSV's header, or the keys of a JSONL file's first record."""
    if not jsonl:
        try:
            return pl.scan_csv(path, infer_schema=False).collect_schema().names()
        except pl.exceptions.PolarsError as exc:
            msg = f"{path}: line 1: not a CSV header ({str(exc).splitlines()[0]})"
            raise TraceError(msg) from None
    try:
        record = json.loads(first)
    except json.JSONDecodeError as exc:
        msg = f"{path}: line 1: not a JSON record ({exc.msg})"
        raise TraceError(msg) from None
    return list(record) if isinstance(record, dict) else []


def _format(path: Path, columns: list[str], jsonl: bool, name: str | None) -> Format:
    """The named format, or the one the columns match best; its columns all there."""
    if name is not None:
        fmt = named(name)
        if fmt is None:
            msg = f"{path}: format = {name!r} is no trace format (allowed: {', '.join(NAMES)})"
            raise TraceError(msg)
    else:
        fmt = recognised(columns, jsonl)
        if not jsonl and not set(fmt.columns) & set(columns):  # JSONL: Mooncake's alone
            allowed = "; ".join(f"{f.name}: {', '.join(f.columns)}" for f in FORMATS.values())
            msg = f"{path}: line 1: columns {columns[:6]} are no trace format's ({allowed})"
            raise TraceError(msg)
    missing = [c for c in fmt.columns if c not in columns]
    if missing:
        msg = (
            f"{path}: line 1: no column {missing[0]!r} (the {fmt.name} format's columns: "
            f"{', '.join(fmt.columns)})"
        )
        raise TraceError(msg)
    return fmt


def _raw(path: Path, fmt: Format) -> pl.LazyFrame:
    """The needed cells as text, named by role, beside their ``line`` in the file."""
    roles = fmt.roles
    if not fmt.jsonl:
        frame = pl.scan_csv(path, infer_schema=False).with_row_index("line", offset=2)
        return frame.select("line", *(pl.col(c).alias(r) for r, c in roles.items()))
    lines = pl.scan_csv(
        path, has_header=False, separator="\x1f", quote_char=None, infer_schema=False,
        new_columns=["record"],
    ).with_row_index("line", offset=1)  # fmt: skip
    record = pl.col("record")
    return lines.select(
        "line", *(record.str.json_path_match(f"$.{c}").alias(r) for r, c in roles.items())
    )


def _typed(fmt: Format) -> list[pl.Expr]:
    """Each role as a number (null where its text is not one) and its text's presence."""
    time = pl.col("time").str.strip_chars()
    if fmt.time is None:
        number = pl.lit(0.0, pl.Float64)
    elif fmt.clock == "datetime":
        text = time.str.replace(r"([+-]\d\d:?\d\d|Z)$", "").str.replace("T", " ")
        parsed = text.str.to_datetime(_DATETIME, time_unit="ns", strict=False).cast(pl.Int64)
        number = parsed.cast(pl.Float64)
    else:
        number = time.cast(pl.Float64, strict=False)
    out = [number.alias("time")]
    for role in ("prompt", "output"):
        out.append(pl.col(role).str.strip_chars().cast(pl.Float64, strict=False).alias(role))
    if fmt.hashes:
        ok = pl.col("hashes").str.contains(HASHES)
        out.append(ok.alias("hashes_ok"))
        decoded = pl.when(ok).then(pl.col("hashes")).str.json_decode(pl.List(pl.Int64))
        out.append(decoded.alias("hashes"))
    roles = [r for r in ("time", "prompt", "output") if r in fmt.roles]
    given = [pl.col(r).is_not_null().alias(f"{r}_given") for r in roles]
    return [pl.col("line"), *out, *given]


def _cell(path: Path, fmt: Format, line: int, role: str) -> str:
    """The text of one cell (the error path only: one more lazy scan)."""
    found = _raw(path, fmt).filter(pl.col("line") == line).select(role).collect()
    text = "" if found.height == 0 or found.item() is None else str(found.item())
    return repr(text if len(text) <= SHOWN else text[:SHOWN] + "...")


def _check_cells(path: Path, fmt: Format, frame: pl.DataFrame) -> None:
    """The first empty or unreadable cell, named."""
    columns = fmt.roles
    for role in (r for r in ("time", "prompt", "output") if r in columns):
        given = frame[f"{role}_given"].to_numpy()
        bad = np.flatnonzero(~given | frame[role].is_null().to_numpy())
        if bad.size:
            at = int(frame["line"][int(bad[0])])
            if not given[bad[0]]:
                raise _fail(path, at, columns[role], "is empty")
            what = "a date and time" if role == "time" and fmt.clock == "datetime" else "a number"
            raise _fail(path, at, columns[role], f"{_cell(path, fmt, at, role)} is not {what}")
    if fmt.hashes:
        bad = np.flatnonzero(~frame["hashes_ok"].fill_null(value=False).to_numpy())
        if bad.size:
            at = int(frame["line"][int(bad[0])])
            shown = _cell(path, fmt, at, "hashes")
            problem = "is missing:" if shown == "''" else f"{shown} is not"
            raise _fail(path, at, columns["hashes"], f"{problem} a list of whole numbers")


def _jsonl(path: Path, fmt: Format) -> pl.DataFrame | None:
    """A JSONL trace through Polars' own JSON reader (typed, fast), or None where any record
    does not fit the types: the line-by-line scan then names it."""
    roles = fmt.roles
    schema: dict[str, pl.DataType] = {roles[r]: pl.Float64() for r in ("time", "prompt", "output")}
    if "hashes" in roles:
        schema[roles["hashes"]] = pl.List(pl.Int64())
    try:
        frame = pl.scan_ndjson(path, schema=schema).with_row_index("line", offset=1)
        named = [pl.col(c).alias(r) for r, c in roles.items()]
        given = [pl.col(c).is_not_null().alias(f"{r}_given") for r, c in roles.items()]
        return (
            frame.select("line", *named, *given)
            .collect(engine="streaming")
            .rename({"hashes_given": "hashes_ok"}, strict=False)
        )
    except pl.exceptions.PolarsError:
        return None


def _csv(path: Path, fmt: Format) -> pl.DataFrame | None:
    """A CSV trace of numeric times parsed by Polars as numbers (fast), or None where a cell
    is not one: the scan of text then names it."""
    roles = {r: c for r, c in fmt.roles.items() if r != "hashes"}
    try:
        frame = pl.scan_csv(
            path, infer_schema=False, schema_overrides=dict.fromkeys(roles.values(), pl.Float64)
        ).with_row_index("line", offset=2)
        named = [pl.col(c).alias(r) for r, c in roles.items()]
        given = [pl.col(c).is_not_null().alias(f"{r}_given") for r, c in roles.items()]
        time = [] if "time" in roles else [pl.lit(0.0, pl.Float64).alias("time")]
        return frame.select("line", *named, *time, *given).collect(engine="streaming")
    except pl.exceptions.PolarsError:
        return None


def _collect(path: Path, fmt: Format) -> pl.DataFrame:
    typed = fmt.jsonl or fmt.clock != "datetime"  # wall-clock text: parsed from text alone
    fast = (_jsonl if fmt.jsonl else _csv)(path, fmt) if typed else None
    if fast is not None and fast.height:
        _check_cells(path, fmt, fast)
        return fast
    try:
        frame = _raw(path, fmt).select(_typed(fmt)).collect(engine="streaming")
    except pl.exceptions.PolarsError as exc:
        msg = f"{path}: cannot be read as a {fmt.name} trace: {str(exc).splitlines()[0]}"
        raise TraceError(msg) from None
    if frame.height == 0:
        msg = f"{path}: line 2: the trace has no requests (only a header)"
        raise TraceError(msg)
    _check_cells(path, fmt, frame)
    return frame


def _lengths(path: Path, fmt: Format, frame: pl.DataFrame) -> dict[str, np.ndarray]:
    """Each length checked whole and >= 0, and the rows a 0 drops, by why."""
    lines = frame["line"].to_numpy()
    drops: dict[str, np.ndarray] = {}
    for role, column, rule in (
        ("prompt", fmt.prompt, fmt.zero_prompt),
        ("output", fmt.output, fmt.zero_output),
    ):
        values = frame[role].to_numpy()
        bad = np.flatnonzero((values < 0) | (values != np.floor(values)) | ~np.isfinite(values))
        zero = values == 0
        if rule == "error":
            bad = np.union1d(bad, np.flatnonzero(zero))
        if bad.size:
            value = float(values[bad[0]])
            shown = int(value) if value == np.floor(value) else value
            need = "a whole number >= 1" if rule == "error" else "a whole number >= 0"
            raise _fail(path, int(lines[bad[0]]), column, f"{shown!r} must be {need}")
        reason = "failed" if rule == "failed" else "zero-length"
        drops[reason] = drops.get(reason, np.zeros(values.size, bool)) | zero
    return drops


def _times(path: Path, fmt: Format, frame: pl.DataFrame) -> np.ndarray:
    """The times checked (finite, >= 0 unless wall-clock, sorted), in seconds."""
    lines, raw = frame["line"].to_numpy(), frame["time"].to_numpy()
    if fmt.time is None:
        return raw
    if fmt.clock != "datetime":
        bad = np.flatnonzero(~np.isfinite(raw) | (raw < 0))
        if bad.size:
            shown = float(raw[bad[0]])
            raise _fail(path, int(lines[bad[0]]), fmt.time, f"{shown!r} must be >= 0")
    late = np.flatnonzero(np.diff(raw) < 0)
    if late.size:
        at = late[0] + 1
        raise _fail(
            path, int(lines[at]), fmt.time,
            f"{_cell(path, fmt, int(lines[at]), 'time')} is before the line above's "
            f"{_cell(path, fmt, int(lines[at - 1]), 'time')}; a trace's times must be sorted",
        )  # fmt: skip
    if fmt.clock == "datetime":  # whole nanoseconds: subtract before scaling
        ns = frame["time"].cast(pl.Int64).to_numpy()
        return (ns - ns[0]) / 1e9
    scale = 1e-3 if fmt.clock == "milliseconds" else 1.0
    return (raw - raw[0]) * scale if fmt.shift else raw * scale


def read_trace(path: str | Path, format: str | None = None) -> Trace:
    """The trace in ``path`` (CSV or JSONL), its format recognised or ``format``.

    Raises ``TraceError`` naming the file, line and column of the first problem.
    """
    path = Path(path)
    first = _first_line(path)
    fmt = named(format) if format is not None else None
    jsonl = fmt.jsonl if fmt is not None else first.startswith("{")
    fmt = _format(path, _columns(path, first, jsonl), jsonl, format)
    frame = _collect(path, fmt)
    drops = _lengths(path, fmt, frame)
    times = _times(path, fmt, frame)
    dropped = np.zeros(frame.height, bool)
    counts: dict[str, int] = {}
    for reason, rows in drops.items():
        counts[reason] = int(np.count_nonzero(rows & ~dropped))
        dropped |= rows
    keep = ~dropped
    if not keep.any():
        msg = f"{path}: every one of its {frame.height} requests was dropped ({counts})"
        raise TraceError(msg)
    hashes: dict[str, Any] = {}
    if fmt.hashes:
        lists = frame["hashes"].filter(pl.Series(keep))
        counts_of = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts_of)]).astype(np.int64)
        flat = lists.explode().drop_nulls().to_numpy().astype(np.int64)
        hashes = {"hashes": flat, "offsets": offsets, "block_tokens": fmt.block_tokens}
    kept_times = times[keep]
    if fmt.shift:
        kept_times = kept_times - kept_times[0]
    return Trace(
        arrival=kept_times,
        prompt=frame["prompt"].to_numpy()[keep].astype(np.int64),
        output=frame["output"].to_numpy()[keep].astype(np.int64),
        format=fmt.name,
        source=str(path),
        rows=frame.height,
        dropped={k: v for k, v in counts.items() if v},
        **hashes,
    )
