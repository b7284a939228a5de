"""qlog ingest on REAL files recorded from aioquic 1.7.2 and ngtcp2 0.12.1 (Debian gtlsclient/gtlsserver).

The recordings ran through a UDP relay that delays each datagram by 10 ms per direction (20 ms RTT); see
tests/data/qlog/README.md. Every quirk handled by the reader is documented by one test here.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
import zstandard
from conftest import SAMPLE_RAW
from test_qlog_common import QLOG_DATA, count_by_suffix, direct_events

from quicack.qlog import detect_dialect, read_qlog
from quicack.schema import ENDPOINTS, FRAMES, INGEST_ISSUES, METRICS_LOGGED, PACKETS

CONFIGURED_RTT_MS = 20.0
AIOQUIC = QLOG_DATA / "aioquic"
NGTCP2 = QLOG_DATA / "ngtcp2"
REAL_FILES = [AIOQUIC / "client.qlog", AIOQUIC / "server.qlog", NGTCP2 / "client.sqlog", NGTCP2 / "server.sqlog"]


def _conforms(result) -> None:
    for df, table in ((result.packets, PACKETS), (result.frames, FRAMES), (result.metrics_logged, METRICS_LOGGED),
                      (result.endpoints, ENDPOINTS), (result.ingest_issues, INGEST_ISSUES)):
        assert df.schema == table.empty().schema


# -- detection ----------------------------------------------------------------------------------------------------


def test_detect_aioquic_single_json_document():
    d = detect_dialect(AIOQUIC / "client.qlog")
    assert (d.container, d.qlog_version, d.name) == ("json", "0.3", "json-0.3")
    assert d.known_version


def test_detect_aioquic_with_and_without_json_spaces() -> None:
    """aioquic's QuicFileLogger header with json.dump's spaces, and the compact one of quicack's ACK-policy receiver
    (an aioquic client recorded by the testbed, in the embedded dataset): both are aioquic's."""
    spaced = detect_dialect(AIOQUIC / "client.qlog")
    compact_files = sorted((SAMPLE_RAW / "quinn_aioquic").rglob("*.qlog.gz"))
    compact = [f for f in compact_files if b'{"qlog_format":"JSON"' in gzip.open(f).read(40)]
    assert compact, "the embedded dataset's ACK-policy receiver qlogs (compact JSON)"
    assert spaced.implementation == "aioquic"
    assert {detect_dialect(f).implementation for f in compact[:5]} == {"aioquic"}


def test_detect_ngtcp2_json_seq():
    d = detect_dialect(NGTCP2 / "client.sqlog")
    assert (d.container, d.qlog_version, d.implementation, d.vantage) == ("json-seq", "0.3", "ngtcp2", "client")
    assert d.name == "json-seq-0.3"


@pytest.mark.parametrize("compress", ["gzip", "zstd"])
def test_compressed_files_are_read_transparently(tmp_path: Path, compress: str):
    raw = (NGTCP2 / "server.sqlog").read_bytes()
    if compress == "gzip":
        p = tmp_path / "server.sqlog.gz"
        p.write_bytes(gzip.compress(raw))
    else:
        p = tmp_path / "server.sqlog.zst"
        p.write_bytes(zstandard.ZstdCompressor().compress(raw))
    d = detect_dialect(p)
    assert d.compression == compress and d.implementation == "ngtcp2"
    plain = read_qlog(NGTCP2 / "server.sqlog", "r")
    packed = read_qlog(p, "r")
    assert packed.packets.drop("run_id").equals(plain.packets.drop("run_id"))


