"""Bad input never raises: each case yields an ingest_issues row a user can act on, and good events are kept.

The damaged files are made here from the real fixtures (hand-made malformed input, as the names say).
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
from test_qlog_common import QLOG_DATA

from quicack.qlog import discover_qlogs, read_qlog, write_qlog_parquet

AIOQUIC = QLOG_DATA / "aioquic" / "client.qlog"
NGTCP2 = QLOG_DATA / "ngtcp2" / "client.sqlog"


def _issues(r) -> list[tuple[str, str]]:
    assert (r.ingest_issues["stage"] == "qlog").all()
    return list(r.ingest_issues.select("severity", "message").iter_rows())


def test_malformed_truncated_json_document_keeps_events_before_the_cut(tmp_path: Path):
    data = AIOQUIC.read_bytes()
    p = tmp_path / "cut.qlog"
    p.write_bytes(data[: len(data) * 6 // 10])
    full = read_qlog(AIOQUIC, "r")
    # aioquic writes vantage_point after the events, so the cut removed it: the caller's vantage is used
    r = read_qlog(p, "r", vantage="client")
    (severity, message), = _issues(r)
    assert severity == "warning"
    assert "damaged at byte" in message and "cut" in message and str(p) in message
    # every packet before the damage is kept, identical to the full read
    assert 0 < r.packets.height < full.packets.height
    assert r.packets.select("event", "packet_number", "time_ms").equals(
        full.packets.head(r.packets.height).select("event", "packet_number", "time_ms"))


def test_malformed_json_seq_cut_mid_event(tmp_path: Path):
    data = NGTCP2.read_bytes()
    cut = data.rfind(b"\x1e") + 20  # inside the last record
    p = tmp_path / "cut.sqlog"
    p.write_bytes(data[:cut])
    full = read_qlog(NGTCP2, "r")
    r = read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "warning" and "cut mid-event" in message and "byte" in message
    assert r.endpoints["events"][0] == full.endpoints["events"][0] - 1
    assert r.packets.equals(full.packets.head(r.packets.height))


def test_malformed_json_seq_bad_record_in_the_middle_is_skipped(tmp_path: Path):
    records = NGTCP2.read_bytes().split(b"\x1e")
    records[5] = b'{"time": 3, "name": "transport:packet_sent", "data": {'  # broken, not the last one
    p = tmp_path / "mid.sqlog"
    p.write_bytes(b"\x1e".join(records))
    r = read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "warning" and "skipped unreadable record 5" in message
    assert r.packets.height > 0


def test_malformed_json_seq_missing_separator_keeps_both_events(tmp_path: Path):
    """A record separator lost between two records (hand-made from the real file): the record holds two JSON
    texts, both are read, and the issue says so (it said one record was skipped while two events were lost)."""
    records = NGTCP2.read_bytes().split(b"\x1e")
    p = tmp_path / "joined.sqlog"
    p.write_bytes(b"\x1e".join(records[:6]) + records[6] + b"\x1e" + b"\x1e".join(records[7:]))
    full, r = read_qlog(NGTCP2, "r"), read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "warning" and "record 5 " in message and "separator missing" in message
    assert "read the 2 object(s)" in message
    assert r.endpoints["events"].to_list() == full.endpoints["events"].to_list()
    assert r.packets.equals(full.packets) and r.frames.equals(full.frames)


def test_malformed_json_seq_cut_record_joined_to_the_next_keeps_the_next(tmp_path: Path):
    """A record cut while written and the next one written after it without a separator (hand-made): the cut part
    is one issue with its bytes, the next record's event is read."""
    records = NGTCP2.read_bytes().split(b"\x1e")
    broken = records[6][: len(records[6]) // 2]
    p = tmp_path / "cut_joined.sqlog"
    head = b"\x1e".join(records[:6]) + b"\x1e"  # records[0] is the empty text before the first RS
    p.write_bytes(head + broken + b"\n" + records[7] + b"\x1e" + b"\x1e".join(records[8:]))
    full, r = read_qlog(NGTCP2, "r"), read_qlog(p, "r")
    messages = [message for _, message in _issues(r)]
    assert len(messages) == 2 and "record 6 " in messages[0] and "read the 1 object(s)" in messages[0]
    assert f"skipped an unreadable part of record 6, bytes {len(head)}-{len(head) + len(broken) + 1} " in messages[1]
    assert r.endpoints["events"][0] == full.endpoints["events"][0] - 1


def test_malformed_json_document_damaged_in_its_first_event_reads_on_from_the_next(tmp_path: Path):
    """A single-document qlog whose first event lost its end (hand-made: bytes cut out of the real file): the
    reader goes on at the next event, and the document's fields after the events (aioquic's vantage_point) are read
    too; it kept 0 events before."""
    data = AIOQUIC.read_bytes()
    first = data.index(b"{", data.index(b'"events"'))
    second = data.index(b"}, {", first)
    p = tmp_path / "first_event_cut.qlog"
    p.write_bytes(data[: first + 30] + data[second + 1 :])
    full, r = read_qlog(AIOQUIC, "r"), read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "warning" and f"damaged at byte {first}" in message and "read on from the next event" in message
    assert r.endpoints["events"].to_list() == [full.endpoints["events"][0] - 1]
    # from after the events
    assert r.endpoints["vantage"].to_list() == full.endpoints["vantage"].to_list() == ["client"]
    assert r.packets.equals(full.packets)


def test_malformed_json_document_with_a_garbage_event_in_the_middle_keeps_both_sides(tmp_path: Path):
    data = AIOQUIC.read_bytes()
    middle = data.index(b"}, {", len(data) // 2) + 3
    p = tmp_path / "garbage_event.qlog"
    p.write_bytes(
        data[:middle] + b'{"time": 5, "name": "transport:packet_sent", "data": {"x": [1, 2}, ' + data[middle:]
    )
    full, r = read_qlog(AIOQUIC, "r"), read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "warning" and "read on from the next event" in message
    assert r.packets.equals(full.packets)


def test_malformed_unknown_qlog_version_is_reported_and_read_best_effort(tmp_path: Path):
    p = tmp_path / "v9.sqlog"
    p.write_bytes(NGTCP2.read_bytes().replace(b'"qlog_version":"0.3"', b'"qlog_version":"9.9"', 1))
    r = read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "warning" and "unknown qlog version '9.9'" in message
    assert r.packets.height == read_qlog(NGTCP2, "r").packets.height


def test_malformed_empty_file(tmp_path: Path):
    p = tmp_path / "empty.sqlog"
    p.write_bytes(b"")
    r = read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "error" and "empty file" in message
    assert r.packets.height == 0 and r.endpoints.height == 0


def test_malformed_whitespace_only_file(tmp_path: Path):
    p = tmp_path / "blank.qlog"
    p.write_bytes(b"\n\n   \n")
    (severity, message), = _issues(read_qlog(p, "r"))
    assert severity == "error" and "not a qlog file" in message


def test_malformed_binary_garbage(tmp_path: Path):
    p = tmp_path / "garbage.qlog"
    p.write_bytes(
        bytes(random.Random(7).randrange(256) for _ in range(4096)).replace(b"{", b"x").replace(b"\x1e", b"y")
    )
    r = read_qlog(p, "r")
    (severity, message), = _issues(r)
    assert severity == "error" and "not a qlog file" in message and "0x1e" in message


def test_malformed_missing_file_is_an_issue_not_an_exception(tmp_path: Path):
    (severity, message), = _issues(read_qlog(tmp_path / "nope.qlog", "r"))
    assert severity == "error" and "cannot read" in message


def test_malformed_json_seq_without_header_record(tmp_path: Path):
    records = NGTCP2.read_bytes().split(b"\x1e")
    p = tmp_path / "nohead.sqlog"
    p.write_bytes(b"\x1e" + b"\x1e".join(records[2:]))
    r = read_qlog(p, "r", vantage="client")
    msgs = [m for _, m in _issues(r)]
    assert any("no qlog header record" in m for m in msgs)
    assert r.packets.height > 0


def test_malformed_document_without_traces(tmp_path: Path):
    p = tmp_path / "x.qlog"
    p.write_text('{"qlog_version": "0.3", "hello": 1}', encoding="utf-8")
    (severity, message), = _issues(read_qlog(p, "r"))
    assert severity == "error" and "no 'traces'" in message


def test_discover_reports_an_empty_folder_and_a_run_without_qlog(tmp_path: Path):
    files, issues = discover_qlogs(tmp_path, run_id="a_b/handshake/1")
    assert files == [] and issues.height == 1 and "no qlog files" in issues["message"][0]
    files, issues = discover_qlogs(tmp_path / "missing")
    assert files == [] and "does not exist" in issues["message"][0]
    (tmp_path / "client" / "qlog").mkdir(parents=True)
    (tmp_path / "client" / "qlog" / "x.sqlog").write_bytes(NGTCP2.read_bytes())
    files, issues = discover_qlogs(tmp_path)
    assert files == [(tmp_path / "client" / "qlog" / "x.sqlog", "client")] and issues.height == 0


def test_write_parquet_with_no_files_writes_an_issue_and_empty_tables(tmp_path: Path):
    s = write_qlog_parquet([], tmp_path / "out", run_id_for=lambda p: "r")
    assert s.files == 0 and s.issues == 1
    issues = pl.read_parquet(tmp_path / "out" / "ingest_issues.parquet")
    assert "no qlog files" in issues["message"][0]
    assert pl.read_parquet(tmp_path / "out" / "packets.parquet").height == 0


def test_bad_file_among_good_ones_the_rest_goes_on(tmp_path: Path):
    bad = tmp_path / "bad.qlog"
    bad.write_bytes(b"\x00\x01garbage")
    s = write_qlog_parquet([AIOQUIC, bad, NGTCP2], tmp_path / "out", run_id_for=lambda p: p.stem)
    assert s.files == 3 and s.issues == 1
    packets = pl.read_parquet(tmp_path / "out" / "packets.parquet")
    assert packets["run_id"].unique().sort().to_list() == ["client"]  # both good files have stem "client"
    assert packets.height == read_qlog(AIOQUIC, "x").packets.height + read_qlog(NGTCP2, "x").packets.height


def test_malformed_non_numeric_metric_values_become_null_with_a_warning(tmp_path: Path):
    text = NGTCP2.read_text(encoding="utf-8").replace('"smoothed_rtt":26', '"smoothed_rtt":"abc"', 1)
    p = tmp_path / "x.sqlog"
    p.write_text(text, encoding="utf-8")
    r = read_qlog(p, "r")
    full = read_qlog(NGTCP2, "r")
    assert r.metrics_logged.height == full.metrics_logged.height
    assert r.metrics_logged["smoothed_rtt_ms"].null_count() == full.metrics_logged["smoothed_rtt_ms"].null_count() + 1
    (severity, message), = _issues(r)
    assert severity == "warning" and "non-numeric" in message


def test_handmade_numeric_strings_and_floats_where_ints_belong_are_converted_without_a_warning(tmp_path: Path):
    # The fast column-wise batch builder is strict; such values take the row-oriented constructor, which converts
    # them as before (mvfst-like numeric strings, a float packet number) and reports nothing.
    text = NGTCP2.read_text(encoding="utf-8")
    assert '"packet_number":1}' in text and '"packet_number":2}' in text and '"smoothed_rtt":26' in text
    text = text.replace('"packet_number":1}', '"packet_number":"1"}', 1).replace(
        '"smoothed_rtt":26', '"smoothed_rtt":"26"', 1).replace('"packet_number":2}', '"packet_number":2.0}', 1)
    p = tmp_path / "x.sqlog"
    p.write_text(text, encoding="utf-8")
    r, full = read_qlog(p, "r"), read_qlog(NGTCP2, "r")
    assert _issues(r) == _issues(full)
    for table in ("packets", "frames", "metrics_logged"):
        assert getattr(r, table).drop("run_id").equals(getattr(full, table).drop("run_id"), null_equal=True), table


def test_batch_builder_matches_the_row_constructor_on_mixed_python_types():
    from quicack.qlog.batch import FRAME_DTYPES, strict_columns

    row = ("sent", 1, "appdata", True, 0, "stream", None, 0.5, 7, 0, "[[0,7]]", 4, 0, 10, False, None, None)
    rows = [row, ("sent", 2.5, None, 3, 1, "ack", 12, 1, None, None, None, None, None, None, True, "other", True)]
    strict = strict_columns([list(c) for c in zip(*rows, strict=True)], FRAME_DTYPES)
    assert strict is not None  # ints in float columns and bools in int columns fit the strict dtypes
    assert strict.equals(pl.DataFrame(rows, schema=FRAME_DTYPES, orient="row", strict=False), null_equal=True)
    odd = (*row[:3], "1", *row[4:])  # a numeric string: not strict
    assert strict_columns([[v] for v in odd], FRAME_DTYPES) is None


# -- hostile values and shapes (hand-made from the real fixtures) ---------------------------------------------------

def _ngtcp2_with(tmp_path: Path, name: str, old: bytes, new: bytes) -> Path:
    data = NGTCP2.read_bytes()
    assert old in data
    p = tmp_path / name
    p.write_bytes(data.replace(old, new, 1))
    return p


def test_malformed_integer_beyond_64_bits_costs_the_value_not_the_file(tmp_path: Path):
    # 2^63 as a packet number, an offset and a congestion window: polars could not build the batch (i128),
    # and the whole file gave 0 rows.
    full = read_qlog(NGTCP2, "r")
    for old, new, table in (
        (b'"packet_number":0}', b'"packet_number":9223372036854775808}', "packets"),
        (b'"offset":0,', b'"offset":18446744073709551615,', "frames"),
        (b'"congestion_window":14520', b'"congestion_window":9223372036854775808', "metrics_logged"),
    ):
        r = read_qlog(_ngtcp2_with(tmp_path, "big.sqlog", old, new), "r")
        assert (r.packets.height, r.frames.height, r.metrics_logged.height) == (
            full.packets.height, full.frames.height, full.metrics_logged.height)
        assert any(f"some {table} fields" in m and "beyond 64 bits" in m for m in r.ingest_issues["message"])


def test_malformed_time_of_1e308_costs_the_event_not_the_file(tmp_path: Path):
    full = read_qlog(NGTCP2, "r")
    for time in (b"1e308", b"-1e308", b'"inf"'):
        r = read_qlog(_ngtcp2_with(tmp_path, "t.sqlog", b'{"time":26,', b'{"time":' + time + b","), "r")
        (severity, message), = _issues(r)
        assert severity == "warning" and "1 event(s) skipped: time beyond" in message and "event 4" in message
        assert r.packets.height == full.packets.height - 1
        assert r.packets["time_ms"].null_count() == 0 and r.packets["time_ms"].max() < 1e6


def test_malformed_reference_time_1e300_is_an_issue_not_an_overflow(tmp_path: Path):
    r = read_qlog(_ngtcp2_with(tmp_path, "ref.sqlog", b'"reference_time":0', b'"reference_time":1e300'), "r")
    (severity, message), = _issues(r)
    assert severity == "warning" and "reference_time 1e+300 is beyond the year 2115" in message
    assert r.packets.height == read_qlog(NGTCP2, "r").packets.height
    assert r.endpoints["time_origin_abs_ns"].null_count() == 1


def _read_in_subprocess(path: Path) -> tuple[int, str]:
    """(exit code, output) of reading ``path`` in a child: a parser that crashes the process fails the test
    instead of killing the test run."""
    import subprocess
    import sys

    import quicack

    code = ("import sys; from quicack.qlog import read_qlog; r = read_qlog(sys.argv[1], 'r'); "
            "print(r.packets.height); print(*r.ingest_issues['message'], sep='\\n')")
    env = {"PYTHONPATH": str(Path(quicack.__file__).parents[1]), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                          timeout=120, encoding="utf-8")
    return done.returncode, done.stdout + done.stderr


def test_malformed_deeply_nested_qlog_gz_is_an_issue_not_a_crash(tmp_path: Path):
    # 300k levels: orjson 3.8.3 segfaulted the ingest job (exit 139) on such a file of a few hundred bytes.
    import gzip

    levels = 300_000
    document = tmp_path / "deep.qlog.gz"
    document.write_bytes(gzip.compress(b'{"qlog_version":"0.3","traces":[{"events":' + b"[" * levels + b"]" * levels
                                       + b"}]}", mtime=0))
    assert document.stat().st_size < 1000
    code, output = _read_in_subprocess(document)
    assert code == 0, output
    assert "JSON nested deeper than 200 levels (limits.max_nesting_depth)" in output
    # In a JSON-SEQ file the deep record costs that record: the records after it are kept.
    records = NGTCP2.read_bytes().split(b"\x1e")
    records.insert(5, b'{"time":1,"name":"x","data":' + b"[" * levels + b"]" * levels + b"}\n")
    sequence = tmp_path / "deep.sqlog.gz"
    sequence.write_bytes(gzip.compress(b"\x1e".join(records), mtime=0))
    code, output = _read_in_subprocess(sequence)
    assert code == 0, output
    assert output.splitlines()[0] == str(read_qlog(NGTCP2, "r").packets.height)
    assert "record 5" in output and "nested deeper" in output


def test_malformed_oversized_record_is_skipped_and_later_records_kept(tmp_path: Path):
    from quicack.reading.limits import Limits

    records = NGTCP2.read_bytes().split(b"\x1e")
    records[5] = records[5][:-2] + b', "padding": "' + b"x" * 3_000_000 + b'"}\n'  # 3 MB: longer than 3 chunks
    p = tmp_path / "long.sqlog"
    p.write_bytes(b"\x1e".join(records))
    full = read_qlog(NGTCP2, "r")
    assert read_qlog(p, "r").packets.height == full.packets.height  # within the default limit: read
    r = read_qlog(p, "r", limits=Limits(max_record_bytes=1_000_000))
    (severity, message), = _issues(r)
    assert "skipped unreadable record 5" in message and "exceeds 1000000 bytes (limits.max_record_bytes)" in message
    assert r.packets.height == full.packets.height - 1


def test_a_128_mb_ndjson_record_is_read_whole_and_the_next_kept(tmp_path: Path):
    # Its time (linear in the record length since the reader stopped re-copying the open record with each chunk)
    # is measured in bench/README.md ("qlog records of any length"), not here: tests do not time anything.
    from quicack.qlog.records import iter_seq_lines
    from quicack.reading.limits import Limits

    p = tmp_path / "long.qlog"
    with open(p, "wb") as f:
        f.write(b'{"qlog_format":"NDJSON","trace":{}}\n{"time":1,"name":"x","data":{"note":"')
        for _ in range(128):
            f.write(b"x" * (1 << 20))
        f.write(b'"}}\n{"time":2,"name":"y","data":{}}\n')
    records = list(iter_seq_lines(p, Limits(max_record_bytes=1 << 30)))
    assert [r.get("name") for r in records] == [None, "x", "y"]
    assert len(records[1]["data"]["note"]) == 128 << 20
