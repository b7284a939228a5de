"""The two readers of JSON-SEQ / NDJSON qlogs (quicack.qlog.reader_engine) write the same tables.

The compiled lane (quicack_core.QlogLane, built from rust/quicack_core by install.sh) normalizes the common events
itself and hands everything else to the Python reader; here every JSON-SEQ / NDJSON qlog of the test data and of
the embedded dataset is read with both, then damaged copies (cut, a garbage record, numbers written as strings or
floats or beyond 64 bits) and a handwritten trace of the odd cases (delta times, an ACK reason, an ACK delay
exponent beyond int64, events routed by group_id, draft-01 and duplicate-key events, a lone surrogate, deep
nesting, an over-long record), each with the default batch size and with tiny batches, and the tables must be
equal, value for value and row for row.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quicack.frame_types import FRAME_TYPES
from quicack.layout import is_qlog_name
from quicack.qlog.detect import JSON_SEQ, NDJSON, detect_dialect
from quicack.qlog.qlog_file import iter_qlog
from quicack.qlog.reader_engine import lane_class
from quicack.reading.limits import DEFAULT_LIMITS, Limits

try:
    HAS_LANE = lane_class("compiled") is not None
except ImportError:
    HAS_LANE = False
pytestmark = pytest.mark.skipif(not HAS_LANE, reason="quicack_core with QlogLane is not built (install.sh)")

REPO = Path(__file__).parent.parent
TABLES = ("packets", "frames", "metrics_logged", "endpoints", "ingest_issues")


def _sequence_qlogs(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and is_qlog_name(p)
            and detect_dialect(p).container in (JSON_SEQ, NDJSON)]


TEST_QLOGS = _sequence_qlogs(REPO / "tests" / "data")


def _tables(path: Path, engine: str, batch_events: int, limits: Limits) -> dict[str, pl.DataFrame]:
    batches = list(iter_qlog(path, "r", batch_events=batch_events, limits=limits, engine=engine))
    return {name: pl.concat([getattr(batch, name) for batch in batches]) for name in TABLES}


def _assert_same(path: Path, batch_events: int = 50_000, limits: Limits = DEFAULT_LIMITS) -> None:
    python, compiled = (_tables(path, engine, batch_events, limits) for engine in ("python", "compiled"))
    for name in TABLES:
        assert python[name].equals(compiled[name]), f"{path.name}: {name} differs (batch_events={batch_events})"


@pytest.mark.parametrize("path", TEST_QLOGS, ids=lambda p: str(p.relative_to(REPO / "tests" / "data")))
@pytest.mark.parametrize("batch_events", [50_000, 3])
def test_engines_agree_on_test_qlogs(path: Path, batch_events: int) -> None:
    _assert_same(path, batch_events)


def test_engines_agree_on_the_embedded_dataset() -> None:
    paths = _sequence_qlogs(REPO / "data" / "sample" / "raw")
    assert paths, "recordings missing: no qlog under data/sample/raw (install.sh unpacks it)"
    for path in paths:
        _assert_same(path)


def _damaged(data: bytes) -> dict[str, bytes]:
    middle = data.index(b"\x1e", len(data) // 2) if b"\x1e" in data[len(data) // 2:] else len(data) // 2
    after = data.index(b"\x1e", middle + 1) if b"\x1e" in data[middle + 1:] else middle
    return {
        "cut": data[: len(data) * 2 // 3],
        # a separator lost: two records in one; and a record cut with the next written after it on a new line
        "missing_separator": data[:middle] + data[middle + 1:],
        "cut_joined": data[:middle] + data[middle: (middle + after) // 2] + b"\n" + data[after + 1:],
        "garbage_record": data[:middle] + b"\x1e{\"time\": oops}\n" + data[middle:],
        "string_numbers": re.sub(rb'"(smoothed_rtt|packet_number|offset|time)":\s*(\d+(?:\.\d+)?)', rb'"\1":"\2"',
                                 data),
        "float_numbers": re.sub(rb'"(packet_number|length|congestion_window)":\s*(\d+)([,}])', rb'"\1":\2.0\3', data),
        "big_numbers": re.sub(rb'"(offset|bytes_in_flight)":\s*\d+', rb'"\1":99999999999999999999', data, count=40),
        "bool_numbers": re.sub(rb'"(pto_count|stream_id)":\s*\d+', rb'"\1":true', data, count=40),
    }


@pytest.mark.parametrize("batch_events", [50_000, 5])
def test_engines_agree_on_damaged_copies(tmp_path: Path, batch_events: int) -> None:
    sources = [p for p in TEST_QLOGS if p.suffix == ".sqlog"][:6]
    assert sources
    for i, source in enumerate(sources):
        for tag, blob in _damaged(source.read_bytes()).items():
            copy = tmp_path / f"{i}_{tag}.sqlog"
            copy.write_bytes(blob)
            _assert_same(copy, batch_events)


def _record(text: str) -> bytes:
    return b"\x1e" + text.encode() + b"\n"


ODD_TRACE = b"".join(_record(r) for r in [
    '{"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"quic-go","trace":{"vantage_point":{"type":"client"},'
    '"common_fields":{"time_format":"delta","ODCID":"abcd","reference_time":1700000000000}}}',
    '{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"initial","packet_number":0},'
    '"raw":{"length":1200},"frames":[{"frame_type":"crypto","offset":0,"length":300},{"frame_type":"padding"}]}}',
    '{"time":1,"name":"quicack:ack_sent","data":{"packet_number_space":"application_data","packet_number":5,'
    '"reason":"threshold","acked_packets":2}}',
    '{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":5},'
    '"frames":[{"frame_type":"ack","ack_delay":1.5,"acked_ranges":[[1,3],[7],[6,5],"x"]},{"frame_type":"ACK"}]}}',
    '{"time":1,"name":"recovery:metrics_updated","data":{"smoothed_rtt":12,"min_rtt":9.5,"congestion_window":12000}}',
    '{"time":1e13,"name":"transport:packet_received","data":{}}',
    '{"time":1,"name":"transport:packet_received","group_id":"other","data":{"header":{"packet_type":"handshake",'
    '"packet_number":1},"frames":[{"frame_type":"handshake_done"},{"frame_type":"stream","stream_id":"4",'
    '"offset":0,"length":10,"fin":1}]}}',
    '{"time":1,"name":"transport:packet_received","group_id":"other","data":{"header":{"packet_type":"1rtt",'
    '"packet_number":2},"frames":[{"frame_type":"stream","id":8,"offset":10,"len":5,"fin":""},'
    '{"frame_type":"max_data","stream_id":3},{"frame_type":"ping","raw":{"length":1}}]}}',
    '{"time":1,"name":"transport:packet_received","group_id":7,"data":{"header":{"packet_type":"1rtt",'
    '"packet_number":3}}}',
    '{"category":"transport","event":"packet_sent","time":1,"data":{"header":{"packet_type":"1rtt",'
    '"packet_number":6}}}',
    '{"time":1,"name":"transport:packet_sent","name":"transport:packet_received","data":{"header":'
    '{"packet_type":"1rtt","packet_number":9},"header":{"packet_type":"0rtt","packet_number":10}}}',
    '{"time":"5","name":"transport:packet_sent","data":{"header":{"packet_type":"1rtt","packet_number":11}}}',
    '{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"1rtt","packet_number":12},'
    '"frames":[{"frame_type":"stream","stream_id":0,"offset":0,"length":5,"note":"\\ud800"}]}}',
    '{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"1rtt",'
    '"packet_number":18446744073709551615}}}',
    '[' * 300 + ']' * 300,
    '{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"1rtt","packet_number":13},'
    '"frames":[{"frame_type":"stream","stream_id":0,"offset":0,"length":5,"pad":"' + "x" * 3000 + '"}]}}',
    '{"time":1,"name":"transport:parameters_set","data":{"owner":"remote","max_ack_delay":25,'
    '"ack_delay_exponent":1e30}}',
    '{"time":1,"name":"transport:packet_received","data":{"header":{"packet_type":"1rtt","packet_number":14},'
    '"frames":[{"frame_type":"ack","acked_ranges":[[0,4]]}]}}',
    '{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"initial","packet_number":1},'
    '"frames":[{"frame_type":"ack","ack_delay":0.25,"acked_ranges":[[0,0]]}]}}',
    '{"qlog_version":"0.3","trace":{"vantage_point":{"type":"server"},"common_fields":{"group_id":"beef"}}}',
    '{"time":5,"name":"transport:datagrams_received","data":{"count":1}}',
    '{"time":6,"name":"transport:packet_received","data":{"header":{"packet_type":"initial","packet_number":0},'
    '"frames":[{"frame_type":"ack","ack_delay":null,"acked_ranges":[]}]}}',
    '{"time":7,"name":"transport:packet_received","data":{"header":{"packet_type":"initial","packet_number":1},'
    '"frames":[{"frame_type":"ack","ack_delay":3,"acked_ranges":[[2,9223372036854775807],[-9223372036854775807,1]]}]}}',
    '{"time":8,"name":"transport:parameters_set","data":{"owner":"local","ack_delay_exponent":4,'
    '"max_ack_delay":"20"}}',
    '{"time":9,"name":"recovery:metrics_updated","data":{"latest_rtt":9007199254740993,"pto_count":1.0}}',
])


@pytest.mark.parametrize("batch_events", [50_000, 3, 1])
def test_engines_agree_on_handmade_odd_records(tmp_path: Path, batch_events: int) -> None:
    path = tmp_path / "odd.sqlog"
    path.write_bytes(ODD_TRACE)
    _assert_same(path, batch_events)
    _assert_same(path, batch_events, replace(DEFAULT_LIMITS, max_record_bytes=2000))
    lines = tmp_path / "odd_lines.qlog"  # NDJSON, some lines with a leading RS
    lines.write_bytes(ODD_TRACE.replace(b"\x1e", b"", 5).replace(b"\n\n", b"\n \n"))
    _assert_same(lines, batch_events)


def test_engine_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUICACK_QLOG_ENGINE", raising=False)
    assert lane_class() is not None
    monkeypatch.setenv("QUICACK_QLOG_ENGINE", "python")
    assert lane_class() is None
    assert lane_class("compiled") is not None
    with pytest.raises(ValueError, match="unknown qlog reader engine"):
        lane_class("fortran")


def test_a_core_without_the_lane_reads_with_python(monkeypatch: pytest.MonkeyPatch) -> None:
    import quicack_core

    monkeypatch.delattr(quicack_core, "QlogLane")
    monkeypatch.delenv("QUICACK_QLOG_ENGINE", raising=False)
    assert lane_class() is None
    with pytest.raises(ImportError, match="QlogLane"):
        lane_class("compiled")



def test_engines_agree_on_handmade_events_of_every_frame_type_spelling(tmp_path: Path) -> None:
    """Every name and qlog spelling of frame_types.csv, in three cases, in events the lane takes (not the first)."""
    header = {"qlog_version": "0.3", "qlog_format": "JSON-SEQ", "title": "spellings",
              "trace": {"vantage_point": {"type": "server"}, "common_fields": {"ODCID": "abcd"}}}
    spellings = [s for t in FRAME_TYPES for s in (t.name, *t.qlog_names)] + ["no_such_frame"]
    frames = [{"frame_type": c, "length": 3} for s in spellings for c in (s, s.upper(), s.title())]
    events = [{"time": n, "name": "transport:packet_sent",
               "data": {"header": {"packet_type": "1RTT", "packet_number": n}, "frames": frames[n::7]}}
              for n in range(7)]
    path = tmp_path / "spellings.sqlog"
    path.write_bytes(b"".join(b"\x1e" + json.dumps(record).encode() + b"\n" for record in [header, *events]))
    _assert_same(path)
    names = _tables(path, "compiled", 50_000, DEFAULT_LIMITS)["frames"]["frame_type"]
    assert set(names) == {t.name for t in FRAME_TYPES}

# Property test: generated traces (hypothesis), each read with both engines. The recorded qlogs above cover what
# implementations write; generated events cover the combinations they rarely write: every frame type name and
# qlog spelling in any case, numbers of every JSON type and size where the reader expects ints, ACK ranges in
# any order and shape, delta times, events of connections routed by group_id, tiny batches.

_ODD_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.none(),
    st.booleans(),
    st.integers(0, 99).map(str),
)
# Mostly the ints implementations write (the lane's own events), sometimes anything (handed to the Python reader).
_NUMBERS = st.one_of(*[st.integers(0, 2_000_000)] * 24, _ODD_NUMBERS)
_SPELLINGS = sorted({s for t in FRAME_TYPES for s in (t.name, *t.qlog_names)} | {"no_such_frame"})


@st.composite
def _frame(draw) -> dict:
    spelling = draw(st.sampled_from(_SPELLINGS))
    frame = {"frame_type": draw(st.sampled_from([spelling, spelling.upper(), spelling.title()]))}
    for key in draw(st.sets(st.sampled_from(["offset", "length", "len", "stream_id", "id", "fin", "ack_delay",
                                             "payload_length"]), max_size=4)):
        frame[key] = draw(_NUMBERS)
    if draw(st.booleans()):
        frame["raw"] = {"length": draw(_NUMBERS), "payload_length": draw(_NUMBERS)}
    if draw(st.booleans()):
        pair = st.lists(st.integers(0, 10**6), min_size=1, max_size=2)
        frame["acked_ranges"] = draw(st.lists(st.one_of(*[pair] * 8, st.integers(0, 100), _NUMBERS), max_size=4))
    return frame


@st.composite
def _event(draw) -> dict:
    name = draw(st.sampled_from(["transport:packet_sent", "transport:packet_received", "recovery:metrics_updated",
                                 "transport:parameters_set", "transport:datagrams_received", "quicack:ack_sent",
                                 "transport:connection_started"]))
    data: dict = {}
    if name.startswith("transport:packet"):
        header = {"packet_type": draw(st.sampled_from(["initial", "handshake", "1RTT", "0rtt", "retry", "x", None])),
                  "packet_number": draw(_NUMBERS)}
        if draw(st.booleans()):
            header["packet_size"] = draw(_NUMBERS)
        data = {"header": header}
        if draw(st.integers(0, 3)):
            data["frames"] = draw(st.lists(_frame(), max_size=4))
        if draw(st.booleans()):
            data["raw"] = {"length": draw(_NUMBERS)}
    elif name == "recovery:metrics_updated":
        for key in draw(st.sets(st.sampled_from(["smoothed_rtt", "rtt_variance", "latest_rtt", "min_rtt",
                                                 "congestion_window", "bytes_in_flight", "pto_count"]), max_size=4)):
            data[key] = draw(_NUMBERS)
    elif name == "transport:parameters_set":
        data = {"owner": draw(st.sampled_from(["local", "remote", None])), "max_ack_delay": draw(_NUMBERS),
                "ack_delay_exponent": draw(st.one_of(st.integers(0, 20), _NUMBERS))}
    elif name == "quicack:ack_sent":
        data = {"packet_number_space": draw(st.sampled_from(["initial", "handshake", "application_data", None])),
                "packet_number": draw(_NUMBERS), "reason": draw(st.sampled_from(["threshold", "timer", None])),
                "acked_packets": draw(_NUMBERS)}
    event = {"time": draw(st.one_of(st.integers(0, 10**6), st.floats(0, 1e6))), "name": name, "data": data}
    if draw(st.integers(0, 9)) == 0:
        event["group_id"] = draw(st.sampled_from(["a", "b"]))
    return event


@st.composite
def _traces(draw) -> bytes:
    common = {"ODCID": "abcd", "reference_time": 1700000000000}
    if draw(st.booleans()):
        common["time_format"] = "delta"
    header = {"qlog_version": "0.3", "qlog_format": "JSON-SEQ", "title": "generated",
              "trace": {"vantage_point": {"type": draw(st.sampled_from(["client", "server"]))},
                        "common_fields": common}}
    events = draw(st.lists(_event(), min_size=1, max_size=25))
    return b"".join(b"\x1e" + json.dumps(record).encode() + b"\n" for record in [header, *events])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_traces(), batch_events=st.sampled_from([50_000, 3, 1]), lines=st.booleans())
def test_engines_agree_on_generated_handmade_traces(tmp_path_factory: pytest.TempPathFactory, trace: bytes,
                                           batch_events: int, lines: bool) -> None:
    path = tmp_path_factory.mktemp("generated") / ("trace.qlog" if lines else "trace.sqlog")
    path.write_bytes(trace.replace(b"\x1e", b"") if lines else trace)
    _assert_same(path, batch_events)