# -- row counts against a direct count of the file ---------------------------------------------------------------


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_row_counts_match_a_direct_count_of_events(path: Path):
    events = direct_events(path)
    counts = count_by_suffix(events)
    r = read_qlog(path, "run")
    _conforms(r)
    assert r.ingest_issues.height == 0
    assert r.packets.height == counts["packet_sent"] + counts["packet_received"]
    n_frames = sum(len(e["data"].get("frames", [])) for e in events if e["name"].endswith(("packet_sent",
                                                                                          "packet_received")))
    assert r.frames.height == n_frames
    assert r.metrics_logged.height == counts["metrics_updated"]
    assert r.endpoints["events"].to_list() == [len(events)]
    assert r.packets["source"].unique().to_list() == ["qlog"]
    assert r.packets["decrypted"].all()


# -- time origin ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_time_origin_is_the_first_client_initial(path: Path):
    r = read_qlog(path, "run")
    vantage = r.endpoints["vantage"][0]
    first_event = "sent" if vantage == "client" else "received"
    initials = r.packets.filter((pl.col("packet_type") == "initial") & (pl.col("event") == first_event))
    assert initials["time_ms"][0] == 0.0
    assert initials["packet_number"][0] == 0
    # directions follow from vantage and event
    d = r.packets.select("event", "direction").unique().sort("event")
    expect = {"client": {"received": "s2c", "sent": "c2s"}, "server": {"received": "c2s", "sent": "s2c"}}[vantage]
    assert dict(d.iter_rows()) == expect


def test_aioquic_absolute_epoch_ms_give_time_abs_ns_and_origin():
    """Quirk (aioquic): event "time" is absolute Unix-epoch milliseconds (time.time() * 1000), no reference_time.

    time_abs_ns is therefore known for every packet, and endpoints.time_origin_abs_ns is the first Initial's.
    """
    r = read_qlog(AIOQUIC / "client.qlog", "run")
    first_time_ms = next(e["time"] for e in direct_events(AIOQUIC / "client.qlog")
                         if e["name"] == "transport:packet_sent")
    origin = r.endpoints["time_origin_abs_ns"][0]
    assert abs(origin - first_time_ms * 1e6) < 1e3
    assert r.packets["time_abs_ns"][0] == origin
    assert (r.packets["time_abs_ns"] - origin - (r.packets["time_ms"] * 1e6)).abs().max() < 1e3


def test_ngtcp2_reference_time_zero_means_no_absolute_time():
    """Quirk (ngtcp2 0.12): reference_time is 0 and times are relative integers, so no absolute time is claimed."""
    r = read_qlog(NGTCP2 / "client.sqlog", "run")
    assert r.packets["time_abs_ns"].null_count() == r.packets.height
    assert r.endpoints["time_origin_abs_ns"][0] is None


def test_ngtcp2_logs_integer_milliseconds():
    """Quirk (ngtcp2 0.12): event times and RTT metrics are integer milliseconds (1 ms resolution)."""
    r = read_qlog(NGTCP2 / "client.sqlog", "run")
    assert (r.packets["time_ms"] == r.packets["time_ms"].round()).all()
    assert (r.metrics_logged["smoothed_rtt_ms"].drop_nulls() % 1 == 0).all()


def test_aioquic_received_packets_take_the_datagram_receive_time():
    """Quirk (aioquic): transport:packet_received is logged after the packet's frames were processed.

    Its time trails the socket receive, which aioquic logs as the preceding transport:datagrams_received event;
    the reader gives each received packet the time of that datagram.
    """
    path = AIOQUIC / "server.qlog"
    events = direct_events(path)
    last_dgram = None
    expected = []
    for e in events:
        if e["name"] == "transport:datagrams_received":
            last_dgram = e["time"]
        elif e["name"] == "transport:packet_received":
            expected.append((last_dgram, e["time"]))
    assert any(t_pkt > t_dg for t_dg, t_pkt in expected)  # the lag exists in the raw log
    r = read_qlog(path, "run")
    got = r.packets.filter(pl.col("event") == "received")["time_abs_ns"].to_list()
    assert len(got) == len(expected)
    for (t_dg, _), ns in zip(expected, got, strict=True):
        assert abs(ns - t_dg * 1e6) < 1e3


