"""A qlog that starts with a UTF-8 byte order mark is read as without it; a NaN (or Infinity), which JSON does not
have, costs the event that holds it and is named with its line and column, not taken for a file cut while being
written. Every file is a recorded one of tests/data/qlog modified here as the test's name says, read by both engines
(quicack.qlog.reader_engine): their tables must be equal (tests/test_qlog_engines.py)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from test_qlog_common import QLOG_DATA
from test_qlog_engines import HAS_LANE, TABLES, _tables

from quicack.reading.limits import DEFAULT_LIMITS

AIOQUIC = QLOG_DATA / "aioquic" / "client.qlog"  # one JSON document, vantage_point after the events
NGTCP2 = QLOG_DATA / "ngtcp2" / "client.sqlog"  # JSON-SEQ
QUIC_GO_NDJSON = (
    QLOG_DATA / "synthetic" / "quic_go_draft02_client.qlog"
)  # NDJSON: none recorded here, the synthetic one
BOM = b"\xef\xbb\xbf"
ENGINES = ["python", "compiled"] if HAS_LANE else ["python"]


def both_engines(path: Path, batch_events: int = 50_000) -> dict[str, pl.DataFrame]:
    """The tables of ``path``, the same from each engine."""
    tables = [_tables(path, engine, batch_events, DEFAULT_LIMITS) for engine in ENGINES]
    for name in TABLES:
        for other in tables[1:]:
            assert tables[0][name].equals(other[name]), f"{path.name}: {name} differs between the engines"
    return tables[0]


def messages(tables: dict[str, pl.DataFrame]) -> list[str]:
    """The issue messages without the file name they start with."""
    return [m.split(": ", 1)[1] for m in tables["ingest_issues"]["message"].to_list()]


def same_rows(tables: dict[str, pl.DataFrame], source: Path, batch_events: int) -> None:
    expected = both_engines(source, batch_events)
    for name in ("packets", "frames", "metrics_logged"):
        assert tables[name].equals(expected[name]), name
    assert tables["endpoints"].drop("path").equals(expected["endpoints"].drop("path"))
    assert messages(tables) == messages(expected)


@pytest.mark.parametrize(
    "source", [AIOQUIC, NGTCP2, QUIC_GO_NDJSON], ids=["json_document", "json_seq", "ndjson_synthetic"]
)
@pytest.mark.parametrize("batch_events", [50_000, 3])
def test_qlog_with_a_utf8_bom_reads_as_without(tmp_path: Path, source: Path, batch_events: int):
    path = tmp_path / f"bom{source.suffix}"
    path.write_bytes(BOM + source.read_bytes())
    same_rows(both_engines(path, batch_events), source, batch_events)


def test_json_seq_with_a_utf8_bom_numbers_its_records_as_without(tmp_path: Path):
    """Record numbers in messages count from the first record after the mark, in both engines."""
    records = NGTCP2.read_bytes().split(b"\x1e")
    records[5] = b'{"time": 3, "name": "transport:packet_sent", "data": {'  # broken, not the last one
    path = tmp_path / "bom_damaged.sqlog"
    path.write_bytes(BOM + b"\x1e".join(records))
    [message] = messages(both_engines(path))
    assert "skipped unreadable record 5 at byte 1198 " in message  # the byte counts the mark


def test_json_document_with_nan_in_an_event(tmp_path: Path):
    """aioquic's first event with NaN for its chosen_version: that event is skipped and named, everything else is
    read, vantage_point after the events too (it was lost, the file said cut while being written)."""
    data = AIOQUIC.read_bytes()
    at = data.index(b'"chosen_version": 1') + len(b'"chosen_version": ')
    path = tmp_path / "nan_in_an_event.qlog"
    path.write_bytes(data[:at] + b"NaN" + data[at + 1 :])
    tables = both_engines(path)
    [message] = messages(tables)
    assert "NaN" in message and f"line 1, column {at + 1}" in message and "not JSON" in message
    assert "cut" not in message
    full = both_engines(AIOQUIC)
    assert tables["endpoints"]["events"].to_list() == [full["endpoints"]["events"][0] - 1]
    assert tables["endpoints"]["vantage"].to_list() == ["client"]
    assert tables["packets"].equals(full["packets"])


def test_json_document_with_infinity_in_its_last_event(tmp_path: Path):
    data = AIOQUIC.read_bytes()
    last = data.rindex(b'"cwnd": ')
    path = tmp_path / "infinity_in_the_last_event.qlog"
    path.write_bytes(data[: last + 8] + b"-Infinity" + data[data.index(b",", last) :])
    tables = both_engines(path)
    [message] = messages(tables)
    assert "-Infinity" in message and f"column {last + 9}" in message and "cut" not in message
    full = both_engines(AIOQUIC)
    assert tables["endpoints"]["events"].to_list() == [full["endpoints"]["events"][0] - 1]
    assert tables["endpoints"]["vantage"].to_list() == ["client"]


def test_json_document_with_nan_outside_the_events(tmp_path: Path):
    """NaN in the trace's fields after the events: the events are kept, and the message names the token."""
    data = AIOQUIC.read_bytes()
    path = tmp_path / "nan_after_the_events.qlog"
    path.write_bytes(data.replace(b'"vantage_point": {', b'"x": NaN, "vantage_point": {'))
    tables = both_engines(path)
    problems = [m for m in messages(tables) if "JSON" in m]
    assert len(problems) == 1 and "NaN" in problems[0] and "cut" not in problems[0]
    assert tables["packets"].height == both_engines(AIOQUIC)["packets"].height


def test_json_seq_with_nan_in_its_last_record(tmp_path: Path):
    """JSON-SEQ: the record with NaN is skipped and the token named; in the last record it is no cut either."""
    data = NGTCP2.read_bytes().rstrip(b"\n")
    last = data.rindex(b"\x1e")
    record = re.sub(rb'"time":[0-9.]+', b'"time":NaN', data[last:], count=1)
    path = tmp_path / "nan_in_the_last_record.sqlog"
    path.write_bytes(data[:last] + record + b"\n")
    [message] = messages(both_engines(path))
    assert "NaN" in message and "line 1, column 9" in message and "cut" not in message
