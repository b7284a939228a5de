"""qlog ingest on REAL loopback runs recorded by the testbed (tests/data/loopback/<server>_<client>/<case>/<rep>/,
QUIC Interop Runner layout). Files are found by glob so re-recordings do not break the tests; a missing run is
skipped. Quirks seen only in these recordings are documented here (quic-go v0.65 / v0.48, go-x-net, quinn 0.11).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_qlog_common import count_by_suffix, direct_events

from quicack.qlog import detect_dialect, discover_qlogs, read_qlog

LOOPBACK = Path(__file__).parent / "data" / "loopback"


def _qlog(run: str, vantage: str) -> Path:
    folder = LOOPBACK / run / vantage / "qlog"
    files = sorted(folder.glob("*")) if folder.is_dir() else []
    if not files:
        pytest.fail(f"recording missing: no qlog in {folder}")
    return files[0]


# (run folder, vantage, implementation, dialect)
CASES = [
    ("quic-go_quic-go/transfer_10KB/1", "client", "quic-go", "json-seq-main-schema"),
    ("quic-go_quic-go/transfer_10KB/1", "server", "quic-go", "json-seq-main-schema"),
    ("quic-go_quic-go/transfer_1MB/1", "client", "quic-go", "json-seq-main-schema"),
    ("aioquic_quic-go-old/transfer_10KB/1", "client", "quic-go", "json-seq-0.3"),
    ("aioquic_go-x-net/transfer_10KB/1", "client", "go-x-net", "json-seq-0.3"),
    ("aioquic_quinn/transfer_10KB/1", "client", "quinn", "json-seq-0.3"),
    ("aioquic_ngtcp2/transfer_10KB/1", "client", "ngtcp2", "json-seq-0.3"),
    ("ngtcp2_ngtcp2/transfer_1MB/1", "server", "ngtcp2", "json-seq-0.3"),
    ("aioquic_aioquic/transfer_10KB/1", "client", "aioquic", "json-0.3"),
    ("aioquic_aioquic/transfer_10KB/1", "server", "aioquic", "json-0.3"),
]


@pytest.mark.parametrize(("run", "vantage", "impl", "dialect"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_real_loopback_detection_counts_and_origin(run, vantage, impl, dialect):
    path = _qlog(run, vantage)
    d = detect_dialect(path)
    assert (d.implementation, d.name) == (impl, dialect)
    r = read_qlog(path, run)
    assert r.ingest_issues.height == 0, r.ingest_issues["message"].to_list()
    ep = r.endpoints.row(0, named=True)
    assert (ep["vantage"], ep["implementation"], ep["dialect"]) == (vantage, impl, dialect)
    events = direct_events(path)
    c = count_by_suffix(events)
    assert r.packets.height == c["packet_sent"] + c["packet_received"]
    assert r.metrics_logged.height <= c["metrics_updated"] + c["recovery_metrics_updated"]
    assert ep["events"] == len(events)
    first = "sent" if vantage == "client" else "received"
    initials = r.packets.filter((pl.col("packet_type") == "initial") & (pl.col("event") == first))
    assert initials["time_ms"][0] == 0.0 and r.packets["time_ms"].min() >= 0.0
    for ranges in r.frames.filter(pl.col("frame_type") == "ack")["ack_ranges"].drop_nulls():
        rs = [(r["low"], r["high"]) for r in ranges]
        assert all(lo <= hi for lo, hi in rs) and rs == sorted(rs, key=lambda x: -x[1])


def test_real_quinn_rtts_in_seconds_are_converted_to_ms():
    """Quirk (quinn 0.11): recovery:metrics_updated RTTs are seconds (initial RTT logged as 0.333), not ms."""
    path = _qlog("aioquic_quinn/transfer_10KB/1", "client")
    raw = [e["data"]["smoothed_rtt"] for e in direct_events(path)
           if e["name"].endswith("metrics_updated") and "smoothed_rtt" in e["data"]]
    assert raw[0] == pytest.approx(0.333)
    m = read_qlog(path, "r").metrics_logged
    srtt = m["smoothed_rtt_ms"].drop_nulls().to_list()
    assert srtt == pytest.approx([v * 1000 for v in raw])
    assert srtt[0] == pytest.approx(333.0)  # RFC 9002 initial RTT, in ms


def test_real_quinn_one_connection_despite_changing_group_id_and_no_frames():
    """Quirk (quinn 0.11): vantage_point.type is "unknown" (the title ends in "client"); each event carries the
    current connection ID as group_id, which changes during the handshake; packets have no frames list; sent
    packets carry their size in header.length."""
    path = _qlog("aioquic_quinn/transfer_10KB/1", "client")
    events = direct_events(path)
    assert len({e.get("group_id") for e in events}) > 1
    r = read_qlog(path, "r")
    assert r.endpoints.height == 1 and r.endpoints["vantage"][0] == "client"
    assert r.endpoints["group_id"][0] == events[0]["group_id"]
    assert not r.packets["frames_logged"].any() and r.packets["ack_eliciting"].null_count() == r.packets.height
    sent = r.packets.filter(pl.col("event") == "sent")
    assert sent["packet_bytes"][0] == 1200


def test_real_quic_go_omits_zero_ack_delay():
    """Quirk (quic-go): an ACK frame with ack_delay 0 has no ack_delay field; it becomes 0.0 ms, not null."""
    path = _qlog("quic-go_quic-go/transfer_1MB/1", "client")
    acks = [f for e in direct_events(path) if e["name"].endswith(("packet_sent", "packet_received"))
            for f in e["data"].get("frames", []) if f["frame_type"] == "ack"]
    assert any("ack_delay" not in f for f in acks)
    r = read_qlog(path, "r")
    delays = r.frames.filter(pl.col("frame_type") == "ack")["ack_delay_ms"]
    assert delays.null_count() == 0
    assert (delays == 0).sum() == sum(1 for f in acks if f.get("ack_delay", 0) == 0)


def test_real_quic_go_main_schema_header_with_mixed_event_names():
    """Quirk (quic-go v0.65): the header is main-schema (file_schema, quic-14 event schemas, reference_time
    {epoch: unknown, wall_clock_time}) but most events keep transport:/recovery: names and parameters_set uses
    "initiator". time_abs_ns is anchored on wall_clock_time; max_ack_delay 26 ms comes from parameters_set."""
    path = _qlog("quic-go_quic-go/transfer_10KB/1", "client")
    names = {e["name"] for e in direct_events(path)}
    assert "transport:packet_sent" in names and any(n.startswith("quic:") for n in names)
    r = read_qlog(path, "r")
    ep = r.endpoints.row(0, named=True)
    assert ep["local_max_ack_delay_ms"] == 26.0 and ep["time_origin_abs_ns"] is not None
    header = json.loads(path.read_text(encoding="utf-8").split("\x1e")[1])
    wall = header["trace"]["common_fields"]["reference_time"]["wall_clock_time"]
    from datetime import datetime

    wall_ns = int(datetime.fromisoformat(wall.replace("Z", "+00:00")[:26] + "+00:00").timestamp() * 1e9)
    assert abs(ep["time_origin_abs_ns"] - wall_ns) < 1e9


def test_real_go_x_net_absolute_reference_and_detection():
    """go-x-net: JSON-SEQ 0.3, vantage name "go quic", reference_time in Unix-epoch ms with relative times."""
    path = _qlog("aioquic_go-x-net/transfer_10KB/1", "client")
    r = read_qlog(path, "r")
    header = json.loads(path.read_text(encoding="utf-8").split("\x1e")[1])
    ref_ms = header["trace"]["common_fields"]["reference_time"]
    first_initial_ms = next(e["time"] for e in direct_events(path) if e["name"] == "transport:packet_sent")
    assert abs(r.endpoints["time_origin_abs_ns"][0] - (ref_ms + first_initial_ms) * 1e6) < 1e3


def test_real_client_and_server_logs_of_one_run_agree():
    """The same connection seen from both ends: same group id, packets sent by one are received by the other."""
    client = read_qlog(_qlog("quic-go_quic-go/transfer_10KB/1", "client"), "r")
    server = read_qlog(_qlog("quic-go_quic-go/transfer_10KB/1", "server"), "r")
    assert client.endpoints["group_id"][0] == server.endpoints["group_id"][0]
    c2s_sent = client.packets.filter(pl.col("event") == "sent").height
    c2s_recv = server.packets.filter(pl.col("event") == "received").height
    assert c2s_recv <= c2s_sent


def test_real_discover_finds_both_vantages_of_a_run():
    run = LOOPBACK / "quic-go_quic-go" / "transfer_10KB" / "1"
    if not run.is_dir():
        pytest.fail(f"recording missing: {run}")
    files, issues = discover_qlogs(run)
    assert issues.height == 0 and sorted(v for _, v in files) == ["client", "server"]


def test_real_aioquic_logs_unquantized_ack_delay_for_sent_acks():
    """Quirk (aioquic): a sent ACK's ack_delay is the exact delay it measured, while the wire field is quantized to
    2^ack_delay_exponent µs (8 µs); the receiver (quic-go here) logs the quantized value. Both are kept as logged."""
    run = "aioquic_quic-go/transfer_10KB/1"
    server = read_qlog(_qlog(run, "server"), "r").frames
    client = read_qlog(_qlog(run, "client"), "r").frames
    key = ["pn_space", "packet_number", "frame_type"]
    sent = server.filter((pl.col("event") == "sent") & (pl.col("frame_type") == "ack")).select(*key, "ack_delay_ms")
    recv = client.filter((pl.col("event") == "received") & (pl.col("frame_type") == "ack")).select(
        *key, pl.col("ack_delay_ms").alias("received_ms"))
    both = sent.join(recv, on=key)
    assert both.height > 0
    diff = (both["ack_delay_ms"] - both["received_ms"]).abs()
    assert diff.max() < 0.008 + 1e-9  # within one 8 µs step (quic-go prints 3 decimals)
    assert (diff > 0).any()