# -- units -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_logged_rtts_are_milliseconds_near_the_configured_rtt(path: Path):
    r = read_qlog(path, "run")
    m = r.metrics_logged
    latest = m["latest_rtt_ms"].drop_nulls().filter(m["latest_rtt_ms"].drop_nulls() > 0)
    assert latest.len() > 0
    # the relay adds 20 ms; loopback processing and ACK delays add a few ms at most
    assert CONFIGURED_RTT_MS * 0.9 <= latest.median() <= CONFIGURED_RTT_MS * 3
    assert m["min_rtt_ms"].drop_nulls().min() >= CONFIGURED_RTT_MS * 0.9


def test_ngtcp2_logs_every_metric_field_each_update_but_aioquic_only_some():
    """ngtcp2 logs all metrics fields in each update (min_rtt only once sampled); aioquic logs cwnd/bytes_in_flight
    alone on sends. Absent fields stay null: nothing is forward-filled."""
    ng = read_qlog(NGTCP2 / "client.sqlog", "run").metrics_logged
    assert ng["smoothed_rtt_ms"].null_count() == 0 and ng["cwnd_bytes"].null_count() == 0
    aio = read_qlog(AIOQUIC / "client.qlog", "run").metrics_logged
    only_cc = aio.filter(pl.col("smoothed_rtt_ms").is_null())
    assert only_cc.height > 0 and only_cc["cwnd_bytes"].null_count() == 0


def test_ack_delay_in_ms_and_max_ack_delay_from_parameters():
    r = read_qlog(AIOQUIC / "client.qlog", "run")
    acks = r.frames.filter(pl.col("frame_type") == "ack")
    raw = [f["ack_delay"] for e in direct_events(AIOQUIC / "client.qlog")
           if e["name"].endswith(("packet_sent", "packet_received"))
           for f in e["data"].get("frames", []) if f["frame_type"] == "ack"]
    assert acks["ack_delay_ms"].to_list() == pytest.approx(raw)
    ep = r.endpoints.row(0, named=True)
    assert ep["local_max_ack_delay_ms"] == 25.0 and ep["peer_max_ack_delay_ms"] == 25.0
    assert ep["peer_ack_delay_exponent"] == 3
    assert ep["implementation"] == "aioquic" and ep["dialect"] == "json-0.3"


# -- ACK ranges, frames, ack-eliciting -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_ack_ranges_largest_and_first_range(path: Path):
    r = read_qlog(path, "run")
    acks = r.frames.filter(pl.col("frame_type") == "ack")
    assert acks.height > 0
    for largest, first, ranges in acks.select("largest_acked", "first_ack_range", "ack_ranges").iter_rows():
        rs = [(r["low"], r["high"]) for r in ranges]
        assert rs[0][1] == largest and rs[0][1] - rs[0][0] == first
        assert all(lo <= hi for lo, hi in rs)
        assert [hi for _, hi in rs] == sorted((hi for _, hi in rs), reverse=True)


def test_ngtcp2_singleton_acked_ranges():
    """ngtcp2 writes single-packet ranges as [n]; they become [n, n]."""
    raw = (NGTCP2 / "client.sqlog").read_text(encoding="utf-8")
    assert '"acked_ranges":[[0]]' in raw
    r = read_qlog(NGTCP2 / "client.sqlog", "run")
    assert [{"low": 0, "high": 0}] in r.frames["ack_ranges"].drop_nulls().to_list()


def test_ack_eliciting_and_stream_crypto_fields():
    r = read_qlog(NGTCP2 / "client.sqlog", "run")
    per_packet = r.frames.group_by("event", "pn_space", "packet_number").agg(
        (~pl.col("frame_type").is_in(["ack", "padding", "connection_close"])).any().alias("expect"))
    joined = r.packets.join(per_packet, on=["event", "pn_space", "packet_number"], how="left")
    assert (joined["ack_eliciting"] == joined["expect"].fill_null(False)).all()
    crypto = r.frames.filter(pl.col("frame_type") == "crypto")
    assert crypto["offset"].null_count() == 0 and crypto["length"].null_count() == 0
    stream = r.frames.filter(pl.col("frame_type") == "stream")
    assert stream["stream_id"].null_count() == 0 and stream["fin"].null_count() == 0


