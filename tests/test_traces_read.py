"""Reading traces: each format on a slice of it, against an independent reading of the same
file (the standard library's csv, json and datetime), and every malformed input named by
file, line and column."""

from __future__ import annotations

import csv
import json
import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.errors import ConfigError, TraceError
from sweeps.traces import FORMATS, read_trace
from sweeps.traces.data import shipped

AZURE = shipped("azure-conv-2023.csv")
MOONCAKE = shipped("mooncake-conversation.jsonl")


def test_the_azure_slice_is_read_as_the_standard_library_reads_it() -> None:
    with AZURE.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    stamps = [datetime.fromisoformat(r["TIMESTAMP"][:26]) for r in rows]
    seconds = np.array([(s - stamps[0]).total_seconds() for s in stamps])
    trace = read_trace(AZURE)
    assert trace.format == "azure"
    assert trace.requests == trace.rows == len(rows) == 3000
    assert trace.dropped == {}
    # 7 decimals in the file, microseconds in datetime: equal to 1e-6 s
    np.testing.assert_allclose(trace.arrival, seconds, atol=1.5e-6, rtol=0)
    np.testing.assert_array_equal(trace.prompt, [int(r["ContextTokens"]) for r in rows])
    np.testing.assert_array_equal(trace.output, [int(r["GeneratedTokens"]) for r in rows])
    assert not trace.has_hashes


def test_the_mooncake_slice_is_read_as_json_reads_it() -> None:
    records = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    trace = read_trace(MOONCAKE)
    assert trace.format == "mooncake"
    assert trace.requests == len(records) == 1000
    first = records[0]["timestamp"]
    np.testing.assert_allclose(trace.arrival, [(r["timestamp"] - first) / 1e3 for r in records])
    np.testing.assert_array_equal(trace.prompt, [r["input_length"] for r in records])
    np.testing.assert_array_equal(trace.output, [r["output_length"] for r in records])
    assert trace.hashes is not None
    assert trace.offsets is not None
    for i in (0, 1, 500, 999):
        got = trace.hashes[trace.offsets[i] : trace.offsets[i + 1]]
        np.testing.assert_array_equal(got, records[i]["hash_ids"])
    # 512-token blocks: the blocks' tokens add up to the prompts
    assert trace.block_tokens == 512
    assert trace.block_tokens_of().sum() == trace.prompt.sum()


def test_burstgpt_drops_failed_requests_and_counts_them(tmp_path: Path) -> None:
    # BurstGPT's layout (rows made up): 0 response tokens is a failed request
    path = tmp_path / "burst.csv"
    path.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "45,ChatGPT,1087,0,1087,Conversation log\n"
        "118,GPT-4,417,276,693,API log\n"
        "130,GPT-4,0,12,12,API log\n"
    )
    trace = read_trace(path)
    assert trace.format == "burstgpt"
    assert trace.rows == 4
    assert trace.dropped == {"failed": 1, "zero-length": 1}
    np.testing.assert_array_equal(trace.arrival, [0.0, 113.0])
    np.testing.assert_array_equal(trace.prompt, [472, 417])
    np.testing.assert_array_equal(trace.output, [18, 276])


def test_the_azure_2024_layout_with_its_utc_offset(tmp_path: Path) -> None:
    path = tmp_path / "azure2024.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-10 00:00:00.009930+00:00,2162,5\n"
        "2024-05-10 00:00:01.509930+00:00,0,9\n"
        "2024-05-10 00:00:02.000000+00:00,1020,220\n"
    )
    for name in (None, "azure-2024", "azure"):
        trace = read_trace(path, format=name)
        np.testing.assert_allclose(trace.arrival, [0.0, 1.99007])
        assert trace.dropped == {"zero-length": 1}


