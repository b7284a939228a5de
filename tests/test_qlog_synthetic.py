"""Dialects that cannot be produced here, on SYNTHETIC files written from each implementation's documented schema
(logging code read from the public repositories; see tests/data/qlog/synthetic/make_synthetic.py).

Every test name says documented_schema: these check the reader against what the code prints, not a recording.
quinn, recorded here, is read from its recording (test_qlog_loopback.py: detection, headers without frames, RTTs in
seconds), not from a hand-made file.
"""

from __future__ import annotations

import polars as pl
import pytest
from test_qlog_common import QLOG_DATA, count_by_suffix, direct_events

from quicack.qlog import detect_dialect, read_qlog

SYN = QLOG_DATA / "synthetic"


@pytest.mark.parametrize(
    ("name", "container", "version", "impl", "dialect"),
    [
        ("picoquic_client.qlog", "json", "draft-00", "picoquic", "json-draft-00"),
        ("mvfst_client.qlog", "json", "draft-00", "mvfst", "json-draft-00"),
        ("neqo_client.sqlog", "json-seq", "urn:ietf:params:qlog:file:sequential", "neqo", "json-seq-main-schema"),
        ("quic_go_draft02_client.qlog", "ndjson", "draft-02", "quic-go", "ndjson-draft-02"),
    ],
)
def test_documented_schema_detection(name, container, version, impl, dialect):
    d = detect_dialect(SYN / name)
    assert (d.container, d.qlog_version, d.implementation, d.name) == (container, version, impl, dialect)
    r = read_qlog(SYN / name, "r")
    assert r.ingest_issues.height == 0
    assert r.endpoints["dialect"][0] == dialect and r.endpoints["implementation"][0] == impl
    events = direct_events(SYN / name)
    c = count_by_suffix(events)
    assert r.packets.height == c["packet_sent"] + c["packet_received"]
    assert r.endpoints["events"][0] == len(events)
    assert r.packets.filter((pl.col("event") == "sent") & (pl.col("packet_type") == "initial"))["time_ms"][0] == 0


def test_documented_schema_picoquic_microseconds_and_encoded_ack_delay():
    """Quirk (picoquic): draft-00 arrays per event_fields (with path_id), times and RTTs in µs
    (configuration.time_units "us"), ack_delay printed as the raw wire value (units of 2^exponent µs, the ACK
    sender's exponent: default 3 before the peer's transport parameters, then the peer's 4), STREAM id in "id",
    packet types "1rtt_protected"."""
    r = read_qlog(SYN / "picoquic_client.qlog", "r")
    p = r.packets
    assert p["time_ms"].to_list() == pytest.approx([0.0, 20.07, 20.16, 20.26, 20.27, 40.46])
    assert p["packet_type"].to_list()[-1] == "1rtt"
    acks = r.frames.filter(pl.col("frame_type") == "ack")
    # received 125 * 2^3 µs = 1 ms; sent 10 * 2^3 µs (our exponent 3) = 0.08 ms; received 250 * 2^4 µs = 4 ms
    assert acks["ack_delay_ms"].to_list() == pytest.approx([1.0, 0.08, 4.0])
    assert r.metrics_logged["smoothed_rtt_ms"].to_list() == pytest.approx([20.07, 20.08])
    stream = r.frames.filter(pl.col("frame_type") == "stream")
    assert stream["stream_id"].to_list() == [0, 0] and stream["length"].to_list() == [11, 1000]
    ep = r.endpoints.row(0, named=True)
    assert ep["peer_ack_delay_exponent"] == 4 and ep["peer_max_ack_delay_ms"] == 25.0
    assert ep["handshake_confirmed_ms"] == pytest.approx(40.46)
    # reference_time is µs since the epoch: absolute time is known
    assert ep["time_origin_abs_ns"] == 1_763_700_000_000_000_000 + 40_000


