"""The cuts that keep long transfers small (quicack.testbed.reduce), on runs recorded with the testbed
(tests/data/ack_policy: the aioquic receiver with a set ACK policy downloading 1 MB): what the ACK-ratio analysis
reads must be the same after the cut."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl

from quicack.pcap.decode import decode_capture
from quicack.qlog import read_qlog
from quicack.testbed.reduce import cut_frames_not_from, keep_qlog_events

RUN = Path(__file__).parent / "data" / "ack_policy" / "raw" / "aioquic_aioquic" / "ack_ratio-iack-rtt40ms-1MB-h3-ar10-d25ms-NR" / "1"
REPO_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "raw"
RECEIVER_EVENTS = ["transport:packet_sent", "quicack:ack_sent", "quicack:ack_policy", "transport:parameters_set"]


def _decode(capture: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    batches = list(decode_capture(capture, RUN / "client" / "keys.log", run_id="run"))
    return pl.concat([b.datagrams for b in batches]), pl.concat([b.frames for b in batches])


def test_forward_cut_keeps_sizes_and_the_return_path_frames(tmp_path: Path) -> None:
    client = json.loads((RUN / "run.json").read_text())["testbed"]["addresses"]["client"]
    capture = tmp_path / "trace_node_left.pcap.gz"
    shutil.copy(RUN / "sim" / "trace_node_left.pcap.gz", capture)
    before_datagrams, before_frames = _decode(capture)
    cut = cut_frames_not_from(capture, client, 48)
    after_datagrams, after_frames = _decode(capture)
    forward = before_datagrams.filter(pl.col("direction") == "s2c")
    # Every server 1-RTT datagram of the 1 MB download (they were cut to 96 bytes already), no long-header one.
    assert forward.height - 5 < cut < forward.height and cut > 700
    assert capture.stat().st_size < (RUN / "sim" / "trace_node_left.pcap.gz").stat().st_size
    sizes = ["direction", "datagram_index", "udp_payload_bytes"]
    assert after_datagrams.select(sizes).equals(before_datagrams.select(sizes))
    return_frames = before_frames.filter(pl.col("direction") == "c2s").drop("connection_odcid")
    assert after_frames.filter(pl.col("direction") == "c2s").drop("connection_odcid").equals(return_frames)
    assert return_frames.filter(pl.col("frame_type") == "ack").height > 40


def test_cut_twice_changes_nothing(tmp_path: Path) -> None:
    client = json.loads((RUN / "run.json").read_text())["testbed"]["addresses"]["client"]
    capture = tmp_path / "trace_node_left.pcap.gz"
    shutil.copy(RUN / "sim" / "trace_node_left.pcap.gz", capture)
    cut_frames_not_from(capture, client, 48)
    once = capture.read_bytes()
    assert cut_frames_not_from(capture, client, 48) == 0 and capture.read_bytes() == once


def test_receiver_qlog_cut_keeps_every_ack_and_its_reason(tmp_path: Path) -> None:
    (original,) = (RUN / "client" / "qlog").iterdir()
    reduced = tmp_path / original.name
    shutil.copy(original, reduced)
    dropped = keep_qlog_events(reduced, RECEIVER_EVENTS)
    assert dropped > 1000 and reduced.stat().st_size < original.stat().st_size / 2
    full, cut = (read_qlog(p, run_id="run", vantage="client").frames for p in (original, reduced))
    columns = ["time_ms", "pn_space", "packet_number", "largest_acked", "ack_reason", "ack_eliciting_since_previous_ack"]
    sent_acks = [f.filter((pl.col("event") == "sent") & (pl.col("frame_type") == "ack")).select(columns) for f in (full, cut)]
    assert sent_acks[1].equals(sent_acks[0]) and sent_acks[0]["ack_reason"].null_count() < sent_acks[0].height


def test_sender_qlog_cut_drops_a_record_cut_off_by_a_stopped_writer_truncated_handmade(tmp_path: Path) -> None:
    """quiche's server qlog (JSON-SEQ) as the embedded data keeps it, with its last record cut in half by hand (a writer
    stopped by a signal leaves such a record): the reduction keeps the whole records it asks for and drops the cut one."""
    import gzip

    (original,) = (REPO_SAMPLE / "quiche_ngtcp2" / "ack_ratio-none-ackfreq22-satellite-1MB-h3-ccreno-unpaced-ar2-dimpl-D" / "1" / "server" / "qlog").iterdir()
    records = gzip.decompress(original.read_bytes()).split(b"\x1e")
    whole = [r for r in records if r.strip()]
    cut = tmp_path / "server.sqlog"
    cut.write_bytes(b"".join(b"\x1e" + r for r in whole) + b"\x1e" + whole[-1][: len(whole[-1]) // 2])
    dropped = keep_qlog_events(cut, ["quic:recovery_metrics_updated"])
    kept = [json.loads(r) for r in cut.read_bytes().split(b"\x1e") if r.strip()]
    windows = [e for e in kept if e.get("name") == "quic:recovery_metrics_updated" and "congestion_window" in e["data"]]
    # every record but the header and the cut one is a kept metrics update (the embedded log holds nothing else)
    assert dropped == len(whole) + 1 - len(kept) and len(windows) > 100