def test_handshake_confirmed_client_receives_and_server_sends_handshake_done():
    for path, event in ((NGTCP2 / "client.sqlog", "received"), (NGTCP2 / "server.sqlog", "sent")):
        r = read_qlog(path, "run")
        hd = r.frames.filter((pl.col("frame_type") == "handshake_done") & (pl.col("event") == event))
        assert r.endpoints["handshake_confirmed_ms"][0] == hd["time_ms"].min()


# -- several connections in one file ----------------------------------------------------------------------------------


def test_multi_connection_json_document_splits_by_trace():
    """A JSON document with two traces (aioquic's in-memory QuicLogger after two connections): one endpoints row
    per connection; the first keeps the run id, the second is "<run_id>#<ODCID>"."""
    r = read_qlog(AIOQUIC / "client_two_connections.qlog", "run")
    doc = json.loads((AIOQUIC / "client_two_connections.qlog").read_text(encoding="utf-8"))
    odcids = [t["common_fields"]["ODCID"] for t in doc["traces"]]
    assert r.endpoints["run_id"].to_list() == ["run", f"run#{odcids[1]}"]
    assert r.endpoints["group_id"].to_list() == odcids
    for run_id in r.endpoints["run_id"]:
        p = r.packets.filter(pl.col("run_id") == run_id)
        first = p.filter((pl.col("event") == "sent") & (pl.col("packet_type") == "initial"))
        assert first["time_ms"][0] == 0.0
    counts = [sum(1 for e in t["events"] if e["name"].endswith(("packet_sent", "packet_received")))
              for t in doc["traces"]]
    assert r.packets.group_by("run_id").len().sort("run_id")["len"].to_list() == counts


def test_handmade_concatenation_of_two_json_seq_files_is_two_connections(tmp_path: Path):
    """Two JSON-SEQ files concatenated (two header records): two connections; repeated group ids stay distinct."""
    p = tmp_path / "both.sqlog"
    p.write_bytes((NGTCP2 / "client.sqlog").read_bytes() + (NGTCP2 / "client.sqlog").read_bytes())
    r = read_qlog(p, "run")
    gid = r.endpoints["group_id"][0]
    assert r.endpoints["run_id"].to_list() == ["run", f"run#{gid}"]
    single = read_qlog(NGTCP2 / "client.sqlog", "run")
    assert r.packets.height == 2 * single.packets.height
    assert r.packets.filter(pl.col("run_id") == f"run#{gid}").drop("run_id").equals(single.packets.drop("run_id"))


def test_handmade_log_without_vantage_takes_it_from_the_path(tmp_path: Path):
    """Without vantage_point.type, the QIR layout (.../server/qlog/x) decides, or the caller's vantage."""
    text = (NGTCP2 / "server.sqlog").read_text(encoding="utf-8").replace('"type":"server"', '"type":"unknown"', 1)
    p = tmp_path / "server" / "qlog" / "x.sqlog"
    p.parent.mkdir(parents=True)
    p.write_text(text, encoding="utf-8")
    assert read_qlog(p, "r").endpoints["vantage"][0] == "server"
    q = tmp_path / "x.sqlog"
    q.write_text(text, encoding="utf-8")
    assert read_qlog(q, "r", vantage="server").endpoints["vantage"][0] == "server"
    r = read_qlog(q, "r")
    assert r.packets["direction"].null_count() == r.packets.height
    msgs = r.ingest_issues["message"].to_list()
    assert any("vantage" in m for m in msgs)  # and, without a vantage, no client Initial can fix the origin:
    assert any("time_ms is relative to the first packet" in m for m in msgs)