def test_the_package_csv_keeps_its_times_as_written(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n2.5,10,3\n4,20,1\n")
    trace = read_trace(path)
    assert trace.format == "sweeps"
    np.testing.assert_array_equal(trace.arrival, [2.5, 4.0])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 1e6, allow_nan=False), st.integers(1, 10**6), st.integers(1, 10**5)),
        min_size=1,
        max_size=40,
    )
)
def test_any_package_csv_round_trips(tmp_path_factory, rows) -> None:  # type: ignore[no-untyped-def]
    rows.sort(key=lambda r: r[0])
    path = tmp_path_factory.mktemp("rt") / "t.csv"
    lines = [f"{t!r},{i},{o}" for t, i, o in rows]
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "\n".join(lines) + "\n")
    trace = read_trace(path)
    np.testing.assert_array_equal(trace.arrival, [r[0] for r in rows])
    np.testing.assert_array_equal(trace.prompt, [r[1] for r in rows])
    np.testing.assert_array_equal(trace.output, [r[2] for r in rows])


HEADER = "arrival_s,prompt_tokens,output_tokens\n"

BAD = [
    ("", r"line 1: the file is empty"),
    ("\n\n", r"line 1: the file is empty"),
    (HEADER, r"line 2: the trace has no requests"),
    ("arrival_s,prompt_tokens\n0,1\n", r"line 1: no column 'output_tokens'"),
    ("when,what\n0,1\n", r"line 1: columns \['when', 'what'\] are no trace format's"),
    (HEADER + "0,10,2\n1,-5,2\n", r"line 3: column 'prompt_tokens': -5 must be a whole number"),
    (HEADER + "0,10,2\n1,10,0\n", r"line 3: column 'output_tokens': 0 must be a whole number >= 1"),
    (HEADER + "0,10,2\n1,10.5,2\n", r"line 3: column 'prompt_tokens': 10.5 must be a whole"),
    (HEADER + "0,10,2\n1,ten,2\n", r"line 3: column 'prompt_tokens': 'ten' is not a number"),
    (HEADER + "0,10,2\n1,,2\n", r"line 3: column 'prompt_tokens': is empty"),
    (HEADER + "0,10,2\n2,10,2\n1,10,2\n", r"line 4: column 'arrival_s': '1' is before the line above's '2'"),
    (HEADER + "-1,10,2\n", r"line 2: column 'arrival_s': -1.0 must be >= 0"),
    (HEADER + "inf,10,2\n", r"line 2: column 'arrival_s': inf must be >= 0"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_malformed_csv_is_named_by_line_and_column(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(TraceError, match=rf"bad.csv: {message}"):
        read_trace(path)


def test_a_malformed_jsonl_is_named_by_line_and_key(tmp_path: Path) -> None:
    good = '{"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]}\n'
    path = tmp_path / "bad.jsonl"
    cases = [
        ('{"timestamp": "x", "input_length": 1, "output_length": 1, "hash_ids": [2]}',
         r"line 2: column 'timestamp': 'x' is not a number"),
        ('{"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [2, "a"]}',
         r"line 2: column 'hash_ids': '\[2,\"a\"\]' is not a list of whole numbers"),
        ('{"timestamp": 5, "input_length": 1, "output_length": 1}',
         r"line 2: column 'hash_ids': is missing: a list of whole numbers"),
        ('{"timestamp": 5, "input_length": -1, "output_length": 1, "hash_ids": []}',
         r"line 2: column 'input_length': -1 must be a whole number >= 0"),
    ]  # fmt: skip
    for line, message in cases:
        path.write_text(good + line + "\n")
        with pytest.raises(TraceError, match=rf"bad.jsonl: {message}"):
            read_trace(path)
    path.write_text('{"ts": 0}\n')
    with pytest.raises(TraceError, match=r"line 1: no column 'timestamp'"):
        read_trace(path)


def test_what_is_not_a_trace_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"missing.csv: cannot read the trace"):
        read_trace(tmp_path / "missing.csv")
    with pytest.raises(TraceError, match=r"not a regular file"):
        read_trace(tmp_path)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        with pytest.raises(TraceError, match=r"fifo: not a regular file"):
            read_trace(fifo)
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "0,1,1\n")
    with pytest.raises(TraceError, match=r"format = 'csv' is no trace format \(allowed: sweeps"):
        read_trace(path, format="csv")
    assert issubclass(TraceError, ConfigError)


def test_every_format_declares_distinct_columns() -> None:
    """Recognition by columns needs no two formats of the same columns."""
    keys = [(f.jsonl, frozenset(f.columns)) for f in FORMATS.values()]
    assert len(set(keys)) == len(keys)