def test_documented_schema_mvfst_string_times_us_metrics_and_frame_aliases():
    """Quirk (mvfst draft-00): relative_time is a string of µs, metric_update RTTs and ACK ack_delay in µs,
    congestion_metric_update carries current_cwnd, CRYPTO uses "len", stream ids are strings,
    reference_time "0" means no absolute time."""
    r = read_qlog(SYN / "mvfst_client.qlog", "r")
    assert r.packets["time_ms"].to_list() == pytest.approx([0.0, 20.5, 20.6, 20.7, 20.8, 41.0])
    assert r.frames.filter(pl.col("frame_type") == "ack")["ack_delay_ms"].to_list() == pytest.approx([1.5, 0.1, 2.0])
    crypto = r.frames.filter(pl.col("frame_type") == "crypto")
    assert crypto["length"].to_list() == [300, 90, 1000, 36]
    m = r.metrics_logged
    assert m["latest_rtt_ms"].to_list()[0] == pytest.approx(20.5)
    assert m["cwnd_bytes"].to_list() == [None, 12320, None]  # separate updates, not merged or filled
    assert r.frames.filter(pl.col("frame_type") == "stream")["stream_id"].to_list() == [0, 0]
    assert r.endpoints["time_origin_abs_ns"][0] is None


def test_documented_schema_neqo_main_schema_raw_sizes_and_wall_clock():
    """Main schema (neqo/quiche qlog crate): file_schema header, quic:* names, quic:recovery_metrics_updated,
    parameters_set "initiator", frame byte sizes in raw.length, CRYPTO/STREAM length in raw.payload_length,
    reference_time {epoch: unknown, wall_clock_time} anchoring trace time 0, acked_ranges [[4],[0,2]]."""
    r = read_qlog(SYN / "neqo_client.sqlog", "r")
    f = r.frames
    assert f.filter(pl.col("frame_type") == "padding")["frame_bytes"].to_list() == [916]
    assert f.filter(pl.col("frame_type") == "crypto")["length"].to_list() == [286, 90]
    assert f.filter(pl.col("frame_type") == "stream")["length"].to_list() == [11, 1000]
    last_ack = f.filter(pl.col("frame_type") == "ack").row(-1, named=True)
    assert last_ack["ack_ranges"] == [{"low": 4, "high": 4}, {"low": 0, "high": 2}]
    # neqo logs the undecoded ACK Delay field / 1000 (real Firefox logs, tests/test_browsers.py): 1.5 at the peer's
    # exponent 3 is 1,500 × 2^3 µs.
    assert (last_ack["largest_acked"], last_ack["first_ack_range"], last_ack["ack_delay_ms"]) == (4, 0, 12.0)
    assert r.metrics_logged["smoothed_rtt_ms"].to_list() == [20.25, 20.23]
    ep = r.endpoints.row(0, named=True)
    assert (ep["local_max_ack_delay_ms"], ep["peer_max_ack_delay_ms"], ep["peer_ack_delay_exponent"]) == (20, 25, 3)
    # wall_clock_time 2025-11-21T13:00:00Z is trace time 0; the first Initial is at 0.25 ms
    assert ep["time_origin_abs_ns"] == 1_763_730_000_000_000_000 + 250_000


def test_documented_schema_quic_go_ndjson_draft02():
    """Old quic-go (v0.2x) and QScanner's fork: NDJSON draft-02 (newline-delimited, no RS), reference_time in
    Unix-epoch ms, packet size in header.packet_size, ACK without ack_delay meaning 0."""
    r = read_qlog(SYN / "quic_go_draft02_client.qlog", "r")
    assert r.packets["packet_bytes"].to_list() == [1252, 181, 60]
    assert r.packets["time_ms"].to_list() == pytest.approx([0.0, 20.5, 40.969])
    assert r.frames.filter(pl.col("frame_type") == "ack")["ack_delay_ms"].to_list() == [0.0, 0.5]
    # float64 ms since the epoch carries sub-microsecond rounding
    assert abs(r.endpoints["time_origin_abs_ns"][0] - (1_763_700_000_000_500_000 + 31_000)) < 1_000
